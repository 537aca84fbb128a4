"""What recording a run costs as its plan grows: N synthetic cases through the real recorder.

    uv run python benchmarks/checkpoint_scale.py [--cases 100 1000 3000] [--old-upto 1000]
    uv run python benchmarks/checkpoint_scale.py --cli 10000 [--cases]

With `--cli N` it runs the real `tile bench` of N cases with an instant runner (a script that
answers every case at once) and then the readers of that run directory, `tile schema-check`,
`compare` (the run against itself), `report` and `history add`, each as its own process, and
prints each one's wall time and peak RSS (`wait4`'s `ru_maxrss`: the process and the children
it waited for; the instant runner itself is a few MB). Issue 39's targets: the CLI under
300 MB; each reader under 300 MB and 20 s.

A `RunRecorder` (tile-harness, in this process, writing a real run directory with fsync) is
fed a hello, a plan of N cases, then each case's start and `bench_result` (20 samples, a
reference, a check), and is finalized, as `tile bench` feeds it from a runner. The figures
are the process CPU time and the wall time from the recorder's creation to its final
manifest, for the case log with rare compactions (`_checkpoint.py`, the rule now) and for
the old rule (the whole report rewritten after every case, `Checkpoints.every_case`), and
their ratio; `report rewrites` counts the compactions. The old rule's time grows with the
square of N (issue 39: 1000 cases took 145 s of CLI time), so it is run only up to
`--old-upto` cases. Each run directory must pass `tile schema-check` and read back with
every case.

This is not a timed test: speed depends on the machine, so the figures are printed for
people to read (exit 1 only when a run directory does not validate).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness import QuietDisplay, RunRecorder, open_run, resolve_config


def _stats(samples: list[float]) -> tp.Stats:
    ordered = sorted(samples)
    n = len(ordered)
    median = (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return tp.Stats(n=n, min=ordered[0], max=ordered[-1], mean=sum(ordered) / n,
                    median=median, stdev=1e-6, mad=1e-6, q1=ordered[n // 4],
                    q3=ordered[3 * n // 4], p5=ordered[0], p95=ordered[-1])  # fmt: skip


def _result(info: tp.CaseInfo, i: int) -> tp.BenchResult:
    samples = [1e-3 + (i % 7) * 1e-5 + k * 1e-7 for k in range(20)]
    reference = [2 * s for s in samples]
    return tp.BenchResult(
        case_id=info.case_id,
        kernel=info.kernel,
        params=dict(info.params),
        timer="wall",
        samples=samples,
        stats=_stats(samples),
        reference=tp.Reference(samples=reference, stats=_stats(reference), speedup=2.0),
        check=tp.Check(passed=True, max_abs_err=1e-7, rel_l2_err=1e-8, tol=1e-5),
    )


def record(project: Path, out: Path, n: int, *, every_case: bool) -> tuple[float, float, int]:
    """Feed n cases through a recorder into `out`; (CPU s, wall s, report rewrites)."""
    resolved = resolve_config(None, {}, cwd=project)
    setup = open_run("bench", resolved, out, ["tile", "bench"])
    cases = [
        tp.CaseInfo(case_id=f"scale/k[n={i}]", kernel="scale/k", params={"n": str(i)})
        for i in range(n)
    ]
    device = tp.DeviceInfo(id=0, platform="cpu", device_kind="cpu")
    cpu, wall = time.process_time(), time.perf_counter()
    recorder = RunRecorder(setup, ui=QuietDisplay())
    recorder.checkpoints.every_case = every_case
    recorder.on_hello(tp.Hello(protocol_version=1, runner_version="synthetic",
                               python_version="3", backend="cpu", devices=[device]))  # fmt: skip
    recorder.on_plan(tp.Plan(command="bench", cases=cases))
    for i, info in enumerate(cases):
        recorder.on_case_start(tp.CaseStart(case_id=info.case_id, index=i, total=n))
        recorder.on_message(_result(info, i))
    recorder.finalize()
    return time.process_time() - cpu, time.perf_counter() - wall, recorder.checkpoints.compactions


_INSTANT_RUNNER = """#!{python}
import json, os, sys
request = json.loads(sys.stdin.buffer.read() or b"{{}}")
n = {n}
out = sys.stdout
def send(obj):
    out.write(json.dumps(obj) + "\\n")
def stats(xs):
    xs = sorted(xs)
    k = len(xs)
    return {{"n": k, "min": xs[0], "max": xs[-1], "mean": sum(xs) / k, "median": xs[k // 2],
            "stdev": 1e-6, "mad": 1e-6, "q1": xs[k // 4], "q3": xs[3 * k // 4], "p5": xs[0],
            "p95": xs[-1]}}
send({{"type": "hello", "protocol_version": 1, "protocol_minor": 4, "runner_version": "instant",
      "python_version": "3", "backend": "cpu", "timers": ["wall"], "pid": os.getpid(),
      "devices": [{{"id": 0, "platform": "cpu", "device_kind": "cpu"}}]}})
ids = request.get("case_ids") or [f"scale/k[n={{i}}]" for i in range(n)]
send({{"type": "plan", "command": "bench", "cases": [
    {{"case_id": c, "kernel": "scale/k", "params": {{"n": c[8:-1]}}}} for c in ids]}})
for i, c in enumerate(ids):
    send({{"type": "case_start", "case_id": c, "index": i, "total": len(ids)}})
    xs = [1e-3 + (i % 7) * 1e-5 + k * 1e-7 for k in range(20)]
    ref = [2 * x for x in xs]
    send({{"type": "bench_result", "case_id": c, "kernel": "scale/k", "params": {{"n": c[8:-1]}},
          "timer": "wall", "samples": xs, "stats": stats(xs),
          "reference": {{"samples": ref, "stats": stats(ref), "speedup": 2.0}},
          "check": {{"passed": True, "max_abs_err": 1e-7, "rel_l2_err": 1e-8, "tol": 1e-5}}}})
    out.flush()
send({{"type": "done", "ok": True, "elapsed_s": 0.1}})
out.flush()
"""


def _measured(argv: list[str], cwd: Path) -> tuple[int, float, float, int]:
    """Run argv to its end; (exit code, wall s, CPU s, peak RSS in MB), the CPU time and RSS
    of it and the children it waited for."""
    wall = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    err = process.stderr.read()  # drained before wait4: a full pipe would block the child
    process.stderr.close()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        print(err.decode(errors="replace")[-2000:], file=sys.stderr)
    cpu = usage.ru_utime + usage.ru_stime
    return process.returncode, time.perf_counter() - wall, cpu, usage.ru_maxrss // 1024


def cli_scale(root: Path, n: int) -> bool:
    """`tile bench` of n instant cases, then each reader of its run directory, measured."""
    tile = str(Path(sys.executable).parent / "tile")
    project = root / f"cli-{n}"
    project.mkdir()
    runner = project / "instant_runner"
    runner.write_text(textwrap.dedent(_INSTANT_RUNNER.format(python=sys.executable, n=n)))
    runner.chmod(0o755)
    (project / "tile.toml").write_text(
        f'[runner]\npython = "{runner}"\n[history]\nenabled = false\n[telemetry]\nclocks = false\n'
    )
    run = project / "run"
    steps = [
        ("bench", [tile, "bench", "-o", str(run)]),
        ("schema-check", [tile, "schema-check", str(run)]),
        ("compare", [tile, "compare", str(run), str(run)]),
        ("report", [tile, "report", str(run), "-o", str(project / "report.html")]),
        ("history add", [tile, "history", "add", str(run), "--db", str(project / "h.db")]),
    ]
    ok = True
    print(
        f"{'command':<14} {'cases':>6} {'exit':>4} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}"
    )
    for name, argv in steps:
        code, wall, cpu, rss = _measured(argv, project)
        ok = ok and code == 0
        print(f"{name:<14} {n:>6} {code:>4} {wall:8.2f} {cpu:8.2f} {rss:>12}", flush=True)
    sizes = {p.name: p.stat().st_size for p in [*run.iterdir(), project / "report.html"]
             if p.is_file()}  # fmt: skip
    print("sizes (MB): " + ", ".join(f"{k} {v / 1e6:.1f}" for k, v in sorted(sizes.items())))
    return ok


def _valid(out: Path, n: int) -> bool:
    problems = ta.check.check_path(out)
    for problem in problems[:5]:
        print(f"  {problem}", file=sys.stderr)
    report = ta.read_report(out / ta.REPORT_JSON)
    return not problems and sum(c.status == "success" for c in report.cases) == n


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, nargs="*", default=[100, 1000, 3000])
    parser.add_argument("--old-upto", type=int, default=1000,
                        help="run the old rule (a rewrite per case) up to this many cases")  # fmt: skip
    parser.add_argument("--cli", type=int, nargs="*", default=[],
                        help="also run `tile bench` of this many instant cases, then its readers")  # fmt: skip
    args = parser.parse_args()
    ok = True
    if args.cli:
        with tempfile.TemporaryDirectory(prefix="tile-cli-scale-") as tmp:
            ok = all([cli_scale(Path(tmp), n) for n in args.cli])
        if not args.cases:
            return 0 if ok else 1
    print(f"{'cases':>6}  {'rule':<26} {'CPU s':>8} {'wall s':>8} {'rewrites':>8}  CPU ratio")
    with tempfile.TemporaryDirectory(prefix="tile-checkpoint-scale-") as tmp:
        root = Path(tmp)
        for n in args.cases:
            rules = [("case log, rare compaction", False)]
            rules += [("old: rewrite every case", True)] if n <= args.old_upto else []
            new_cpu = 0.0
            for name, every in rules:
                out = root / f"run-{n}-{'old' if every else 'new'}"
                cpu, wall, rewrites = record(root, out, n, every_case=every)
                ok = _valid(out, n) and ok
                new_cpu = new_cpu or cpu
                ratio = f"{cpu / new_cpu:6.1f}x" if every else ""
                print(f"{n:>6}  {name:<26} {cpu:8.2f} {wall:8.2f} {rewrites:>8}  {ratio}",
                      flush=True)  # fmt: skip
    if not ok:
        print("a run directory did not validate or lost cases", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
