"""Round trips for every message, and the stream decoder against torn and hostile input."""

from __future__ import annotations

import itertools
import json
from typing import get_args

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile_protocol as p

STATS = p.Stats(
    n=3, min=1.0, max=3.0, mean=2.0, median=2.0, stdev=1.0, mad=1.0,
    q1=1.5, q3=2.5, p5=1.1, p95=2.9, ci_low=1.0, ci_high=3.0, stop_reason="precision",
)  # fmt: skip
CHECK = p.Check(passed=False, max_abs_err=0.5, rel_l2_err=0.1, tol=1e-5, worst_index=[3, 4])

EXAMPLES: list[p.Message] = [
    p.RunRequest(
        command="bench",
        filters=["softmax"],
        axes={"dtype": ["float32"]},
        shard=p.Shard(index=1, count=2),
    ),
    p.Hello(
        protocol_version=1,
        runner_version="0.1.0",
        python_version="3.11.7",
        jax_version="0.10.2",
        backend="cpu",
        devices=[p.DeviceInfo(id=0, platform="cpu", device_kind="cpu")],
        timers=["wall", "batched"],
        pid=42,
    ),
    p.Plan(command="test", cases=[p.CaseInfo(case_id="k[n=1]", kernel="k", params={"n": "1"})]),
    p.CaseStart(case_id="k[n=1]", index=0, total=1),
    p.Progress(step="sample", case_id="k[n=1]"),
    p.Progress(step="compile", case_id="k[n=1]", done=3, total=12, seq=4),
    p.RungDone(rung=0, seq=5),
    p.Rung(rung=1, case_ids=["k[n=1]{b=2}", "k[n=1]{b=1}"]),
    p.BenchResult(
        case_id="k[n=1]",
        kernel="k",
        timer="wall",
        samples=[1.0, 2.0, 3.0],
        stats=STATS,
        phases=p.Phases(trace_s=0.1, lower_s=0.2, compile_s=0.3, cache_hit=False),
        work=p.Work(bytes=8.0, flops=None, source="declared"),
        reference=p.Reference(samples=[2.0], stats=STATS, speedup=1.0),
        check=CHECK,
    ),
    p.TestResult(case_id="k[n=1]", kernel="k", check=CHECK, seed=7),
    p.BuildResult(case_id="k[n=1]", kernel="k", ok=False, error="boom"),
    p.Artifact(path="outputs/k/hlo.txt", kind="hlo", sha256="0" * 64, size_bytes=10),
    p.InputFile(name="weights", path="/cache/weights.npz", case_id="k[n=1]"),
    p.Inspect(case_id="k[n=1]", kind="hlo", text="HloModule m"),
    p.Log(level="warning", message="cupti unavailable"),
    p.CacheEvent(
        event="miss",
        module="jit_k",
        key="jit_k-" + "0" * 64,
        code="key_changed",
        reason="`jit_k` is cached under 1 other key(s); the nearest differs in: XLA flags",
        differs=["XLA flags"],
        case_id="k[n=1]",
        seq=9,
    ),
    p.StateChange(
        case_id="k[n=1]",
        changes=[p.StateDiff(kind="cwd", before="/a", after="/b", restored=True)],
        pid=7,
        seq=3,
        token="t",
    ),
    p.Failure(case_id=None, phase="import", error_type="ImportError", message="no module x"),
    p.DeviceReport(
        backend="gpu",
        devices=[p.DeviceInfo(id=0, platform="gpu", device_kind="NVIDIA H200", l2_bytes=1)],
        builtin_peaks=p.Peaks(bandwidth_gbps=4800.0, tflops={"bfloat16": 989.4}, source="builtin"),
        calibration=p.Calibration(
            copy_gbps=4300.0,
            copy_bytes=1 << 30,
            matmul_tflops=790.0,
            matmul_dtype="bfloat16",
            matmul_shape=[8192, 8192, 8192],
            timer="cupti",
        ),
    ),
    p.Done(ok=True, counts={"cases": 1, "passed": 1}, elapsed_s=1.5),
]


def test_every_message_type_has_an_example() -> None:
    assert {type(m) for m in EXAMPLES} == set(get_args(p.Message))


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_round_trip(message: p.Message) -> None:
    line = p.encode(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert p.decode(line) == message
    assert json.loads(line)["type"] == type(message).__struct_config__.tag


def test_unknown_optional_fields_are_ignored() -> None:
    obj = json.loads(p.encode(EXAMPLES[3]))
    obj["added_in_1_5"] = {"x": 1}
    assert p.decode(json.dumps(obj)) == EXAMPLES[3]


def test_newer_major_version_is_refused_with_a_hint() -> None:
    hello = p.Hello(protocol_version=2, protocol_minor=3, runner_version="9", python_version="3")
    with pytest.raises(p.VersionError, match=r"protocol 2\.3") as info:
        p.check_version(hello)
    assert info.value.hint and "upgrade" in info.value.hint
    current = EXAMPLES[1]
    assert isinstance(current, p.Hello)
    p.check_version(current)  # the current version passes


def test_decode_rejects_garbage_with_protocol_error() -> None:
    with pytest.raises(p.DecodeError):
        p.decode(b"hello world")
    with pytest.raises(p.ProtocolError):
        p.decode(b'{"type": "case_start", "case_id": 3}')


def test_stream_reports_noise_and_unknown_types_and_goes_on() -> None:
    decoder = p.StreamDecoder()
    data = (
        b"stray print from a kernel\n"
        + p.encode(EXAMPLES[3])
        + b'{"type": "telemetry", "gpu_temp": 61}\n'
        + b'{"type": "case_start"}\n'
        + b"\n"
        + p.encode(EXAMPLES[-1])
    )
    events = decoder.feed(data) + decoder.close()
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["BadLine", "CaseStart", "UnknownMessage", "BadLine", "Done"]
    unknown = events[2]
    assert isinstance(unknown, p.UnknownMessage) and unknown.type == "telemetry"
    assert [e.line_no for e in events if not isinstance(e, msgspec.Struct)] == [1, 3, 4]


def test_stream_holds_partial_lines_until_complete() -> None:
    decoder = p.StreamDecoder()
    line = p.encode(EXAMPLES[4])
    assert decoder.feed(line[:17]) == []
    assert decoder.feed(line[17:-1]) == []
    assert decoder.feed(line[-1:]) == [EXAMPLES[4]]


def test_final_line_without_newline_is_decoded_on_close() -> None:
    decoder = p.StreamDecoder()
    assert decoder.feed(p.encode(EXAMPLES[-1])[:-1]) == []
    assert decoder.close() == [EXAMPLES[-1]]


def test_overlong_line_is_dropped_and_stream_recovers() -> None:
    decoder = p.StreamDecoder(max_line_bytes=100)
    events = decoder.feed(b"x" * 150)
    events += decoder.feed(b"y" * 150 + b"\n" + p.encode(EXAMPLES[3]))
    assert isinstance(events[0], p.BadLine) and "longer than 100" in events[0].error
    assert events[1:] == [EXAMPLES[3]]


def test_json_schema_covers_every_message() -> None:
    schema = p.json_schema()
    text = json.dumps(schema)
    for cls in get_args(p.Message):
        assert f'"{cls.__struct_config__.tag}"' in text


STREAM = b"".join(p.encode(m) for m in EXAMPLES)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=30))
def test_any_split_of_a_valid_stream_decodes_identically(cuts: list[int]) -> None:
    decoder = p.StreamDecoder()
    events: list[p.Event] = []
    bounds = [0, *sorted(cuts), len(STREAM)]
    for a, b in itertools.pairwise(bounds):
        events += decoder.feed(STREAM[a:b])
    events += decoder.close()
    assert events == EXAMPLES


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(min_value=0, max_value=400), max_size=10))
def test_arbitrary_bytes_never_raise(blob: bytes, cuts: list[int]) -> None:
    decoder = p.StreamDecoder(max_line_bytes=128)
    bounds = [0, *sorted(c for c in cuts if c <= len(blob)), len(blob)]
    events: list[p.Event] = []
    for a, b in itertools.pairwise(bounds):
        events += decoder.feed(blob[a:b])
    events += decoder.close()
    for event in events:
        assert isinstance(event, (p.BadLine, p.UnknownMessage, msgspec.Struct))


@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
def test_deeply_nested_line_is_a_bad_line_not_a_recursion_error(opener: bytes) -> None:
    closer = b"]" if opener == b"[" else b"}"
    deep = b'{"type":"log","message":"x","case_id":' + opener * 100_000 + b"1" + closer * 100_000
    decoder = p.StreamDecoder()
    events = decoder.feed(deep + b"}\n" + p.encode(p.Log(message="after")))
    assert isinstance(events[0], p.BadLine) and "nested deeper than 64" in events[0].error
    assert events[1] == p.Log(message="after")  # the stream goes on
    with pytest.raises(p.DecodeError, match="nested deeper"):
        p.decode(opener * 100_000)


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    message = p.Log(message="[" * 500 + "{" * 500)
    assert p.StreamDecoder().feed(p.encode(message)) == [message]
    nested = json.dumps({"type": "log", "message": "ok", "x": [[[[1]]]]}).encode() + b"\n"
    assert p.StreamDecoder().feed(nested) == [p.Log(message="ok")]


def test_newer_hello_of_another_shape_is_still_recognised_as_newer() -> None:
    line = json.dumps({"type": "hello", "protocol_version": 99, "who": {"runner": "x"}})
    (event,) = p.StreamDecoder().feed(line.encode() + b"\n")
    assert isinstance(event, p.Hello) and event.protocol_version == 99
    with pytest.raises(p.VersionError, match="protocol 99"):
        p.check_version(event)
    # an older or equal version of the wrong shape stays a bad line
    line = json.dumps({"type": "hello", "protocol_version": 1})
    assert isinstance(p.StreamDecoder().feed(line.encode() + b"\n")[0], p.BadLine)


@pytest.mark.parametrize(
    ("version", "said"), [("2.0", "protocol 2.0"), ("2", "protocol 2.0"), ("3.4", "protocol 3.4"),
                          (2.0, "protocol 2.0")],
)  # fmt: skip
def test_a_newer_version_written_as_a_string_or_float_is_recognised(
    version: object, said: str
) -> None:
    """Issue 39, item 11 (the sweep of 2026-12-05): `"protocol_version": "2.0"` was a bad
    `hello`, where docs/cli.md says a newer version in any shape is refused as newer."""
    line = json.dumps({"type": "hello", "protocol_version": version, "runner_version": "x"})
    (event,) = p.StreamDecoder().feed(line.encode() + b"\n")
    assert isinstance(event, p.Hello)
    with pytest.raises(p.VersionError, match=said):
        p.check_version(event)
    for same in ("1", "1.0", "x.1", "\u00b2"):  # this major, or not a version: a bad line
        line = json.dumps({"type": "hello", "protocol_version": same})
        assert isinstance(p.StreamDecoder().feed(line.encode() + b"\n")[0], p.BadLine)


def test_many_lines_in_one_chunk_decode_in_order() -> None:
    logs = [p.Log(message=f"line {i}") for i in range(5000)]
    blob = b"".join(p.encode(m) for m in logs)
    decoder = p.StreamDecoder()
    assert decoder.feed(blob[:7777]) + decoder.feed(blob[7777:]) + decoder.close() == logs
