"""Calibration of the performance limits: the worked solutions and the typical slow variants,
timed side by side through the real pipeline (sandboxed child, fresh inputs, outputs checked).

    .venv/bin/python benchmarks/calibrate_perf.py [--repeat 3] [--budget 3] [EXERCISE ...]

For every performance spec whose chapter exists, prints the ratio (student / reference) of the
solution and of each slow variant, as the median over the repeats with the min-max range, next
to the spec's CPU limit. A good limit sits well above every solution and well below every slow
variant; record the figures in the spec's `Setting.calibration` (grader/timing/specs.py).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

from arguments import at_least, seconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Each variant is appended to a copy of the solution module: the later `def` replaces the worked
# solution, which stays reachable under its saved name.
VARIANTS: dict[str, dict[str, str]] = {
    "attention.scaled_dot_product_attention": {
        "loop over batch and heads": '''
_solution_sdpa = scaled_dot_product_attention


def scaled_dot_product_attention(Q, K, V, mask=None):
    if Q.dim() < 3:
        return _solution_sdpa(Q, K, V, mask)
    lead = Q.shape[:-2]
    q, k, v = Q.reshape(-1, *Q.shape[-2:]), K.reshape(-1, *K.shape[-2:]), V.reshape(-1, *V.shape[-2:])
    m = None if mask is None else mask.expand(*lead, Q.shape[-2], K.shape[-2]).reshape(-1, Q.shape[-2], K.shape[-2])
    outs = [_solution_sdpa(q[i], k[i], v[i], None if m is None else m[i]) for i in range(q.shape[0])]
    return (torch.stack([o for o, _ in outs]).reshape(*lead, *outs[0][0].shape),
            torch.stack([w for _, w in outs]).reshape(*lead, *outs[0][1].shape))
''',
    },
    "attention.multi_head_attention": {
        "loop over heads": '''
def multi_head_attention(X_q, X_kv, params, num_heads, mask=None):
    d_head = X_q.shape[-1] // num_heads
    Q = X_q @ params["W_Q"] + params["b_Q"]
    K = X_kv @ params["W_K"] + params["b_K"]
    V = X_kv @ params["W_V"] + params["b_V"]
    heads = []
    for i in range(num_heads):
        cols = slice(i * d_head, (i + 1) * d_head)
        heads.append(scaled_dot_product_attention(Q[..., cols], K[..., cols], V[..., cols], mask)[0])
    return torch.cat(heads, dim=-1) @ params["W_O"] + params["b_O"]
''',
    },
    "cnn.conv2d": {
        "loop over batch": '''
_solution_conv2d = conv2d


def conv2d(X, K, b=None, stride=1, padding=0):
    return torch.cat([_solution_conv2d(X[n:n + 1], K, b, stride, padding) for n in range(X.shape[0])])
''',
        "loop over output positions": '''
def conv2d(X, K, b=None, stride=1, padding=0):
    Xp = F.pad(X, (padding, padding, padding, padding))
    N, C, H, W = Xp.shape
    O, _, kh, kw = K.shape
    H_out, W_out = (H - kh) // stride + 1, (W - kw) // stride + 1
    Y = X.new_zeros(N, O, H_out, W_out)
    Kf = K.reshape(O, -1)
    for i in range(H_out):
        for j in range(W_out):
            patch = Xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw].reshape(N, -1)
            Y[:, :, i, j] = patch @ Kf.T
    return Y if b is None else Y + b.reshape(1, O, 1, 1)
''',
        "loop over kernel offsets": '''
def conv2d(X, K, b=None, stride=1, padding=0):
    Xp = F.pad(X, (padding, padding, padding, padding))
    N, C, H, W = Xp.shape
    O, _, kh, kw = K.shape
    H_out, W_out = (H - kh) // stride + 1, (W - kw) // stride + 1
    Y = X.new_zeros(N, O, H_out, W_out)
    for u in range(kh):
        for v in range(kw):
            patch = Xp[:, :, u:u + stride * H_out:stride, v:v + stride * W_out:stride]
            Y = Y + torch.einsum("nchw,oc->nohw", patch, K[:, :, u, v])
    return Y if b is None else Y + b.reshape(1, O, 1, 1)
''',
    },
    "lstm.lstm_forward": {
        "loop over batch": '''
_solution_lstm_forward = lstm_forward


def lstm_forward(X, h0, c0, params):
    outs = [_solution_lstm_forward(X[n:n + 1], h0[n:n + 1], c0[n:n + 1], params) for n in range(X.shape[0])]
    return (torch.cat([H for H, _ in outs]),
            (torch.cat([h for _, (h, _) in outs]), torch.cat([c for _, (_, c) in outs])))
''',
    },
    "gru.gru_forward": {
        "loop over batch": '''
_solution_gru_forward = gru_forward


def gru_forward(X, h0, params):
    outs = [_solution_gru_forward(X[n:n + 1], h0[n:n + 1], params) for n in range(X.shape[0])]
    return torch.cat([H for H, _ in outs]), torch.cat([h for _, h in outs])
''',
    },
    "transformer.encoder_layer": {
        "loop over batch": '''
_solution_encoder_layer = encoder_layer


def encoder_layer(X, params, num_heads, mask=None):
    def one(n):
        return mask[n:n + 1] if mask is not None and mask.dim() == 3 else mask
    return torch.cat([_solution_encoder_layer(X[n:n + 1], params, num_heads, one(n)) for n in range(X.shape[0])])
''',
    },
}


def submission(exercise: str, variant: str | None) -> str:
    """A temporary copy of solutions/ with `variant` appended to the exercise's module."""
    folder = tempfile.mkdtemp(prefix="calibrate-")
    for name in os.listdir(os.path.join(ROOT, "solutions")):
        if name.endswith(".py"):
            shutil.copy(os.path.join(ROOT, "solutions", name), folder)
    if variant:
        module = exercise.split(".")[0]
        with open(os.path.join(folder, f"{module}.py"), "a", encoding="utf-8") as f:
            f.write("\n\n# calibration variant\n" + VARIANTS[exercise][variant])
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exercises", nargs="*", help="exercise ids (default: every spec whose chapter exists)")
    parser.add_argument("--repeat", type=at_least(1), default=3, help="grading runs per variant (default 3)")
    parser.add_argument("--budget", type=seconds, default=3.0, help="seconds of measurement per check (default 3)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        print("skipped: needs CUDA (torch.cuda.is_available() is False on this machine)")
        return 0

    from grader.catalog import catalog
    from grader.config import load_config
    from grader.pipeline.engine import grade, limits_from
    from grader.sandbox.runner import Sandbox
    from grader.timing.config import with_overrides
    from grader.timing.specs import REGISTRY

    specs = catalog()
    unknown = [e for e in args.exercises if e not in specs or e not in REGISTRY]
    if unknown:
        parser.error(f"{', '.join(unknown)}: not an exercise with a performance check; those with one: "
                     f"{', '.join(e for e in REGISTRY if e in specs)}")
    chosen = [e for e in (args.exercises or REGISTRY) if e in specs]
    config = with_overrides(load_config(os.path.join(ROOT, "autograde.toml"), env={}), enabled=True,
                            device=args.device, budget_s=args.budget)
    where = torch.cuda.get_device_name() if args.device == "cuda" else f"{os.cpu_count()} CPUs, 1 thread a side"
    print(f"calibration on {where}, load average {os.getloadavg()[0]:.1f}, budget {args.budget:g} s a check, "
          f"{args.repeat} runs each")
    print(f"{'exercise':<40} {'variant':<28} {'ratio':>7} {'range':>13} {'limit':>6}  verdicts")
    start = time.monotonic()
    with Sandbox(limits_from(config)) as sandbox:
        for exercise in chosen:
            setting = REGISTRY[exercise].setting(args.device)
            if setting is None:
                continue
            limit = setting.threshold
            for variant in [None, *VARIANTS.get(exercise, {})]:
                folder = submission(exercise, variant)
                ratios, verdicts = [], []
                try:
                    for _ in range(args.repeat):
                        (e,) = grade(folder, [specs[exercise]], config, sandbox=sandbox).exercises
                        p = e.performance[0] if e.performance else None
                        verdicts.append(p.status.value if p else e.status.value)
                        if p is not None and p.ratio is not None:
                            ratios.append(p.ratio)
                        elif p is not None and p.details.get("claimed_ratio") is not None:
                            verdicts[-1] += f" ({p.details.get('flag')})"
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                ratio = f"{statistics.median(ratios):7.2f}" if ratios else f"{'—':>7}"
                spread = f"{min(ratios):5.2f}-{max(ratios):<6.2f}" if ratios else ""
                print(f"{exercise:<40} {variant or 'solution':<28} {ratio} {spread:>13} {limit:>6g}  "
                      f"{', '.join(verdicts)}", flush=True)
    print(f"({time.monotonic() - start:.0f} s; load average now {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
