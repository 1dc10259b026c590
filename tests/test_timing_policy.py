"""Performance checks, deterministically: the measurement loop driven by a fake clock (an
injected timer), the statistics, the policy (ratio, limit, spread, skips, suspicious speed-ups)
and the guards, on measurements built by hand. No sandbox, no real timing."""
import dataclasses
import math
import time

import pytest
import torch

from grader.config import ConfigError, load_config
from grader.results import Status
from grader.timing import guards, policy, rounds, stats
from grader.timing.config import PerfConfig, parse_section, perf_config, with_overrides
from grader.timing.harness import LocalHarness
from grader.timing.records import Block, Measurement
from grader.timing.specs import REGISTRY, PerfSpec, Setting
from grader.timing.timers import CpuTimer, TimerUnavailable, UnknownTimer, get_timer

from conftest import ROOT


class FakeClock:
    """Time moves only when a fake function says it spent some."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


def doubler(clock: FakeClock, seconds, answer=lambda x: 2 * x):
    """A function that takes `seconds` (a number, or a list cycled through) on the fake clock."""
    durations = seconds if isinstance(seconds, list) else [seconds]
    calls = [0]

    def fn(x):
        clock.spend(durations[calls[0] % len(durations)])
        calls[0] += 1
        return answer(x)
    return fn


def inputs(i: int):
    return (torch.full((4,), float(i + 1)),), {}


def check(inputs_, output) -> str:
    (x,), _ = inputs_
    return "" if isinstance(output, torch.Tensor) and torch.equal(output, 2 * x) else "wrong"


SPEC = PerfSpec(exercise="demo.double", inputs=lambda g, s: inputs(0), reference_source="2 * x",
                cpu=Setting({"n": 4}, 2.0), cuda=Setting({"n": 4}, 3.0), points=2.0,
                hint="Use one tensor operation.")
CFG = PerfConfig(enabled=True, graded=True)


def measure(student, reference, clock, *, budget=1.0, baseline=None, harness=None):
    harness = harness or LocalHarness(student, reference, timer=CpuTimer(clock=clock), baseline=baseline)
    return rounds.run(harness, inputs, check, budget=budget, target_rse=0.02, clock=clock, seed=7)


# ----------------------------------------------------------------------------- the loop
def test_fake_clock_gives_the_exact_ratio_and_the_limit_decides():
    clock = FakeClock()
    m = measure(doubler(clock, 0.002), doubler(clock, 0.001), clock)
    assert m.stopped == "converged" and m.timed >= rounds.MIN_CALLS and m.checked == m.timed
    assert len(m.blocks_of("student")) >= 2                      # ABBA: at least two rounds
    ok = policy.judge(m, SPEC, SPEC.cpu, CFG)
    assert ok.status is Status.PASSED and ok.ratio == pytest.approx(2.0) and ok.spread == 0.0
    assert ok.points == ok.max_points == 2.0
    tight = policy.judge(m, SPEC, SPEC.cpu, with_thresholds(CFG, 1.5))
    assert tight.status is Status.FAILED and tight.points == 0.0
    assert "Slower than the limit of 1.5x" in tight.message and "Use one tensor operation." in tight.message


def with_thresholds(cfg: PerfConfig, limit: float) -> PerfConfig:
    return PerfConfig(**{**cfg.__dict__, "thresholds": {SPEC.exercise: limit}})


def test_report_only_by_default_awards_no_points():
    clock = FakeClock()
    m = measure(doubler(clock, 0.001), doubler(clock, 0.001), clock)
    r = policy.judge(m, SPEC, SPEC.cpu, PerfConfig(enabled=True))
    assert r.status is Status.PASSED and r.points == r.max_points == 0.0


def test_noisy_times_have_a_spread_and_the_budget_stops_the_rounds():
    clock = FakeClock()
    jitter = [0.0010, 0.0013, 0.0008, 0.0016, 0.0009, 0.0011, 0.0030]
    m = measure(doubler(clock, jitter), doubler(clock, 0.001), clock, budget=0.2)
    assert m.stopped == "budget"                                # 2% is out of reach with this jitter
    r = stats.ratio(m.times("student"), m.times("reference"))
    assert 0.005 < r.spread < 0.2 and r.value == pytest.approx(stats.median(m.times("student")) / 0.001)


def test_a_ratio_within_the_noise_of_the_limit_gets_the_benefit_of_the_doubt():
    def m(student):
        return Measurement("cpu", 1, "cpu", blocks=(Block("student", tuple(student), sum(student) + 1),
                                                    Block("reference", (1.0,) * len(student), len(student) + 1)))
    noisy = [2.1, 1.7, 2.6, 1.9, 2.5, 2.05, 1.6, 2.8]               # median 2.075, spread ~ 8%
    assert policy.judge(m(noisy), SPEC, SPEC.cpu, CFG).status is Status.PASSED
    assert "within the measurement's noise" in policy.judge(m(noisy), SPEC, SPEC.cpu, CFG).message
    steady = [2.075] * 8
    assert policy.judge(m(steady), SPEC, SPEC.cpu, CFG).status is Status.FAILED


def test_a_speed_up_beyond_ten_times_is_flagged_not_rewarded():
    clock = FakeClock()
    m = measure(doubler(clock, 0.00005), doubler(clock, 0.001), clock)
    r = policy.judge(m, SPEC, SPEC.cpu, CFG)
    assert r.status is Status.FAILED and r.message.startswith("suspicious: 20x faster")
    assert r.ratio is None and r.details["claimed_ratio"] == pytest.approx(0.05)   # off the leaderboard
    assert r.details["flag"] == "suspicious" and r.points == 0.0


def test_too_few_calls_is_no_figure():
    m = Measurement("cpu", 1, "cpu", blocks=(Block("student", (1.0, 1.0), 2.5), Block("reference", (1.0, 1.0), 2.5)))
    r = policy.judge(m, SPEC, SPEC.cpu, CFG)
    assert r.status is Status.ERROR and "too few timed calls (2)" in r.message


# ----------------------------------------------------------------------------- attacks, in-process
def test_replaying_the_last_answer_fails_on_the_parents_check():
    """Attack: remember the answer of the first call and return it again; fresh inputs expose it."""
    clock = FakeClock()
    memory = {}

    def replay(x):
        clock.spend(0.0001)
        return memory.setdefault("answer", 2 * x)
    m = measure(replay, doubler(clock, 0.001), clock)
    r = policy.judge(m, SPEC, SPEC.cpu, CFG)
    assert m.stopped == "wrong output" and r.status is Status.FAILED and "wrong output" in r.message
    assert r.ratio is None


def test_an_output_finished_after_the_call_is_caught_by_its_fingerprint():
    """Attack: return an empty tensor and fill it in later (here: when the outputs are fetched)."""
    clock = FakeClock()
    pending = []

    def lazy(x):
        out = torch.zeros_like(x)
        pending.append((out, x))
        return out

    class FillOnFetch(LocalHarness):
        def fetch(self, indices):
            for out, x in pending:
                out.copy_(2 * x)
            pending.clear()
            return super().fetch(indices)
    m = measure(None, None, clock, harness=FillOnFetch(lazy, doubler(clock, 0.001), timer=CpuTimer(clock=clock)))
    assert m.wrong and "changed after your function returned" in m.wrong[0]
    assert policy.judge(m, SPEC, SPEC.cpu, CFG).status is Status.FAILED


@pytest.mark.parametrize("attack,said", [
    ("modify", "modified its inputs in place"),
    ("subclass", "returned a Sneaky, not a plain torch.Tensor"),
    ("threads", "changed torch's thread count"),
    ("clock", "replaced time.perf_counter"),
])
def test_problems_seen_after_a_call_fail_the_check(attack, said):
    clock = FakeClock()
    original = time.perf_counter

    class Sneaky(torch.Tensor):
        pass

    def student(x):
        clock.spend(0.001)
        if attack == "modify":
            x.mul_(1.0)
            x[0] += 1
            return 2 * (x - torch.eye(1, 4)[0])
        if attack == "subclass":
            return (2 * x).as_subclass(Sneaky)
        if attack == "threads":
            torch.set_num_threads(torch.get_num_threads() + 1)
        if attack == "clock":
            time.perf_counter = lambda: 0.0
        return 2 * x
    threads = torch.get_num_threads()
    harness = LocalHarness(student, doubler(clock, 0.001), timer=CpuTimer(clock=clock), threads=threads)
    m = measure(None, None, clock, harness=harness)
    r = policy.judge(m, SPEC, SPEC.cpu, CFG)
    assert r.status is Status.FAILED and said in r.message, r.message
    assert time.perf_counter is original and torch.get_num_threads() == threads     # undone


# ----------------------------------------------------------------------------- guards
def block(side, times, wall, cpu=None, cpu_all=None, cpu_calls=(), host=()):
    return Block(side, tuple(times), wall, cpu, cpu_all, tuple(host), tuple(cpu_calls))


def honest(**kw):
    """Ten calls a side: the student 2 ms, the reference 1 ms; the clean child's overhead 0.1 ms a call."""
    blocks = (block("student", [0.002] * 10, 0.025, cpu=0.021, cpu_all=0.021),
              block("reference", [0.001] * 10, 0.013, cpu=0.011, cpu_all=0.011),
              block("baseline", [0.001] * 10, 0.013, cpu=0.011, cpu_all=0.011, cpu_calls=[0.001] * 10))
    return Measurement("cpu", 1, "cpu", blocks=kw.pop("blocks", blocks), loads=kw.pop("loads", ()), **kw)


def test_an_honest_measurement_passes_every_guard():
    assert guards.findings(honest()) == []
    assert policy.judge(honest(), SPEC, SPEC.cpu, CFG).status is Status.PASSED


@pytest.mark.parametrize("blocks,loads,guard", [
    # the student's figures say 2 ms a call, the kernel saw 60 ms of CPU: a patched timer
    ((block("student", [0.002] * 10, 0.08, cpu=0.061, cpu_all=0.061),
      block("baseline", [0.001] * 10, 0.013, cpu=0.011, cpu_all=0.011, cpu_calls=[0.001] * 10)), (),
     "work accounts for student"),
    # more reported time than the parent watched go by
    ((block("student", [0.002] * 10, 0.01),), (), "reported within wall"),
    # the same reference costs 3x the CPU next to the student's module
    ((block("reference", [0.003] * 10, 0.04, cpu=0.031, cpu_all=0.031),
      block("baseline", [0.001] * 10, 0.013, cpu=0.011, cpu_all=0.011, cpu_calls=[0.001] * 10)), (),
     "reference undisturbed"),
    # the same reference takes 5x as long next to the student's module, on the same CPU: kept waiting
    ((block("reference", [0.005] * 10, 0.053, cpu=0.011, cpu_all=0.011),
      block("baseline", [0.001] * 10, 0.013, cpu=0.011, cpu_all=0.011, cpu_calls=[0.001] * 10)), (),
     "reference not kept waiting"),
    # a second thread busy while the reference runs
    ((block("reference", [0.001] * 10, 0.013, cpu=0.011, cpu_all=0.09),), (), "no other threads"),
    # loading the same inputs costs 4x the CPU in the student's process, load after load
    ((), ((0.2, 0.2, 0.05), (0.21, 0.21, 0.05), (0.2, 0.2, 0.06)), "loads match"),
])
def test_each_guard_objects_to_its_attack(blocks, loads, guard):
    m = Measurement("cpu", 1, "cpu", blocks=blocks, loads=loads)
    assert guard in [name for name, _ in guards.findings(m)]


def test_work_between_the_requests_is_seen():
    """Between its requests the child has nothing to do: a helper that works then (the red team's forked
    one, a thread while the clean child is timed) shows as CPU there; an honest child's is ~0."""
    assert guards.findings(honest(between=0.002)) == []
    found = dict(guards.findings(honest(between=0.2)))
    assert "200 ms of CPU between the requests" in found["idle between requests"]
    assert guards.findings(dataclasses.replace(honest(between=0.2), threads=4)) == []   # as no_other_threads


class ScriptedLoads(LocalHarness):
    """LocalHarness that records each load's CPU figures as SandboxHarness does, from a script:
    `costs(n)` is (the student's child's, the clean child's) CPU seconds of the n-th load."""

    def __init__(self, costs, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.costs, self.loads = costs, []

    def load(self, input_sets) -> None:
        super().load(input_sets)
        mine, clean = self.costs(len(self.loads))
        self.loads.append((mine, mine, clean))


def measured_loads(costs):
    clock = FakeClock()
    harness = ScriptedLoads(costs, doubler(clock, 0.001), doubler(clock, 0.001), timer=CpuTimer(clock=clock))
    m = measure(None, None, clock, harness=harness)
    return m, [name for name, _ in guards.findings(m)]


def test_one_slow_load_is_outvoted_by_confirming_loads():
    """A short check has few loads, and one of them alone can cost 1.8x the clean child's CPU on a
    busy machine: more loads of fresh inputs are measured before the loads guard may flag."""
    m, found = measured_loads(lambda n: (0.005, 0.005) if n == 0 else (0.12, 0.06) if n <= 2 else (0.06, 0.06))
    assert len(m.loads) == 1 + m.rounds + rounds.CONFIRM_LOADS and found == []


def test_loads_that_stay_slow_are_still_flagged():
    m, found = measured_loads(lambda n: (0.18, 0.06))
    assert len(m.loads) == 1 + m.rounds + rounds.CONFIRM_LOADS and found == ["loads match"]


def test_no_confirming_loads_without_an_objection():
    m, found = measured_loads(lambda n: (0.06, 0.06))
    assert len(m.loads) == 1 + m.rounds and found == []


def test_cuda_events_cannot_outlast_the_hosts_window():
    m = Measurement("cuda", None, "cuda", blocks=(block("student", [0.002], 0.01, host=[0.001]),))
    assert [n for n, _ in guards.findings(m)] == ["events within host"]


def test_a_flagged_measurement_fails_and_stays_off_the_leaderboard():
    m = honest(blocks=(block("student", [0.0002] * 10, 0.08, cpu=0.061, cpu_all=0.061),
                       block("reference", [0.001] * 10, 0.013, cpu=0.011, cpu_all=0.011),
                       block("baseline", [0.001] * 10, 0.013, cpu=0.011, cpu_all=0.011, cpu_calls=[0.001] * 10)))
    r = policy.judge(m, SPEC, SPEC.cpu, CFG)
    assert r.status is Status.FAILED and r.message.startswith("timing not trusted, flagged for review")
    assert r.ratio is None and r.details["flag"] == "work accounts for student"


# ----------------------------------------------------------------------------- skip rules
@pytest.mark.parametrize("device,fallback,cuda,gpu_only,passed,expect", [
    ("auto", False, False, False, True, ("cpu", "")),
    ("auto", False, True, False, True, ("cuda", "")),
    ("cuda", False, False, False, True, (None, policy.NEEDS_CUDA)),
    ("cuda", True, False, False, True, ("cpu", "")),
    ("cpu", False, True, True, True, ("cuda", "")),
    ("auto", False, False, True, True, (None, policy.NEEDS_CUDA)),
    ("auto", True, False, True, True, ("cpu", "")),
    ("auto", False, False, False, False, (None, "not timed")),
])
def test_plan_never_silently_passes(device, fallback, cuda, gpu_only, passed, expect):
    spec = PerfSpec(**{**SPEC.__dict__, "gpu_only": gpu_only})
    got = policy.plan(spec, PerfConfig(enabled=True, device=device, cpu_fallback=fallback), cuda, passed)
    assert got[0] == expect[0] and got[1].startswith(expect[1])
    if got[0] is None:
        r = policy.skipped(spec, CFG, "cuda", got[1])
        assert r.status is Status.SKIPPED and r.points == 0 and r.message == got[1]


def test_a_spec_without_sizes_for_the_device_is_skipped_with_a_reason():
    spec = PerfSpec(exercise="demo.gpu", inputs=SPEC.inputs, reference_source="x", cuda=Setting({}, 2.0))
    assert policy.plan(spec, PerfConfig(device="cpu"), True, True) == (None, "skipped: this check has no cpu sizes")


# ----------------------------------------------------------------------------- pieces
def test_timer_registry():
    assert get_timer("cpu").name == "cpu"
    with pytest.raises(UnknownTimer, match="unknown timer 'tpu': choose from cpu, cuda"):
        get_timer("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(TimerUnavailable, match="needs CUDA"):
            get_timer("cuda")


def test_statistics():
    assert stats.median([3, 1, 2]) == 2 and stats.median([4, 1, 2, 3]) == 2.5
    assert stats.rse_of_median([1.0, 1.0]) == math.inf
    assert stats.rse_of_median([1.0] * 5) == 0.0
    assert stats.rse_of_median([1.0, 1.1, 0.9, 1.0, 1.05]) == pytest.approx(1.2533 * 1.4826 * 0.05 / math.sqrt(5))
    assert stats.fit_exponent([16, 32, 64], [1.0, 4.0, 16.0]) == pytest.approx(2.0)
    assert not stats.converged([1.0] * 20, [1.0] * 5, 0.02, 10)


@pytest.mark.parametrize("body,message", [
    ({"enabeld": True}, "unknown key 'enabeld' in [performance] (did you mean 'enabled'?)"),
    ({"device": "gpu"}, "'gpu' is not one of auto, cpu, cuda"),
    ({"budget_s": 0}, "budget_s (seconds of measurement per check, warm-up included): must be positive"),
    ({"budget_s": True}, "expected a number, got True"),
    ({"target_rse": 2}, "must be between 0 and 1"),
    ({"threads": 0}, "must be at least 1"),
    ({"suspicious_speedup": 1}, "must be above 1"),
    ({"thresholds": {"attention.multi_head_atention": 2}}, "did you mean 'attention.multi_head_attention'?"),
    ({"thresholds": {"attention.multi_head_attention": -1}}, "must be a positive number"),
    ({"budget_s": math.nan}, "budget_s (seconds of measurement per check, warm-up included): must be a finite number, "
                             "positive, got nan"),
    ({"budget_s": math.inf}, "must be a finite number, positive, got inf"),
    ({"suspicious_speedup": math.nan}, "must be a finite number, above 1, got nan"),
    ({"suspicious_speedup": math.inf}, "must be a finite number, above 1, got inf"),
    ({"thresholds": {"attention.multi_head_attention": math.inf}}, "must be a positive number"),
])
def test_config_errors_name_the_key_the_file_and_the_fix(body, message):
    with pytest.raises(ConfigError) as e:
        parse_section(body, "autograde.toml")
    assert message in str(e.value) and str(e.value).startswith("autograde.toml: ")


def test_performance_is_off_by_default_and_the_flag_turns_it_on():
    config = load_config(str(ROOT / "autograde.toml"), env={})
    perf = perf_config(config)
    assert perf.enabled is False
    assert perf_config(with_overrides(config, enabled=True, budget_s=None)).enabled is True
    assert perf_config(with_overrides(config, enabled=True)).budget_s == perf.budget_s


def test_the_course_configuration_carries_a_valid_performance_section():
    perf = perf_config(load_config(str(ROOT / "autograde.toml"), env={}))
    assert perf.source == str(ROOT / "autograde.toml")
    assert perf.enabled is False and perf.device == "auto" and perf.threads == 1


def test_every_registered_spec_has_a_reference_and_sizes():
    from grader.timing.references import REFERENCES
    for ex, spec in REGISTRY.items():
        assert ex in REFERENCES, ex
        assert spec.cpu is not None and spec.cuda is not None and spec.scale in spec.cpu.sizes, ex
        assert spec.cpu.calibration, f"{ex}: record where the CPU limit comes from"
