"""The contracts the CLI and runner share beyond single messages: closed sets, the minor
version's upgrades of older streams, and the case folder name."""

from __future__ import annotations

import json

import pytest

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
    assert p.upgrade(p.Log(message="jax_cache {}"), 4) == p.Log(message="jax_cache {}")
    assert p.upgrade(p.Log(message="input_file lonely"), 4) == p.Log(message="input_file lonely")


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
