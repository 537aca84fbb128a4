"""The contracts the CLI and runner share beyond single messages: closed sets, the minor
version's upgrades of older streams, and the case folder name."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile_protocol as p


def _stream(*lines: bytes) -> list[p.Event]:
    decoder = p.StreamDecoder()
    return decoder.feed(b"".join(lines)) + decoder.close()


@pytest.mark.parametrize("minor", [4, 6])
def test_an_older_stream_reads_and_its_input_file_lines_become_messages(minor: int) -> None:
    old_hello = p.Hello(
        protocol_version=1, protocol_minor=minor, runner_version="0.1", python_version="3"
    )
    old_line = (
        b'{"type": "log", "level": "info", "message": "input_file w /d/w.npz", "case_id": "k"}\n'
    )
    events = _stream(p.encode(old_hello), old_line, p.encode(p.Done(ok=True, elapsed_s=1.0)))
    hello, log, done = events
    assert isinstance(hello, p.Hello) and isinstance(log, p.Log) and isinstance(done, p.Done)
    upgraded = [p.upgrade(e, hello.protocol_minor) for e in (log, done)]
    assert upgraded == [p.InputFile(name="w", path="/d/w.npz", case_id="k"), done]


def test_upgrade_leaves_current_streams_and_other_logs_alone() -> None:
    log = p.Log(message="input_file w /d/w.npz")
    # A current runner's log line that happens to start the same way is only a log line.
    assert p.upgrade(log, p.PROTOCOL_MINOR) is log
    cached = p.Log(message='jax_cache {"event": "hit", "module": "jit_f", "key": "k"}')
    assert p.upgrade(cached, p.PROTOCOL_MINOR) is cached
    assert p.upgrade(p.Log(message="input_file lonely"), 4) == p.Log(message="input_file lonely")


# What runners of protocol 1.5 to 1.8 sent for `RunRequest.cache_explain` (and
# TILE_JAX_CACHE_EXPLAIN before it): JSON with sorted keys after `jax_cache `.
_OLD_MISS = {
    "type": "log", "level": "debug", "case_id": "k[n=1]", "pid": 7, "seq": 4, "token": "t",
    "message": "jax_cache " + json.dumps({"code": "key_changed", "differs": ["XLA flags"],
        "event": "miss", "key": "jit_f-1", "module": "jit_f", "reason": "flags"}, sort_keys=True),
}  # fmt: skip


@pytest.mark.parametrize("minor", [5, 8])
def test_an_older_runners_cache_log_lines_become_cache_events(minor: int) -> None:
    (log,) = _stream(json.dumps(_OLD_MISS).encode() + b"\n")
    assert isinstance(log, p.Log)
    assert p.upgrade(log, minor) == p.CacheEvent(
        event="miss", module="jit_f", key="jit_f-1", code="key_changed", reason="flags",
        differs=["XLA flags"], case_id="k[n=1]", pid=7, seq=4, token="t",
    )  # fmt: skip
    hit = p.Log(message='jax_cache {"event": "hit", "key": "jit_f-1", "module": "jit_f"}')
    assert p.upgrade(hit, minor) == p.CacheEvent(event="hit", module="jit_f", key="jit_f-1")
    stored = '{"event": "not_stored", "key": null, "module": "jit_g", "reason": "quick"}'
    assert p.upgrade(p.Log(message="jax_cache " + stored), minor) == p.CacheEvent(
        event="not_stored", module="jit_g", reason="quick"
    )


@pytest.mark.parametrize(
    "payload",
    [
        "{}",  # no event, no module
        "not json",
        '{"event": "evaporated", "module": "jit_f"}',  # outside the closed set
        '{"event": "hit", "module": "jit_f", "x": ' + "[" * 10_000 + "]" * 10_000 + "}",
    ],
)
def test_a_cache_log_line_that_does_not_parse_stays_a_log_line(payload: str) -> None:
    log = p.Log(message="jax_cache " + payload)
    assert p.upgrade(log, 8) is log


def test_a_path_with_spaces_survives_the_old_form() -> None:
    log = p.Log(message="input_file data /home/a b/c.bin")
    assert p.upgrade(log, 3) == p.InputFile(name="data", path="/home/a b/c.bin")


def test_values_outside_a_closed_set_fail_decoding() -> None:
    bench = json.loads(
        p.encode(p.Failure(phase="compile", error_type="E", message="m", case_id="k"))
    )
    bench["phase"] = "somewhere"
    with pytest.raises(p.DecodeError, match="phase"):
        p.decode(json.dumps(bench))
    calibration = {"type": "device_report", "backend": "gpu", "calibration": {
        "copy_gbps": 1.0, "copy_bytes": 1, "matmul_tflops": 1.0, "matmul_dtype": "bf16",
        "matmul_shape": [1], "timer": "stopwatch"}}  # fmt: skip
    with pytest.raises(p.DecodeError, match="timer"):
        p.decode(json.dumps(calibration))


def test_closed_sets_are_exported_as_tuples_of_their_literals() -> None:
    assert p.MEASURED_TIMERS == ("cupti", "wall", "batched")
    assert "tune" in p.COMMANDS and "list" in p.COMMANDS
    assert {"import", "compile", "run", "runner", "startup"} <= set(p.FAILURE_PHASES)


def test_case_dirname_is_safe_stable_and_unique() -> None:
    name = p.case_dirname("mylib/softmax[shape=4096x4096,dtype=bfloat16]")
    assert name == "mylib_softmax_shape=4096x4096_dtype=bfloat16-" + name[-8:]
    assert name == p.case_dirname("mylib/softmax[shape=4096x4096,dtype=bfloat16]")
    # Ids that differ only in dropped characters or in case still get distinct names.
    names = {p.case_dirname(i) for i in ("a/b[x=1]", "a_b[x=1]", "a/b(x=1)", "A/b[x=1]")}
    assert len(names) == 4
    for odd in ("../../etc/passwd", "/abs", "x" * 500, ".hidden", "sp ace[q=\"'*?]"):
        name = p.case_dirname(odd)
        assert "/" not in name and not name.startswith(".") and len(name) <= 90
        assert all(c.isalnum() or c in "._=-" for c in name)


_NAMES = st.text("abcdefghij_", min_size=1, max_size=8)
_VALUES = st.text("0123456789abcxyz._-", max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    case_id=st.sampled_from(["k", "lib/softmax[shape=4x8,dtype=bfloat16]", "k[s={a}]", "k{}"]),
    values=st.dictionaries(_NAMES, _VALUES, max_size=4),
)
def test_a_tune_unit_round_trips_through_its_id(case_id: str, values: dict[str, str]) -> None:
    unit = p.TuneUnit(case_id=case_id, values=values)
    back = p.TuneUnit.parse(unit.unit_id)
    assert back is not None and back == unit
    assert list(back.values) == list(values)  # in the declared order


def test_a_unit_id_is_the_case_id_and_its_values() -> None:
    unit = p.TuneUnit(case_id="k[n=1]", values={"block_rows": "4", "num_warps": "8"})
    assert unit.unit_id == "k[n=1]{block_rows=4,num_warps=8}"
    # A plain case id names no unit; neither does a brace group that is not `name=value`s.
    assert p.TuneUnit.parse("k[n=1]") is None
    assert p.TuneUnit.parse("k[n=1]{oops}") is None
