"""`diagnostics/jax_cache.json`: written through the writer, read back, checked by schema-check."""

from __future__ import annotations

import json
from pathlib import Path

from tile_artifacts import (
    JAX_CACHE_JSON,
    ArtifactWriter,
    Producer,
    load_document,
    new_run_id,
    utc_now,
)
from tile_artifacts.cache import CacheEvent, CacheSnapshot, JaxCacheDoc
from tile_artifacts.check import check_path

PRODUCER = Producer(tool_name="tile", tool_version="0.1.0")


def _doc(writer: ArtifactWriter) -> JaxCacheDoc:
    empty = CacheSnapshot(taken_at=utc_now(), exists=False, entries=0, entry_bytes=0, total_bytes=0)
    full = CacheSnapshot(
        taken_at=utc_now(), exists=True, entries=1, entry_bytes=10, total_bytes=12,
        oldest=utc_now(), newest=utc_now(),
    )  # fmt: skip
    miss = CacheEvent(
        process="run", case_id="k[n=1]", event="miss", module="jit_k", key="jit_k-00",
        code="key_changed", reason="differs in: XLA flags", differs=["XLA flags"],
    )  # fmt: skip
    return JaxCacheDoc(
        producer=PRODUCER, run=writer.run_info("success"), cache_dir="/c", origin="default",
        cold_process=False, before=empty, after=full, miss_count=1, events=[miss],
    )  # fmt: skip


def test_jax_cache_document_round_trips_and_checks_clean(tmp_path: Path) -> None:
    writer = ArtifactWriter(tmp_path / "run", run_id=new_run_id("bench"), producer=PRODUCER)
    doc = _doc(writer)
    path = writer.write_json(JAX_CACHE_JSON, doc)
    assert load_document(path) == doc
    assert check_path(path) == []


def test_schema_check_rejects_a_bad_jax_cache_document(tmp_path: Path) -> None:
    writer = ArtifactWriter(tmp_path / "run", run_id=new_run_id("bench"), producer=PRODUCER)
    path = writer.write_json(JAX_CACHE_JSON, _doc(writer))
    data = json.loads(path.read_text())
    data["events"][0]["code"] = "bad_luck"
    del data["after"]["oldest"]
    path.write_text(json.dumps(data))
    messages = [p.message for p in check_path(path)]
    assert any("events[0].code" in m for m in messages), messages
    assert any("missing key(s) oldest" in m for m in messages), messages


def test_a_report_is_not_accepted_in_place_of_the_cache_document(tmp_path: Path) -> None:
    run = tmp_path / "run"
    writer = ArtifactWriter(run, run_id=new_run_id("bench"), producer=PRODUCER)
    writer.write_text(JAX_CACHE_JSON, json.dumps({**json.loads(_doc(writer).model_dump_json()),
                                                  "schema_name": "tile.report"}))  # fmt: skip
    problems = check_path(run)
    assert any(
        p.file == JAX_CACHE_JSON and "expected `tile.jax_cache`" in p.message for p in problems
    ), problems
