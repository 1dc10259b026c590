"""nn-grader: grade neural-network primitives against PyTorch, safely and with precise feedback."""

__version__ = "0.1.0"
