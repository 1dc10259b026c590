"""Performance specs, keyed by exercise id: what to time, how big, and how slow is too slow.

Adding one is a few lines: a function making one call's fresh inputs from a generator and a
size dict, a reference in grader.timing.references, and a `register(PerfSpec(...))` below.
A spec whose exercise is not in the catalog (its chapter is not written yet) stays inert.
REGISTRY is the one home of performance specs: exercise specs (grader.catalog) carry none.

Thresholds are calibrated (benchmarks/calibrate_perf.py) so the worked solutions pass with a
margin and the typical slow variants fail; `Setting.calibration` records the figures.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch


Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class Setting:
    """Sizes and the allowed time ratio (student / reference) on one device."""

    sizes: Mapping[str, int]
    threshold: float
    calibration: str = ""          # the figures the threshold comes from


@dataclass(frozen=True)
class PerfSpec:
    exercise: str                                                  # "attention.multi_head_attention"
    inputs: Callable[[torch.Generator, Mapping[str, int]], Inputs]  # one call's (args, kwargs)
    reference_source: str                                          # said in the report
    cpu: Setting | None = None
    cuda: Setting | None = None
    gpu_only: bool = False        # without CUDA: "skipped: needs CUDA" unless [performance] cpu_fallback
    points: float = 1.0
    hint: str = ""                # what usually makes this exercise slow, second person
    scale: str = ""               # the size `grader bench` varies
    bench: tuple[int, ...] = ()   # its default values

    def setting(self, device: str) -> Setting | None:
        return {"cpu": self.cpu, "cuda": self.cuda}.get(device)

    def sizes(self, device: str, **changes: int) -> dict[str, int]:
        setting = self.setting(device)
        return {**(setting.sizes if setting else {}), **changes}


REGISTRY: dict[str, PerfSpec] = {}


def register(spec: PerfSpec) -> PerfSpec:
    if spec.exercise in REGISTRY:
        raise ValueError(f"performance spec for {spec.exercise} registered twice")
    REGISTRY[spec.exercise] = spec
    return spec


def perf_specs(exercise_spec) -> tuple[PerfSpec, ...]:
    """The performance checks of one exercise: its entry in REGISTRY, if it has one."""
    return (REGISTRY[exercise_spec.id],) if exercise_spec.id in REGISTRY else ()


# ----------------------------------------------------------------------------- input makers
def randn(gen: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    """Seeded float32 normal draws (drawn directly in float32: rounds make many of them)."""
    x = torch.randn(*shape, generator=gen, dtype=torch.float32)
    return x.mul_(scale) if scale != 1.0 else x


def _causal(T: int) -> torch.Tensor:
    return torch.tril(torch.ones(T, T, dtype=torch.bool))


def _linear_params(gen, names, fan_in: int, fan_out: int, bias_names=()) -> dict[str, torch.Tensor]:
    p = {n: randn(gen, fan_in, fan_out, scale=1 / math.sqrt(fan_in)) for n in names}
    p.update({n: randn(gen, fan_out, scale=0.1) for n in bias_names})
    return p


def sdpa_inputs(gen, s) -> Inputs:
    shape = (s["B"], s["H"], s["T"], s["d"])
    return (randn(gen, *shape), randn(gen, *shape), randn(gen, *shape)), {"mask": _causal(s["T"])}


def mha_params(gen, d: int) -> dict[str, torch.Tensor]:
    return _linear_params(gen, [f"W_{n}" for n in "QKVO"], d, d, [f"b_{n}" for n in "QKVO"])


def mha_inputs(gen, s) -> Inputs:
    X = randn(gen, s["B"], s["T"], s["d"])
    return (X, X, mha_params(gen, s["d"]), s["h"]), {"mask": _causal(s["T"])}


def conv2d_inputs(gen, s) -> Inputs:
    k = s["k"]
    X = randn(gen, s["N"], s["C"], s["H"], s["H"])
    K = randn(gen, s["O"], s["C"], k, k, scale=1 / math.sqrt(s["C"] * k * k))
    return (X, K, randn(gen, s["O"], scale=0.1)), {"stride": 1, "padding": k // 2}


def lstm_inputs(gen, s) -> Inputs:
    d, h = s["d"], s["h"]
    p = _linear_params(gen, [f"W_x{g}" for g in "ifgo"], d, h)
    p.update(_linear_params(gen, [f"W_h{g}" for g in "ifgo"], h, h, [f"b_{g}" for g in "ifgo"]))
    return (randn(gen, s["B"], s["T"], d), randn(gen, s["B"], h), randn(gen, s["B"], h), p), {}


def gru_inputs(gen, s) -> Inputs:
    d, h = s["d"], s["h"]
    p = _linear_params(gen, ["W_xr", "W_xz", "W_xn"], d, h)
    p.update(_linear_params(gen, ["W_hr", "W_hz", "W_hn"], h, h, ["b_r", "b_z", "b_xn", "b_hn"]))
    return (randn(gen, s["B"], s["T"], d), randn(gen, s["B"], h), p), {}


def encoder_inputs(gen, s) -> Inputs:
    d, d_ff = s["d"], s["d_ff"]
    params = {"attn": mha_params(gen, d),
              "ln1_gamma": 1 + randn(gen, d, scale=0.1), "ln1_beta": randn(gen, d, scale=0.1),
              "ff": {"W1": randn(gen, d, d_ff, scale=1 / math.sqrt(d)), "b1": randn(gen, d_ff, scale=0.1),
                     "W2": randn(gen, d_ff, d, scale=1 / math.sqrt(d_ff)), "b2": randn(gen, d, scale=0.1)},
              "ln2_gamma": 1 + randn(gen, d, scale=0.1), "ln2_beta": randn(gen, d, scale=0.1)}
    return (randn(gen, s["B"], s["T"], d), params, s["h"]), {}


# ----------------------------------------------------------------------------- the specs
# CPU figures: ranges over runs of `python benchmarks/calibrate_perf.py --repeat 3 --budget 3`
# on a shared 2-core AMD EPYC (load average 2-7), torch 2.13 CPU, 1 thread a side. Each limit
# sits about midway (geometrically) between the solution and the slow variant. The CUDA settings
# are NOT calibrated (no GPU was available): run benchmarks/gpu_timing_quality.py and
# `grader bench --device cuda` on one, then the calibration script with device cuda.
_UNCALIBRATED_GPU = "not calibrated: no GPU was available when this was written"

register(PerfSpec(
    exercise="attention.scaled_dot_product_attention",
    inputs=sdpa_inputs,
    reference_source="torch.nn.functional.scaled_dot_product_attention",
    cpu=Setting({"B": 2, "H": 4, "T": 128, "d": 64}, 2.0,
                "solution 1.16-1.28x; a loop over batch and heads (8 iterations) 1.37-1.48x"),
    cuda=Setting({"B": 8, "H": 8, "T": 1024, "d": 64}, 6.0, _UNCALIBRATED_GPU),
    hint="PyTorch's kernel does not materialise the weights and yours must, so some cost is expected; "
         "beyond that, look for Python loops over the batch or the heads",
    scale="T", bench=(64, 128, 256, 512, 1024),
))

register(PerfSpec(
    exercise="attention.multi_head_attention",
    inputs=mha_inputs,
    reference_source="torch.nn.functional.multi_head_attention_forward (nn.MultiheadAttention's kernel)",
    cpu=Setting({"B": 4, "T": 16, "d": 128, "h": 32}, 1.4, "solution 0.76-0.79x; loop over heads 2.49-2.57x"),
    cuda=Setting({"B": 16, "T": 256, "d": 512, "h": 16}, 3.0, _UNCALIBRATED_GPU),
    hint="A Python loop over the heads is the usual cause: reshape to (B, h, T, d_head) and let one "
         "batched matmul do every head at once",
    scale="T", bench=(16, 32, 64, 128, 256),
))

register(PerfSpec(
    exercise="cnn.conv2d",
    inputs=conv2d_inputs,
    reference_source="torch.nn.functional.conv2d",
    cpu=Setting({"N": 512, "C": 2, "H": 5, "O": 4, "k": 3}, 30.0,
                "solution (im2col) 4.9-5.2x; loops over output positions 6.8-7.4x or kernel offsets 12.8-14.2x "
                "pass; loop over batch 60-89x"),
    cuda=Setting({"N": 64, "C": 64, "H": 56, "O": 64, "k": 3}, 10.0, _UNCALIBRATED_GPU),
    hint="A Python loop over the batch is the usual cause: unfold the input "
         "into columns (im2col) and do one matmul for the whole batch",
    scale="H", bench=(8, 16, 32, 64),
))

RECURRENT_HINT = ("The loop over time is expected; a loop over the batch is not: each step handles the whole "
                  "batch with one matmul per gate")

register(PerfSpec(
    exercise="lstm.lstm_forward",
    inputs=lstm_inputs,
    reference_source="torch.lstm (nn.LSTM's kernel) with your weights",
    cpu=Setting({"B": 16, "T": 32, "d": 32, "h": 64}, 20.0, "solution 5.7-6.8x; loop over batch 51-124x"),
    cuda=Setting({"B": 64, "T": 128, "d": 256, "h": 512}, 30.0, _UNCALIBRATED_GPU),
    hint=RECURRENT_HINT,
    scale="T", bench=(8, 16, 32, 64, 128),
))

register(PerfSpec(
    exercise="gru.gru_forward",
    inputs=gru_inputs,
    reference_source="torch.gru (nn.GRU's kernel) with your weights",
    cpu=Setting({"B": 16, "T": 32, "d": 32, "h": 64}, 6.0, "solution 1.77-1.87x; loop over batch 18-54x"),
    cuda=Setting({"B": 64, "T": 128, "d": 256, "h": 512}, 30.0, _UNCALIBRATED_GPU),
    hint=RECURRENT_HINT,
    scale="T", bench=(8, 16, 32, 64, 128),
))

register(PerfSpec(
    exercise="transformer.encoder_layer",
    inputs=encoder_inputs,
    reference_source="nn.TransformerEncoderLayer's computation in torch.nn.functional kernels",
    cpu=Setting({"B": 16, "T": 16, "d": 64, "h": 4, "d_ff": 128}, 2.75,
                "solution 1.50-1.59x; loop over batch 4.66-5.03x"),
    cuda=Setting({"B": 16, "T": 256, "d": 512, "h": 8, "d_ff": 2048}, 3.0, _UNCALIBRATED_GPU),
    hint="Look for Python loops over the batch, the heads or the positions",
    scale="T", bench=(16, 32, 64, 128, 256),
))
