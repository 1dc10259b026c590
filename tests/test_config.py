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


@pytest.mark.parametrize("text", ["[exercises.attention.causal_mask]\npoints = 2\n",
                                  "[exercises]\nattention.causal_mask.points = 2\n",
                                  '[exercises."attention.positional_encoding"]\npoints = 1\n'
                                  "[exercises.attention.causal_mask]\npoints = 2\n"])
def test_an_unquoted_exercise_id_is_told_to_be_quoted(tmp_path, text):
    """TOML reads [exercises.attention.causal_mask] as a table "causal_mask" inside a table "attention":
    the fix is quoting the id, not another exercise's name."""
    path = write(tmp_path, text)
    for known in ({"attention.causal_mask", "attention.positional_encoding"}, None):
        with pytest.raises(ConfigError) as e:
            load_config(path, env={}, known_exercises=known)
        assert str(e.value) == (f"{path}: [exercises.attention.causal_mask] is read by TOML as a table inside a "
                                'table; quote the exercise id: [exercises."attention.causal_mask"]')


@pytest.mark.parametrize("text,fragment", [
    ("[limits]\ncall_timeout = \"ten\"\n", "expected a number"),
    ("[limits]\ncall_timeout = -1\n", r"\[limits\] call_timeout = -1: must be more than 0 seconds"),
    ("[limits]\ncall_timeout = 0\n", "must be more than 0 seconds"),
    ("[limits]\ncall_timeout = inf\n", "must be a finite number, more than 0 seconds"),
    ("[limits]\ncall_timeout = nan\n", "must be a finite number"),
    ("[limits]\njobs = -1\n", r"\[limits\] jobs = -1: must be 0 or more"),
    ("[limits]\nmemory_mb = 0\n", "must be more than 0 MiB"),
    ("[limits]\nmemory_mb = true\n", "expected a number"),
    ("[hidden]\nvisibility = \"secret\"\n", "is not one of"),
    ('[exercises."attention.causal_mask"]\npoints = -2\n', "points = -2: must be 0 or more"),
    ('[exercises."attention.causal_mask"]\ncall_timeout = 0\n', "call_timeout = 0: must be more than 0 seconds"),
    ('[exercises."attention.causal_mask"]\natol = -1e-3\n', "atol = -0.001: must be 0 or more"),
    ('[exercises."attention.causal_mask"]\npoint = 1\n', "unknown key 'point'.*did you mean 'points'"),
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


@pytest.mark.parametrize("overrides,fragment", [
    ({"call_timeout": 0.0}, "--timeout 0: must be more than 0 seconds — wall-time limit for one call"),
    ({"call_timeout": -5.0}, "--timeout -5: must be more than 0 seconds"),
    ({"call_timeout": float("nan")}, "--timeout nan: must be a finite number"),
    ({"jobs": -1}, "--jobs -1: must be 0 or more — exercises graded at once"),
    ({"color": "blue"}, "unknown --color 'blue': choose from auto, always, never"),
    ({"formats": ("pdf",)}, "unknown --format 'pdf': choose from terminal, html, md, json, junit, classroom"),
    ({"secret_seed": "12"}, "--secret-seed-file: the secret seed must be an integer"),
])
def test_overrides_are_validated_as_the_keys_they_stand_for(overrides, fragment):
    flags = {"call_timeout": "--timeout", "jobs": "--jobs", "color": "--color", "formats": "--format",
             "secret_seed": "--secret-seed-file"}
    with pytest.raises(ConfigError) as e:
        load_config(None, env={}, overrides=overrides, flags=flags)
    assert fragment in str(e.value)


def test_overrides_without_a_flag_name_the_key_and_good_ones_apply():
    with pytest.raises(ConfigError, match=r"override of \[limits\] call_timeout = 0: must be more than 0"):
        load_config(None, env={}, overrides={"call_timeout": 0})
    with pytest.raises(ConfigError, match="not a setting an override can change"):
        load_config(None, env={}, overrides={"timeout": 3})
    cfg = load_config(None, env={}, overrides={"call_timeout": 2, "jobs": 0, "formats": ("junit",), "color": None})
    assert (cfg.call_timeout, cfg.jobs, cfg.formats, cfg.color) == (2.0, 0, ("junit",), "auto")


def test_jobs_0_grades_one_exercise_more_than_the_cores_and_a_number_that_many(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert load_config(None, env={}, overrides={"jobs": 0}).effective_jobs == 3
    assert load_config(None, env={}, overrides={"jobs": 2}).effective_jobs == 2
    monkeypatch.setattr("os.cpu_count", lambda: None)       # unknown: one core
    assert load_config(None, env={}).effective_jobs == 2


# ---------------------------------------------------------------- [deadline] (grader.deadlines.config)
DEADLINE = '[deadline]\ndue = 2026-03-02T12:00:00+01:00\nsource = "nbgrader"\n'


def test_a_deadline_table_loads_with_its_defaults_and_is_no_grading_setting(tmp_path):
    cfg = load_config(write(tmp_path, DEADLINE + "penalty_percent = 10\ngrace_minutes = 15\n"), env={})
    d = cfg.deadline
    assert d.due.isoformat() == "2026-03-02T12:00:00+01:00" and d.source.value == "nbgrader"
    assert (d.penalty_percent, d.grace_minutes, d.max_penalty_percent, d.cutoff_hours) == (10.0, 15.0, 100.0, None)
    assert d.missing_time.value == "no_penalty" and d.penalty_per.value == "day"
    assert "deadline" not in cfg.extra          # so a changed due date regrades nothing (batch settings hash)
    assert load_config(None, env={}).deadline is None


def test_a_local_due_date_takes_the_timezone_daylight_saving_included(tmp_path):
    text = '[deadline]\ndue = "2026-07-01T12:00"\ntimezone = "Europe/Berlin"\nsource = "git"\n'
    assert load_config(write(tmp_path, text), env={}).deadline.due.isoformat() == "2026-07-01T12:00:00+02:00"
    text = '[deadline]\ndue = 2026-01-05T09:30:00\ntimezone = "America/New_York"\nsource = "git"\n'
    assert load_config(write(tmp_path, text), env={}).deadline.due.isoformat() == "2026-01-05T09:30:00-05:00"


@pytest.mark.parametrize("text,fragment", [
    (DEADLINE + "grace = 5\n", r"unknown key 'grace' in \[deadline\] \(did you mean 'grace_minutes'\?\)"),
    ('[deadline]\ndue = "2026-03-02T12:00"\nsource = "git"\n',
     r"\[deadline\] due: 2026-03-02T12:00 has no UTC offset: write it with one .* or set \[deadline\] timezone"),
    ('[deadline]\ndue = "next friday"\nsource = "git"\n', "is not an ISO 8601 date and time: write it as"),
    ('[deadline]\ndue = 2026-03-02\nsource = "git"\n', "has no time of day: write 2026-03-02T23:59:00"),
    (DEADLINE + 'timezone = "Europe/Berln"\n', "unknown time zone 'Europe/Berln' \\(did you mean 'Europe/Berlin'"),
    (DEADLINE + 'timezone = ""\n', r"\[deadline\] timezone: '' is empty: write an IANA name such as Europe/Berlin"),
    (DEADLINE + "penalty_percent = 150\n", r"penalty_percent: 150 must be between 0 and 100"),
    (DEADLINE + 'penalty_percent = "10%"\n', "penalty_percent: expected a number, got '10%'"),
    (DEADLINE + "grace_minutes = -5\n", "grace_minutes: -5 must be 0 or more"),
    (DEADLINE + "grace_minutes = nan\n", "grace_minutes: nan must be a finite number, 0 or more"),
    (DEADLINE + "[performance]\nbudget_s = nan\n", r"\[performance\] budget_s .*: must be a finite number, positive"),
    (DEADLINE + "[performance]\nsuspicious_speedup = nan\n", "suspicious_speedup .*: must be a finite number, above 1"),
    (DEADLINE + 'penalty_per = "week"\n', "'week' is not one of hour, day"),
    ('[deadline]\ndue = 2026-03-02T12:00:00Z\nsource = "nbgrdr"\n', "is not one of .*did you mean 'nbgrader'"),
    ('[deadline]\ndue = 2026-03-02T12:00:00Z\n', r"\[deadline\] needs source \(source = \"nbgrader\"\)"),
    ('[deadline]\nsource = "git"\n', r"\[deadline\] needs due \(due = 2026-03-02T12:00:00\+01:00\)"),
    ('[deadline]\ndue = 2026-03-02T12:00:00Z\nsource = "csv"\n', 'source = "csv" needs times_csv'),
    (DEADLINE + 'times_csv = "t.csv"\n', 'is read only with source = "csv"'),
    (DEADLINE + "grace_minutes = 90\ncutoff_hours = 1\n", "cutoff_hours: 1 h ends within the 90-minute grace"),
    (DEADLINE + 'missing_time = "ignore"\n', "is not one of no_penalty, max_penalty, zero"),
    ("[deadlines]\n", r"unknown section \[deadlines\] \(did you mean 'deadline'\?\)"),
])
def test_bad_deadline_values_name_the_key_and_the_fix(tmp_path, text, fragment):
    with pytest.raises(ConfigError, match=fragment) as e:
        load_config(write(tmp_path, text), env={})
    assert str(tmp_path) in str(e.value)


def test_the_commented_deadline_example_in_autograde_toml_is_valid(tmp_path):
    text = (ROOT / "autograde.toml").read_text()
    example = text[text.index("#   [deadline]"):].splitlines()
    body = "\n".join(line[4:] for line in example if line.startswith("#   "))
    cfg = load_config(write(tmp_path, body), env={})
    assert cfg.deadline.source.value == "nbgrader" and cfg.deadline.max_penalty_percent == 50
    assert load_config(str(ROOT / "autograde.toml"), env={}).deadline is None      # off while commented out


def test_a_config_that_is_a_folder_not_utf8_or_has_a_bom(tmp_path):
    """A folder and Latin-1 text were tracebacks (exit 3); a UTF-8 BOM was 'Invalid statement'."""
    with pytest.raises(ConfigError, match="is a folder; name the autograde.toml file in it"):
        load_config(str(tmp_path), env={})
    p = tmp_path / "autograde.toml"
    p.write_bytes('[course]\nname = "Réseaux"\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match=r"autograde.toml, line 2: not UTF-8 text .*save the file as UTF-8"):
        load_config(str(p), env={})
    p.write_bytes('[course]\nname = "Réseaux"\n'.encode("utf-8-sig"))
    assert load_config(str(p), env={}).course_name == "Réseaux"
