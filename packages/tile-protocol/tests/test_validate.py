"""The stream's rules: order, provenance and content, on hand-made and arbitrary sequences."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tile_protocol as p

TOKEN = "f00d"
PID = 4242
HELLO = p.Hello(protocol_version=1, protocol_minor=p.PROTOCOL_MINOR, runner_version="0.1",
                python_version="3.11")  # fmt: skip


def stats(samples: Sequence[float]) -> p.Stats:
    s = sorted(samples)
    mid = s[len(s) // 2]
    return p.Stats(n=len(s), min=s[0], max=s[-1], mean=sum(s) / len(s), median=mid, stdev=0.0,
                   mad=0.0, q1=mid, q3=mid, p5=s[0], p95=s[-1])  # fmt: skip


def bench(case_id: str, samples: Sequence[float] = (1e-3, 2e-3), **fields: object) -> p.BenchResult:
    result = p.BenchResult(case_id=case_id, kernel="k", timer="wall", samples=list(samples),
                           stats=stats(samples) if samples else stats([1.0]))  # fmt: skip
    return msgspec.structs.replace(result, **fields)


def plan(*case_ids: str, command: p.Command = "bench") -> p.Plan:
    return p.Plan(command=command, cases=[p.CaseInfo(case_id=c, kernel="k") for c in case_ids])


def stamp(messages: Sequence[p.Message], *, token: str | None = TOKEN) -> list[p.Message]:
    """Messages as the runner pid PID sends them: numbered from 1, with the token."""
    return [
        m
        if isinstance(m, p.RunRequest)
        else msgspec.structs.replace(m, pid=PID, seq=i, token=token)
        for i, m in enumerate(messages, start=1)
    ]


def feed(
    messages: Sequence[p.Message], requested: Sequence[str] | None = None
) -> tuple[p.StreamValidator, list[p.Violation | None]]:
    validator = p.StreamValidator(token=TOKEN, requested=requested)
    return validator, [validator.check(m) for m in messages]


def good(*case_ids: str) -> list[p.Message]:
    out: list[p.Message] = [HELLO, plan(*case_ids)]
    for i, case_id in enumerate(case_ids):
        out += [p.CaseStart(case_id=case_id, index=i, total=len(case_ids)), bench(case_id)]
    out.append(p.Done(ok=True, counts={"cases": len(case_ids)}, elapsed_s=1.0))
    return out


def reasons(verdicts: Sequence[p.Violation | None]) -> list[str]:
    return [v.describe() for v in verdicts if v is not None]


def test_a_well_formed_stream_is_believed_whole() -> None:
    validator, verdicts = feed(stamp(good("a", "b", "c")))
    assert verdicts == [None] * len(verdicts)
    assert validator.done is not None and validator.undone == []


def test_an_older_runners_stream_without_stamps_is_read() -> None:
    validator, verdicts = feed(good("a", "b"))  # protocol < 1.5: no pid, seq or token
    assert reasons(verdicts) == []
    assert validator.done is not None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"token": None}, "does not carry the token"),
        ({"token": "other"}, "does not carry the token"),
        ({"pid": PID + 1}, f"comes from pid {PID + 1}, the runner is pid {PID}"),
        ({"seq": 2}, "sequence number 2 does not follow 4"),
        ({"seq": None}, "sequence number None"),
    ],
)
def test_a_forged_done_is_dropped_and_the_stream_goes_on(
    change: dict[str, object], why: str
) -> None:
    stream = stamp(good("a", "b"))
    forged = msgspec.structs.replace(p.Done(ok=True, elapsed_s=0.1), pid=PID, seq=4, token=TOKEN)
    stream.insert(4, msgspec.structs.replace(forged, **change))  # after a's result
    for i, m in enumerate(stream[5:], start=5):  # the runner's own numbers go on growing
        stream[i] = msgspec.structs.replace(m, seq=i + 1)
    validator, verdicts = feed(stream)
    (violation,) = [v for v in verdicts if v is not None]
    assert violation.forged and why in violation.reason
    assert violation.describe().startswith("dropped a `done` message the runner did not send")
    assert validator.done is not None and validator.done.counts == {"cases": 2}


def test_a_hello_with_another_token_is_foreign() -> None:
    _, verdicts = feed([msgspec.structs.replace(HELLO, token="x", pid=1, seq=1)])
    assert verdicts[0] is not None and verdicts[0].forged


@pytest.mark.parametrize(
    ("stream", "why", "case_id"),
    [
        ([plan("a")], "before `hello`", None),
        ([HELLO, HELLO], "a second hello", None),
        ([HELLO, plan("a"), plan("a")], "a second plan", None),
        ([HELLO, plan("a", "a")], "planned twice", None),
        ([HELLO, bench("a")], "came before the plan", None),
        ([HELLO, plan("a"), bench("z")], "`z` is not in the plan", None),
        ([HELLO, plan("a"), bench("a"), bench("a")], "at most one per case", "a"),
        (
            [
                HELLO,
                plan("a"),
                bench("a"),
                p.Failure(case_id="a", phase="run", error_type="E", message="m"),
            ],
            "at most one",
            "a",
        ),
        ([HELLO, plan("a"), bench("a", [1e-3, -2.0])], "sample 1 is -2.0 s", "a"),
        ([HELLO, plan("a"), bench("a", [0.0])], "finite and positive", "a"),
        ([HELLO, plan("a"), bench("a", [math.inf])], "finite and positive", "a"),
        ([HELLO, plan("a"), bench("a", [])], "no sample", "a"),
        ([HELLO, plan("a"), bench("a", round_sizes=[1, 2])], "round_sizes [1, 2]", "a"),
        ([HELLO, plan("a"), bench("a", round_sizes=[2, 0])], "round_sizes [2, 0]", "a"),
        ([HELLO, plan("a"), bench("a", stats=stats([1.0]))], "n=1 but there are 2", "a"),
        (
            [HELLO, plan("a"), bench("a", reference=p.Reference(samples=[1e-3], interleaved=True))],
            "1 interleaved reference samples for 2",
            "a",
        ),
        (
            [HELLO, plan("a"), bench("a", reference=p.Reference(samples=[-1.0, 1.0]))],
            "reference sample 0 is -1.0",
            "a",
        ),
        (
            [HELLO, plan("a"), bench("a", accounting=p.Accounting(compile_s=1.0, total_s=3.0))],
            "add up to 1 s, not total_s 3",
            "a",
        ),
        ([HELLO, plan("a"), bench("a", kernel="other")], "kernel `other`", "a"),
        (
            [HELLO, plan("a"), bench("a", op=p.OpInfo(name="act", impl="jnp"))],
            "op OpInfo(name='act', impl='jnp', baseline=False), the plan says None",
            "a",
        ),
        ([HELLO, plan("a", "b"), p.CaseStart(case_id="a", index=1, total=2)], "index 1 is", "a"),
        ([HELLO, plan("a"), p.Done(ok=True, elapsed_s=1.0)], "1 planned case got no result", None),
        (
            [HELLO, plan("a"), bench("a"), p.Done(ok=True, counts={"cases": 5}, elapsed_s=1.0)],
            "counts 5 cases, the plan has 1",
            None,
        ),
        ([HELLO, p.Done(ok=True, elapsed_s=1.0), p.Log(message="x")], "after `done`", None),
        ([HELLO, p.RunRequest(command="bench")], "goes to the runner", None),
        ([HELLO, plan("a"), p.Progress(step="compile", case_id="z")], "`z` is not in", None),
    ],
)
def test_each_rule_names_what_broke_it(
    stream: list[p.Message], why: str, case_id: str | None
) -> None:
    _, verdicts = feed(stamp(stream))
    bad = [v for v in verdicts if v is not None]
    assert len(bad) == 1, reasons(verdicts)
    assert not bad[0].forged
    assert why in bad[0].reason
    assert bad[0].case_id == case_id
    assert bad[0].describe().startswith(f"runner sent an invalid {bad[0].kind}: ")


def test_progress_steps_of_planned_cases_are_believed() -> None:
    steps: list[p.Message] = [
        p.Progress(step="compile", case_id="a", done=0, total=2),
        p.Progress(step="compile", case_id="b", done=1, total=2),
    ]
    for step in p.STEPS:
        steps.append(p.Progress(step=step, case_id="a"))
    stream = good("a", "b")
    _, verdicts = feed(stamp([*stream[:2], *steps, *stream[2:]]))
    assert reasons(verdicts) == []


def test_a_restart_may_leave_cases_and_a_requested_unknown_case_may_fail() -> None:
    stream = [
        HELLO,
        plan("a", "b"),
        p.Failure(case_id="gone", phase="plan", error_type="UnknownCase", message="no case"),
        bench("a"),
        p.StateChange(case_id="a", changes=[p.StateDiff(kind="threads", name="t")], restart=True),
        p.Done(ok=True, counts={"cases": 2}, elapsed_s=1.0, restart="case a left a thread"),
    ]
    validator, verdicts = feed(stamp(stream), requested=["a", "b", "gone"])
    assert reasons(verdicts) == []
    assert validator.undone == ["b"]


def test_a_plan_only_run_and_inspect_views_need_no_result() -> None:
    listed = [HELLO, plan("a", "b", command="list"), p.Done(ok=True, elapsed_s=0.1)]
    assert reasons(feed(stamp(listed))[1]) == []
    views = [HELLO, plan("a", command="inspect"), p.Inspect(case_id="a", kind="hlo", text=""),
             p.Inspect(case_id="a", kind="hlo", text=""), p.Done(ok=True, elapsed_s=0.1)]  # fmt: skip
    assert reasons(feed(stamp(views))[1]) == [
        "runner sent an invalid inspect: a second `hlo` view of `a`"
    ]


# ---------------------------------------------------------------- arbitrary sequences

IDS = ["a", "b", "c", "zz"]
case_ids = st.sampled_from(IDS)
times = st.lists(
    st.one_of(st.floats(min_value=-1.0, max_value=1.0), st.sampled_from([0.0, 1e-6])),
    max_size=4,
)


def _bench_in_rounds(case_id: str, samples: list[float], rounds: list[int] | None) -> p.BenchResult:
    return bench(case_id, samples or [1.0], round_sizes=rounds)


messages = st.one_of(
    st.just(HELLO),
    st.lists(case_ids, max_size=4).map(lambda ids: plan(*ids)),
    st.builds(p.CaseStart, case_id=case_ids, index=st.integers(-1, 4), total=st.integers(0, 4)),
    st.builds(
        _bench_in_rounds,
        case_ids,
        times,
        st.none() | st.lists(st.integers(-1, 3), max_size=3),
    ),
    st.builds(
        p.TestResult, case_id=case_ids, kernel=st.just("k"), check=st.just(p.Check(passed=True))
    ),
    st.builds(
        p.Failure,
        case_id=st.none() | case_ids,
        phase=st.just("run"),
        error_type=st.just("E"),
        message=st.just("m"),
    ),
    st.builds(p.Log, message=st.just("x")),
    st.builds(
        p.Done, ok=st.booleans(), elapsed_s=st.floats(-1.0, 2.0), restart=st.none() | st.just("why")
    ),
)
provenance = st.tuples(
    st.sampled_from([PID, PID + 1, None]),
    st.integers(-1, 40) | st.none(),
    st.sampled_from([TOKEN, "evil", None]),
)
streams = st.lists(st.tuples(messages, provenance), max_size=30)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(streams)
def test_what_is_believed_of_any_sequence_follows_the_rules(
    stream: list[tuple[p.Message, tuple[int | None, int | None, str | None]]],
) -> None:
    validator = p.StreamValidator(token=TOKEN)
    believed: list[p.Message] = []
    spoiled: set[str] = set()  # cases the runner sent an invalid message about
    for message, (pid, seq, token) in stream:
        sent = msgspec.structs.replace(message, pid=pid, seq=seq, token=token)
        violation = validator.check(sent)
        if violation is None:
            believed.append(sent)
        elif violation.case_id is not None:
            assert not violation.forged
            spoiled.add(violation.case_id)
    if not believed:
        return
    first = believed[0]
    assert isinstance(first, p.Hello)
    assert sum(isinstance(m, p.Hello) for m in believed) == 1
    if first.token is not None:  # a stamped stream: only the runner's own lines, in order
        stamped = [m for m in believed if not isinstance(m, p.RunRequest)]
        assert len(stamped) == len(believed)  # a run_request is never believed
        assert all(m.token == TOKEN and m.pid == first.pid for m in stamped)
        seqs = [m.seq for m in stamped]
        assert all(a is not None and b is not None and a < b for a, b in itertools.pairwise(seqs))
    plans = [m for m in believed if isinstance(m, p.Plan)]
    assert len(plans) <= 1
    planned = {c.case_id for c in plans[0].cases} if plans else set[str]()
    outcomes = [
        m.case_id
        for m in believed
        if isinstance(m, (p.BenchResult, p.TestResult, p.Failure)) and m.case_id is not None
    ]
    assert len(outcomes) == len(set(outcomes)) and set(outcomes) <= planned
    for m in believed:
        if isinstance(m, p.BenchResult):
            assert p.result_problem(m) is None
            assert all(x > 0 and math.isfinite(x) for x in m.samples)
    dones = [i for i, m in enumerate(believed) if isinstance(m, p.Done)]
    assert dones in ([], [len(believed) - 1])
    if dones and validator.done is not None and validator.done.restart is None:
        assert planned <= set(outcomes) | spoiled  # a believed done leaves nothing undone


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(st.lists(st.text(alphabet="abcdef[]=,{}", min_size=1, max_size=8), unique=True, max_size=6))
def test_every_well_formed_stream_is_believed(ids: list[str]) -> None:
    validator, verdicts = feed(stamp(good(*ids)))
    assert reasons(verdicts) == []
    assert validator.done is not None


def test_a_result_before_the_plan_leaves_its_case_undone() -> None:
    # Found by the property test above: the early result spoiled the run but was counted as the
    # case's outcome, so a `done` with no believed result for `a` was believed.
    _, verdicts = feed(stamp([HELLO, bench("a"), plan("a"), p.Done(ok=True, counts={},
                                                                     elapsed_s=0.0)]))  # fmt: skip
    early, undone = reasons(verdicts)
    assert early.endswith("case `a` came before the plan")
    assert undone.endswith("1 planned case got no result (first `a`)")


def _tuned(*case_ids: str) -> list[p.Message]:
    """A tune's rung 0 of `case_ids`, each timed once, and the runner's word that it is done."""
    out: list[p.Message] = [HELLO, plan(*case_ids, command="tune")]
    for i, case_id in enumerate(case_ids):
        out += [p.CaseStart(case_id=case_id, index=i, total=len(case_ids)), bench(case_id)]
    return [*out, p.RungDone(rung=0)]


def test_a_later_rung_times_its_units_again_counting_places_in_the_rung() -> None:
    stream = [
        *_tuned("a", "b", "c"),
        p.Rung(rung=1, case_ids=["c", "a"]),
        p.CaseStart(case_id="c", index=0, total=2),
        bench("c"),
        p.CaseStart(case_id="a", index=1, total=2),
        bench("a"),
        p.RungDone(rung=1),
        p.Done(ok=True, counts={"cases": 3}, elapsed_s=1.0),
    ]
    validator, verdicts = feed(stamp(stream))
    assert reasons(verdicts) == []
    assert validator.done is not None


@pytest.mark.parametrize(
    ("later", "why"),
    [
        ([p.Rung(rung=1, case_ids=["z"])], "`z` is not in the plan"),
        ([p.Rung(rung=1, case_ids=["a", "a"])], "names a case twice"),
        # b got no result in rung 1 yet: a second result for a in the same rung is one too many.
        ([p.Rung(rung=1, case_ids=["a"]), bench("a"), bench("a")], "at most one per case"),
        (
            [p.Rung(rung=1, case_ids=["a", "b"]), p.CaseStart(case_id="b", index=0, total=2)],
            "index 0 is `a` in the rung",
        ),
    ],
)
def test_a_rung_that_breaks_the_rules_is_a_violation(later: list[p.Message], why: str) -> None:
    _, verdicts = feed(stamp(_tuned("a", "b") + later))
    assert any(why in r for r in reasons(verdicts)), reasons(verdicts)


def test_a_rung_reopens_only_units_with_an_outcome_and_only_in_a_tune() -> None:
    # b has no result of rung 0: it cannot be timed "again".
    stream = [HELLO, plan("a", "b", command="tune"), bench("a"), p.Rung(rung=1, case_ids=["b"])]
    _, verdicts = feed(stamp(stream))
    assert "no outcome from an earlier rung" in reasons(verdicts)[0]
    _, verdicts = feed(stamp([HELLO, plan("a"), bench("a"), p.RungDone(rung=0)]))
    assert "only after a tune's plan" in reasons(verdicts)[0]
