"""Naming libtorch's kernels in the rules' `native` field."""


def at_native(*names: str) -> tuple[str, ...]:
    """Kernels of ATen's `at::native` namespace, by name."""
    return tuple(f"at::native::{n}" for n in names)
