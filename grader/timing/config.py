"""The [performance] section of autograde.toml: one typed object, validated with clear errors.

Named in grader.config.EXTRA_SECTIONS, which imports this module when the section is present.
Performance checks are OFF by default: correctness grading stays
fast, and timings on a shared machine are noise. Turn them on with `enabled = true` here or
`grader check --perf` for one run. Precedence: flag > autograde.toml > the defaults below.

    [performance]
    enabled = false       # time exercises with a performance spec, after they pass
    device = "auto"       # auto (cuda when available, else cpu), cpu or cuda
    cpu_fallback = false  # without CUDA, time GPU checks with their CPU sizes and limits
    budget_s = 3.0        # seconds of measurement per check, warm-up included
    target_rse = 0.02     # stop once both medians are known to 2% (relative standard error)
    threads = 1           # torch threads for both sides on CPU
    suspicious_speedup = 10.0
    graded = false        # award the specs' points; false: report only
    [performance.thresholds]
    "attention.multi_head_attention" = 2.0
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from grader.config import Config, ConfigError, range_problem

SECTION = "performance"

# key -> (type, default, description)
KEYS: dict[str, tuple[Any, Any, str]] = {
    "enabled": (bool, False, "time exercises that have a performance spec, after they pass their cases"),
    "device": (str, "auto", "where to time: auto (cuda when available, else cpu), cpu or cuda"),
    "cpu_fallback": (bool, False, "without CUDA, time GPU checks with their CPU sizes and limits instead of "
                                  "reporting 'skipped: needs CUDA'"),
    "budget_s": ((int, float), 3.0, "seconds of measurement per check, warm-up included"),
    "target_rse": ((int, float), 0.02, "stop once the relative standard error of both medians is below this"),
    "threads": (int, 1, "torch threads for both sides when timing on CPU (stated in the report)"),
    "suspicious_speedup": ((int, float), 10.0, "a speed-up beyond this many times the reference is flagged for "
                                              "review, not rewarded"),
    "graded": (bool, False, "award the specs' points (Gradescope adds them to its total); false: report only"),
    "thresholds": (dict, {}, "per-exercise limits on the time ratio, overriding the specs': "
                             "{\"attention.multi_head_attention\" = 2.0}"),
}
DEVICES = ("auto", "cpu", "cuda")
# key -> (test, limit in words), checked with grader.config.range_problem (finite first)
RANGES: dict[str, tuple[Any, str]] = {
    "budget_s": (lambda v: v > 0, "positive"),
    "target_rse": (lambda v: 0 < v < 1, "between 0 and 1 (0.02 is 2%)"),
    "threads": (lambda v: v >= 1, "at least 1"),
    "suspicious_speedup": (lambda v: v > 1, "above 1"),
}


@dataclass(frozen=True)
class PerfConfig:
    enabled: bool = False
    device: str = "auto"
    cpu_fallback: bool = False
    budget_s: float = 3.0
    target_rse: float = 0.02
    threads: int = 1
    suspicious_speedup: float = 10.0
    graded: bool = False
    thresholds: Mapping[str, float] = field(default_factory=dict)
    source: str = "defaults"

    def summary(self) -> dict[str, Any]:
        return {"device": self.device, "threads": self.threads, "budget_s": self.budget_s,
                "target_rse": self.target_rse, "graded": self.graded, "config": self.source}


def _type_name(typ) -> str:
    names = " or ".join(t.__name__ for t in (typ if isinstance(typ, tuple) else (typ,)))
    return {"int or float": "a number", "dict": "a table", "bool": "true or false"}.get(names, names)


def parse_section(body: Any, src: str) -> PerfConfig:
    """Validate [performance] from `src`; every error names the key, the file and the fix."""
    if not isinstance(body, dict):
        raise ConfigError(f"{src}: [{SECTION}] must be a table")
    values: dict[str, Any] = {}
    for key, value in body.items():
        if key not in KEYS:
            close = difflib.get_close_matches(key, list(KEYS), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{src}: unknown key '{key}' in [{SECTION}]{hint}; known keys: {', '.join(KEYS)}")
        typ, _, desc = KEYS[key]
        where = f"{src}: [{SECTION}] {key} ({desc})"
        if (isinstance(value, bool) and typ is not bool) or not isinstance(value, typ):
            raise ConfigError(f"{where}: expected {_type_name(typ)}, got {value!r}")
        values[key] = _check(key, value, where, src)
    return PerfConfig(**values, source=src)


def _check(key: str, value: Any, where: str, src: str) -> Any:
    if key == "device" and value not in DEVICES:
        close = difflib.get_close_matches(value, DEVICES, n=1)
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(DEVICES)}"
                          + (f" (did you mean '{close[0]}'?)" if close else ""))
    problem = range_problem(value, RANGES[key]) if key in RANGES else None
    if problem:
        raise ConfigError(f"{where}: {problem}, got {value!r}")
    if key == "thresholds":
        return _thresholds(value, src)
    return float(value) if key in ("budget_s", "target_rse", "suspicious_speedup") else value


def _thresholds(table: dict, src: str) -> dict[str, float]:
    from grader.timing.specs import REGISTRY
    out = {}
    for ex_id, limit in table.items():
        if ex_id not in REGISTRY:
            close = difflib.get_close_matches(ex_id, list(REGISTRY), n=1)
            raise ConfigError(f"{src}: [{SECTION}.thresholds] '{ex_id}' has no performance spec"
                              + (f" (did you mean '{close[0]}'?)" if close else "")
                              + f"; exercises with one: {', '.join(REGISTRY)}")
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or range_problem(limit, RANGES["budget_s"]):
            raise ConfigError(f"{src}: [{SECTION}.thresholds] '{ex_id}' must be a positive number "
                              f"(the allowed time ratio to the reference), got {limit!r}")
        out[ex_id] = float(limit)
    return out


def perf_config(config: Config) -> PerfConfig:
    """The resolved [performance] settings of a Config (defaults when the section is absent)."""
    return config.extra.get(SECTION) or PerfConfig()


def with_overrides(config: Config, **overrides: Any) -> Config:
    """A Config whose [performance] settings have these overrides (None values are ignored):
    how command-line flags take precedence over autograde.toml."""
    perf = replace(perf_config(config), **{k: v for k, v in overrides.items() if v is not None})
    return replace(config, extra={**config.extra, SECTION: perf})


