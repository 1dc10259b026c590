"""autograde.toml: typed, validated, with errors that name the key, the file and the fix."""
import pytest

from conftest import ROOT
from grader.catalog import catalog
from grader.config import ConfigError, load_config
from grader.pipeline.scoring import max_points


def write(tmp_path, text):
    p = tmp_path / "autograde.toml"
    p.write_text(text)
    return str(p)


def test_the_course_config_loads_and_every_exercise_has_points():
    cfg = load_config(str(ROOT / "autograde.toml"), env={}, known_exercises=set(catalog()))
    nothing = sorted(s.id for s in catalog().values() if not max_points(s, cfg) > 0)
    assert not nothing, f"exercises worth no points (set `points` in their spec): {nothing}"
    assert cfg.call_timeout == 10.0 and cfg.memory_mb == 2048


def test_unknown_key_names_key_file_and_suggestion(tmp_path):
    path = write(tmp_path, "[limits]\ncall_timout = 3\n")
    with pytest.raises(ConfigError) as e:
        load_config(path, env={})
    msg = str(e.value)
    assert path in msg and "call_timout" in msg and "did you mean 'call_timeout'" in msg


def test_unknown_section_and_exercise(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown section \[limit\].*did you mean 'limits'"):
        load_config(write(tmp_path, "[limit]\njobs = 1\n"), env={})
    with pytest.raises(ConfigError, match="did you mean 'attention.causal_mask'"):
        load_config(write(tmp_path, '[exercises."attention.causal_mas"]\npoints = 1\n'), env={},
                    known_exercises={"attention.causal_mask"})


@pytest.mark.parametrize("text,fragment", [
    ("[limits]\ncall_timeout = \"ten\"\n", "expected a number"),
    ("[limits]\ncall_timeout = -1\n", "must be positive"),
    ("[limits]\nmemory_mb = true\n", "expected a number"),
    ("[hidden]\nvisibility = \"secret\"\n", "is not one of"),
    ('[exercises."attention.causal_mask"]\npoints = -2\n', "must not be negative"),
    ("[limits\n", "not valid TOML"),
])
def test_bad_values(tmp_path, text, fragment):
    with pytest.raises(ConfigError, match=fragment):
        load_config(write(tmp_path, text), env={})


def test_secret_seed_from_the_environment_and_overrides(tmp_path):
    path = write(tmp_path, "[hidden]\nseed_env = \"MY_SEED\"\n[limits]\ncall_timeout = 4\n")
    cfg = load_config(path, env={"MY_SEED": "1234"}, overrides={"call_timeout": 2.0})
    assert cfg.secret_seed == 1234 and cfg.call_timeout == 2.0
    with pytest.raises(ConfigError, match="MY_SEED"):
        load_config(path, env={"MY_SEED": "abc"})


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_config(str(tmp_path / "nope.toml"), env={})
