"""Implementations of one op side by side (issue 40, item 3): real `tile bench` runs of tiny
kernels that declare `op=`, through a real runner, read back from real run directories.

Three implementations of op `norm`: `jnp` (marked the baseline, though registered second),
`fast`, and `wrong` (its output is off, so it gets ✗ and no speedup); `p/plain` is a kernel of
no op and keeps a table of its own.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import assert_schema_valid, tile_argv, tile_env

KERNELS = """\
import jax
import jax.numpy as jnp

import tile_runner as tile


def _inputs(case, key):
    return (tile.normal(key, case.shape, case.dtype),)


def reference(x):
    x = x.astype(jnp.float32)
    return (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)


def fast(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def wrong(x):
    return 1.5 * fast(x)


AXES = tile.axes(shape=[(16, 128), (32, 128)], dtype=["float32"])
OPTS = dict(inputs=_inputs, reference=reference, bench=AXES)
tile.kernel("p/norm_fast", op="norm", impl="fast", **OPTS)(fast)
tile.kernel("p/norm_jnp", op="norm", impl="jnp", baseline=True, **OPTS)(reference)
tile.kernel("p/norm_wrong", op="norm", impl="wrong", **OPTS)(wrong)
tile.kernel("p/plain", **OPTS)(fast)
"""
TOML = (
    '[project]\npaths = ["kernels"]\n[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n'
    "[history]\nenabled = false\n"
)
Done = subprocess.CompletedProcess[str]
POINTS = ("[shape=16x128,dtype=float32]", "[shape=32x128,dtype=float32]")


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("impls") / "proj"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "norms.py").write_text(KERNELS)
    (root / "tile.toml").write_text(TOML)
    return root


def _tile(root: Path, *args: str) -> Done:
    return subprocess.run(
        tile_argv(*args), cwd=root, env=tile_env(), capture_output=True, text=True, timeout=300
    )


def _run_dir(done: Done, root: Path) -> Path:
    line = next(x for x in done.stderr.splitlines() if x.startswith("run directory: "))
    return root / line.removeprefix("run directory: ").strip()


@pytest.fixture(scope="module")
def bench(proj: Path) -> tuple[Done, Path]:
    done = _tile(proj, "bench")
    return done, _run_dir(done, proj)


def _table(stdout: str, title: str) -> list[str]:
    """The lines of the table titled `title` (header and rows, no rule), as printed."""
    lines = stdout.splitlines()
    start = lines.index(title)
    rows: list[str] = []
    for line in lines[start + 1 :]:
        if not line.strip():
            if rows:
                break
            continue
        rows.append(line)
    return [r for r in rows if not set(r.strip()) <= {"─"}]


def test_bench_shows_one_table_per_op_with_speedup_against_the_baseline(
    bench: tuple[Done, Path],
) -> None:
    done, _ = bench
    assert done.returncode == 1, done.stderr  # the wrong implementation fails its check
    out = done.stdout
    assert out.count("op norm (baseline: jnp)") == 1, out
    assert "p/norm_fast" not in out.splitlines() and "p/norm_jnp" not in out.splitlines()
    head, *rows = _table(out, "op norm (baseline: jnp)")
    columns = head.split()
    assert columns[0] == "case" and "vs" in columns and columns[columns.index("vs") + 1] == "jnp"
    # By point, the baseline first, then the others in the order they registered.
    labels = [(r.split()[0], r.split()[1]) for r in rows]
    assert labels == [(impl, point) for point in POINTS for impl in ("jnp", "fast", "wrong")]
    for row in rows:
        cells = row.split()
        impl, ok = cells[0], cells[-1]
        versus = cells[-4]  # vs jnp, %peak, bound, ok close the row
        if impl == "jnp":
            assert (versus, ok) == ("1.00×", "✓"), row
        elif impl == "fast":
            assert versus.endswith("×") and versus != "-" and ok == "✓", row
        else:
            assert (versus, ok) == ("-", "✗"), row  # a wrong output has no speedup
    # A kernel of no op keeps its own table, without the op's column.
    plain = _table(out, "p/plain")
    assert "vs" not in plain[0].split() and len(plain) == 3


def test_the_run_directory_records_each_op_and_checks(bench: tuple[Done, Path]) -> None:
    _, run = bench
    report = json.loads((run / "report.json").read_text())
    ops = {c["case_id"]: c["op"] for c in report["cases"]}
    assert ops[f"p/norm_jnp{POINTS[0]}"] == {"name": "norm", "impl": "jnp", "baseline": True}
    assert ops[f"p/norm_fast{POINTS[1]}"] == {"name": "norm", "impl": "fast", "baseline": False}
    assert ops[f"p/plain{POINTS[0]}"] is None
    assert_schema_valid(run)
    summary = (run / "summary.md").read_text()
    section = summary.split("## Implementations", 1)[1].split("\n## ", 1)[0]
    assert "**norm** (3 implementations, baseline `jnp`)" in section
    assert "| vs jnp | ok |" in section
    impls = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]
    assert impls == ["| `jnp`", "| `fast`", "| `wrong`"] * 2


def test_the_html_report_shows_the_op_group(proj: Path, bench: tuple[Done, Path]) -> None:
    _, run = bench
    done = _tile(proj, "report", str(run), "-o", "impls.html")
    assert done.returncode == 0, done.stderr
    html = (proj / "impls.html").read_text()
    section = html.split('<section id="implementations">', 1)[1].split("</section>", 1)[0]
    assert '<h3 class="op">norm</h3>' in section and "<th>vs jnp</th>" in section
    assert section.count("<code>wrong</code>") == 2
    # The baseline's rows are 1.00x of themselves (another row may round to 1.00x too).
    baseline_rows = [row for row in section.split("<tr>")[1:] if "<code>jnp</code>" in row]
    assert len(baseline_rows) == 2 and all("1.00×" in row for row in baseline_rows)
    assert 'href="#implementations"' in html


def test_compare_keeps_the_implementations_apart_and_names_their_op(
    proj: Path, bench: tuple[Done, Path]
) -> None:
    _, first = bench
    again = _tile(proj, "bench", "--kernel", "p/norm_*")
    second = _run_dir(again, proj)
    done = _tile(proj, "compare", str(first), str(second), "-o", "cmp.json")
    assert done.returncode in (0, 1, 4), done.stderr
    for impl in ("jnp", "fast"):
        for point in POINTS:
            assert f"p/norm_{impl}{point} (op norm: {impl})" in done.stdout, done.stdout
    rows = json.loads((proj / "cmp.json").read_text())["rows"]
    ops = {r["case_id"]: (r["op"], r["impl"]) for r in rows}
    assert ops[f"p/norm_fast{POINTS[0]}"] == ("norm", "fast")
    assert ops[f"p/norm_jnp{POINTS[0]}"] == ("norm", "jnp")


def test_without_the_baseline_in_the_run_the_table_says_so(proj: Path) -> None:
    done = _tile(proj, "bench", "--kernel", "p/norm_fast")
    assert done.returncode == 0, done.stderr
    head, *rows = _table(done.stdout, "op norm (no baseline run)")
    assert "baseline" in head.split() and len(rows) == 2
    assert all(r.split()[-4] == "-" for r in rows)


def test_list_names_the_op_of_each_kernel(proj: Path) -> None:
    done = _tile(proj, "list")
    assert done.returncode == 0, done.stderr
    listing = done.stdout.split("\n\n")[0]  # the kernels' cases; the kernels' table follows
    heads = [line for line in listing.splitlines() if not line.startswith(" ")]
    assert heads == [
        "p/norm_fast  (op norm: fast)",
        "p/norm_jnp  (op norm: jnp, baseline)",
        "p/norm_wrong  (op norm: wrong)",
        "p/plain",
    ]
    listed = _tile(proj, "list", "--json", "--kernel", "p/norm_jnp")
    docs = [json.loads(line) for line in listed.stdout.splitlines()]
    docs = [d for d in docs if d.get("suite") == "bench"]  # test cases and kernels follow
    assert [d["op"] for d in docs] == [{"name": "norm", "impl": "jnp", "baseline": True}] * 2


def _as_another_cpu(run: Path, target: Path) -> Path:
    """The run as if measured on another CPU model: a copy with its own run id and the
    device's model changed, written by the real writer."""
    import tile_artifacts as ta

    report = ta.read_report(run / "report.json", metrics=False)
    device = report.device.model_copy(update={"model": "Other CPU 9000, 64 cores"})
    run_id = ta.new_run_id("bench")
    info = report.run.model_copy(update={"run_id": run_id})
    report = report.model_copy(update={"device": device, "run": info})
    writer = ta.ArtifactWriter(target, run_id=run_id, producer=report.producer, durable=False)
    writer.write_json("report.json", report)
    writer.finalize(status=report.run.status, context=report.context)
    return target


def test_history_lists_an_ops_implementations_together_and_keeps_cpu_models_apart(
    proj: Path, bench: tuple[Done, Path]
) -> None:
    _, run = bench
    model = json.loads((run / "report.json").read_text())["device"]["model"]
    assert model  # a CPU run names its model
    other = _as_another_cpu(run, proj / "other-cpu-run")
    added = _tile(proj, "history", "add", str(run), str(other), "--db", "h.sqlite")
    assert added.returncode == 0, added.stderr
    shown = _tile(proj, "history", "show", "--db", "h.sqlite")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "op norm: 2 implementations, baseline jnp" in out  # `wrong` failed: not measured
    head, *rows = _table(out, "op norm: 2 implementations, baseline jnp")
    assert head.split()[:2] == ["impl", "case"]
    impls = [r.split()[0] for r in rows]
    # By point, the baseline first; each on its two CPUs, never one series of both.
    assert impls == ["jnp", "jnp", "fast", "fast"] * 2, rows
    assert sum(f"cpu ({model})" in r for r in rows) == 4
    assert sum("cpu (Other CPU 9000, 64 cores)" in r for r in rows) == 4
    assert all(r.split(" wall ", 1)[1].split()[0] == "1" for r in rows)  # one run each
    plain = [line for line in out.splitlines() if line.strip().startswith("p/plain")]
    assert len(plain) == 4  # the kernel of no op keeps the first table
    page = _tile(proj, "report", str(run), "--history", "--db", "h.sqlite", "-o", "h.html")
    assert page.returncode == 0, page.stderr
    html = (proj / "h.html").read_text()
    section = html.split('<section id="history">', 1)[1].split("</section>", 1)[0]
    assert '<h3 class="op">op norm</h3>' in section
    assert "<code>jnp</code> (baseline): <code>p/norm_jnp" in section
    assert "Other CPU" not in section  # only this run's CPU model
