"""Words for the settings a report header shows: one place for the terminal, HTML and Markdown.

`SubmissionResult.settings` holds the resolved configuration as keys and raw values
(`call_timeout_s: 10.0`, `hidden_cases: False`); a reader wants "call limit 10.0 s · hidden cases
off". Each key is declared once below with its label and how its value reads. The jinja
Environment registers these under stable names (grader.reports.filters.register):

    setting_label(key)               -> "call limit"                    (filter)
    setting_value(value, key)        -> "10.0 s"                        (filter: `v|setting_value(k)`)
    settings_items(settings, keys)   -> [("call limit", "10.0 s"), ...] (global)
    settings_line(settings, keys)    -> "call limit 10.0 s · memory 2048 MiB · hidden cases off" (filter)

`keys` chooses and orders what is shown (default: every key, in SETTINGS's order, then any key
this table does not know, its underscores read as spaces). The values are the grader's, never
a student's; templates still pass them through their format's escape filter.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping


def _seconds(v: Any) -> str:
    v = float(v)
    return f"{v:.1f} s" if round(v, 1) == v else f"{v:g} s"


def _on_off(v: Any) -> str:
    return "on" if v else "off"


# key of SubmissionResult.settings (grader.config.Config.summary) -> (label, how its value reads)
SETTINGS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "call_timeout_s": ("call limit", _seconds),
    "submission_timeout_s": ("submission limit", _seconds),
    "memory_mb": ("memory", lambda v: f"{v} MiB"),
    "output_kb": ("output kept", lambda v: f"{v} KiB"),
    "jobs": ("exercises at once", str),
    "hidden_cases": ("hidden cases", _on_off),
    "config": ("configuration", str),
}
# What the terminal header shows: what decides whether a slow or hidden case passes.
HEADER_KEYS = ("call_timeout_s", "memory_mb", "hidden_cases")


def setting_label(key: str) -> str:
    return SETTINGS[key][0] if key in SETTINGS else str(key).replace("_", " ")


def setting_value(value: Any, key: str) -> str:
    return SETTINGS[key][1](value) if key in SETTINGS else str(value)


def settings_items(settings: Mapping[str, Any], keys: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """(label, value) pairs of `settings`, for `keys` (those present) or for all of them."""
    if keys is None:
        keys = [k for k in SETTINGS if k in settings] + [k for k in settings if k not in SETTINGS]
    return [(setting_label(k), setting_value(settings[k], k)) for k in keys if k in settings]


def settings_line(settings: Mapping[str, Any], keys: Iterable[str] | None = None) -> str:
    return " · ".join(f"{label} {value}" for label, value in settings_items(settings, keys))
