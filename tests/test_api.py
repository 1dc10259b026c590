"""grader.api: the one call every front-end makes (grade a path, check a function, load the config)."""
from __future__ import annotations

import pytest

from conftest import ROOT, SOLUTIONS
from grader import api
from grader.errors import ConfigError, SelectionError, UsageError


def _course(folder, toml: str = ""):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "autograde.toml").write_text(toml)
    return folder


def test_grade_a_path_by_module_and_exercise_names(sandbox, config):
    result = api.grade(SOLUTIONS, ["cnn.conv2d", "attention"], config, sandbox=sandbox)
    ids = [e.id for e in result.exercises]
    assert "cnn.conv2d" in ids and "attention.causal_mask" in ids
    assert all(i == "cnn.conv2d" or i.startswith("attention.") for i in ids)
    assert result.all_passed, [(e.id, e.message) for e in result.exercises if not e.passed]


def test_grade_without_a_config_reads_the_nearest_autograde_toml(sandbox, tmp_path, monkeypatch):
    course = _course(tmp_path / "course", '[exercises."attention.causal_mask"]\npoints = 5\n')
    (course / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(course / "deep" / "er")
    result = api.grade(SOLUTIONS, ["attention.causal_mask"], sandbox=sandbox)
    (e,) = result.exercises
    assert e.passed and e.max_points == 5.0
    assert result.settings["config"] == "../../autograde.toml"
    assert [e.id for e in api.grade(SOLUTIONS, "attention.causal_mask", sandbox=sandbox).exercises] == \
        ["attention.causal_mask"]                                       # one name as a plain string


def test_an_unknown_name_is_a_usage_error_and_a_value_error():
    with pytest.raises(SelectionError, match="Did you mean 'attention'") as info:
        api.grade(SOLUTIONS, ["attenton"], api.load(str(ROOT / "autograde.toml"), env={}))
    assert isinstance(info.value, UsageError) and isinstance(info.value, ValueError)


def test_an_exercise_disabled_in_autograde_toml_and_asked_for_by_name_is_refused(tmp_path):
    """`grader check neurons.heaviside` with enabled = false said "Score: 0 / 0", exit 1, and no reason."""
    from grader.catalog import select
    course = _course(tmp_path / "course", '[exercises."neurons.heaviside"]\nenabled = false\n')
    config = api.load(str(course / "autograde.toml"))
    with pytest.raises(SelectionError, match=r'^neurons.heaviside is disabled in .*autograde.toml \(enabled = false in '
                                             r'\[exercises."neurons.heaviside"\]\): set enabled = true there'):
        api.grade(SOLUTIONS, "neurons.heaviside", config)       # refused before any sandbox starts
    api.refuse_disabled(["neurons"], select(["neurons"]), config)      # the module's other exercises are graded
    attention = select(["attention"])
    toml = "".join(f'[exercises."{s.id}"]\nenabled = false\n' for s in attention)
    config = api.load(str(_course(tmp_path / "none", toml) / "autograde.toml"))
    with pytest.raises(SelectionError, match="^every exercise of attention is disabled"):
        api.refuse_disabled(["attention"], attention, config)
    api.refuse_disabled([], attention, config)        # no name asked for: the enabled ones are graded


def test_a_broken_submission_is_a_result_not_an_exception(sandbox, config, tmp_path):
    bad = tmp_path / "broken.zip"
    bad.write_bytes(b"not a zip")
    result = api.grade(bad, ["attention.causal_mask"], config, sandbox=sandbox)
    assert result.errors and not result.all_passed and result.score == 0


def test_find_config_walks_up_and_stops_at_the_root(tmp_path, monkeypatch):
    course = _course(tmp_path / "course")
    (course / "sub").mkdir()
    monkeypatch.chdir(course)
    assert api.find_config() == "autograde.toml"
    monkeypatch.chdir(course / "sub")
    assert api.find_config() == "../autograde.toml"
    assert api.find_config(str(course / "sub")) == str(course / "autograde.toml")
    (tmp_path / "alone").mkdir()
    above = [p for p in tmp_path.parents if (p / "autograde.toml").is_file()]
    assert api.find_config(str(tmp_path / "alone")) == (str(above[0] / "autograde.toml") if above else None)


def test_load_validates_against_the_catalog_and_applies_overrides(tmp_path, monkeypatch):
    course = _course(tmp_path / "course", '[exercises."attention.casual_mask"]\npoints = 2\n')
    with pytest.raises(ConfigError, match="did you mean 'attention.causal_mask'"):
        api.load(str(course / "autograde.toml"))
    (course / "autograde.toml").write_text("[limits]\ncall_timeout = 3\n")
    monkeypatch.chdir(course)
    config = api.load(overrides={"call_timeout": None, "jobs": 2})
    assert (config.call_timeout, config.jobs, config.path) == (3.0, 2, "autograde.toml")


def test_load_reads_the_secret_seed_from_the_given_environment(tmp_path):
    course = _course(tmp_path / "course")
    config = api.load(str(course / "autograde.toml"), env={"GRADER_SECRET_SEED": "0x10"})
    assert config.secret_seed == 16


def test_sandbox_takes_the_configuration_limits_and_changes(config):
    default = api.sandbox(config)
    cuda = api.sandbox(config, memory_bytes=0)
    assert default.limits.memory_bytes == config.memory_mb << 20 and cuda.limits.memory_bytes == 0
    assert cuda.limits.output_bytes == default.limits.output_bytes == config.output_kb << 10


def _solution(name: str):
    namespace: dict = {}
    exec(compile((SOLUTIONS / "attention.py").read_text(), str(SOLUTIONS / "attention.py"), "exec"), namespace)
    return namespace[name]


def test_check_function_grades_a_function_object(config):
    before = config.exercise("attention.causal_mask")
    e = api.check_function("attention.causal_mask", _solution("causal_mask"), config, points=2)
    assert e.passed and e.points == e.max_points == 2.0
    assert config.exercise("attention.causal_mask") == before          # the caller's config is left as it was


def test_check_function_rejects_bad_calls(config):
    with pytest.raises(SelectionError, match="Did you mean 'attention.causal_mask'"):
        api.check_function("attention.casual_mask", lambda T: T, config)
    with pytest.raises(TypeError, match="needs your function itself"):
        api.check_function("attention.causal_mask", "causal_mask", config)
    with pytest.raises(TypeError, match="unknown override 'point'"):
        api.check_function("attention.causal_mask", _solution("causal_mask"), config, point=2)


def test_with_exercise_overrides_leaves_other_keys_and_exercises_alone(config):
    changed = api.with_exercise_overrides(config, "attention.causal_mask", atol=0.5, rtol=None)
    assert changed.exercise("attention.causal_mask").atol == 0.5
    assert changed.exercise("attention.causal_mask").points == config.exercise("attention.causal_mask").points
    assert {k: v for k, v in changed.exercises.items() if k != "attention.causal_mask"} == \
        {k: v for k, v in config.exercises.items() if k != "attention.causal_mask"}
    assert api.with_exercise_overrides(config, "attention.causal_mask") is config
