"""Driver of glorot_uniform: many seeded draws for the parent's statistical tests."""
from __future__ import annotations

import torch


def glorot_draws(module, name, fan_in, fan_out, generator):
    """`generator` is a list of seeds: one draw per seed (each from its own torch.Generator),
    the first seed again, and one draw with generator=None. Stacked to
    (len(seeds), fan_in, fan_out) when the shapes allow."""
    seeds = generator
    fn = getattr(module, name)
    draws = [fn(fan_in, fan_out, generator=torch.Generator().manual_seed(int(s))) for s in seeds]
    again = fn(fan_in, fan_out, generator=torch.Generator().manual_seed(int(seeds[0])))
    default = fn(fan_in, fan_out)
    if all(isinstance(d, torch.Tensor) and d.shape == draws[0].shape and d.dtype == draws[0].dtype for d in draws):
        draws = torch.stack(draws)
    return {"draws": draws, "again": again, "default": default}
