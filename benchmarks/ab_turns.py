"""How often `tile bench --against` gives a false verdict on identical code under a load that
changes while it runs, and how often it catches a planted 2x slowdown (issue 33's interleaved
A/B targets: <= 1% false, >= 99% caught).

    uv run --no-sync python benchmarks/ab_turns.py [--aa 10] [--ab 5] [--switch 3] [--keep DIR]

The fixture is `aa_gate.py`'s (five jnp kernels x four sizes = 20 cases), committed to a
fresh git repository. A/A: `tile bench --against HEAD` with the working tree unchanged. A/B: the
working tree's kernels made to do each pass twice (the committed revision unchanged), then the
same command. While each command runs, a background load changes every `--switch` seconds
between 0, 1 and 2 busy processes, so it moves within a run and not only between runs: what
the turns are meant to take out. Each run's comparison (`comparisons.json`, the gate's own
verdicts, judged by the tile under test) is tallied. Exit 0 when both targets are met.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from aa_gate import BUSY, KERNELS, SLOW_SWITCH, Tally

import tile_artifacts as ta


def write_repo(root: Path, max_time: float, rounds: int) -> None:
    """The fixture project, committed: the revision every run is timed against (`rounds`: 0
    leaves `[bench] rounds` out, so `--against` takes its default)."""
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "aa_kernels.py").write_text(KERNELS)
    (root / "tile.toml").write_text(
        f'[project]\npaths = ["kernels"]\n\n[bench]\nmax_time = {max_time}\n'
        + (f"rounds = {rounds}\n" if rounds else "")
        + "\n[history]\nenabled = false\n"
    )
    (root / ".gitignore").write_text(".tile/\nruns/\n")
    git = ["git", "-C", str(root), "-c", "user.email=ab@tile", "-c", "user.name=ab"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], check=True)


def set_slow(root: Path, slow: bool) -> None:
    """The working tree's kernels: as committed, or each program run twice (same result)."""
    assert SLOW_SWITCH in KERNELS, "aa_gate.py's fixture changed: update SLOW_SWITCH"
    text = KERNELS.replace(SLOW_SWITCH, "SLOW = True") if slow else KERNELS
    (root / "kernels" / "aa_kernels.py").write_text(text)


@contextmanager
def changing_load(switch: float, cap: float) -> Generator[None]:
    """0, 2, 1, 0, ... busy processes, the number changing every `switch` seconds."""
    stop = threading.Event()
    procs: list[subprocess.Popen[bytes]] = []

    def cycle() -> None:
        for level in itertools.cycle([0, 2, 1]):
            while len(procs) < level:
                code = BUSY.format(cap=cap)
                procs.append(subprocess.Popen([sys.executable, "-c", code]))
            while len(procs) > level:
                procs.pop().send_signal(signal.SIGTERM)
            if stop.wait(switch):
                return

    thread = threading.Thread(target=cycle, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait()


def against(root: Path, name: str) -> ta.compare.ComparisonDoc:
    """One `tile bench --against HEAD` into runs/<name>; its own comparison (exit 1, a
    regression, is a result)."""
    env = {**os.environ, "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "tile_cli", "bench", "--against", "HEAD", "-o", f"runs/{name}"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=900,
                          check=False)  # fmt: skip
    if proc.returncode not in (0, 1):
        sys.exit(f"{name} failed with exit {proc.returncode}:\n{proc.stderr[-3000:]}")
    return ta.compare.read_comparison(root / "runs" / name / "comparisons.json")


def rejudge(root: Path) -> Tally:
    """Judge kept runs again with this tile's judge: each run against the run it names in
    `context.paired_with` (the revision's, beside it)."""
    tally = Tally()
    for run in sorted((root / "runs").glob("A[AB]*")):
        current = ta.read_report(run / "report.json")
        partner = current.context.paired_with
        if partner is None:
            continue
        revision = ta.read_report(root / "runs" / partner / "report.json")
        tally.add(run.name.startswith("AA"), ta.compare.compare_runs(revision, current), run.name)
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--aa", type=int, default=10, help="A/A runs (20 cases each)")
    parser.add_argument("--ab", type=int, default=5, help="A/B runs of a 2x slowdown")
    parser.add_argument("--max-time", type=float, default=0.25, help="[bench] max_time, s")
    parser.add_argument("--rounds", type=int, default=0, help="[bench] rounds (0: the default)")
    parser.add_argument("--switch", type=float, default=3.0, help="seconds between load changes")
    parser.add_argument("--keep", type=Path, default=None, help="measure into this directory")
    parser.add_argument("--rejudge", type=Path, default=None, help="judge runs kept earlier")
    args = parser.parse_args()
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    if args.rejudge is not None:
        tally = rejudge(args.rejudge)
        tally.print(f"kept runs of {args.rejudge}, judged again")
        false_rate, caught = tally.rates()
        return 0 if false_rate <= 0.01 and caught >= 0.99 else 1
    with tempfile.TemporaryDirectory(prefix="tile-ab-") as tmp:
        root = args.keep or Path(tmp) / "repo"
        write_repo(root, args.max_time, args.rounds)
        tally, start = Tally(), time.perf_counter()
        plan = [(f"AA{i}", False) for i in range(args.aa)] + [
            (f"AB{i}", True) for i in range(args.ab)
        ]
        for name, slow in plan:
            set_slow(root, slow)
            with changing_load(args.switch, cap=900.0):
                doc = against(root, name)
            tally.add(not slow, doc, name)
            took = time.perf_counter() - start
            print(f"  {name} done ({took:.0f} s)", file=sys.stderr, flush=True)
        set_slow(root, False)
        print(f"measured in {time.perf_counter() - start:.0f} s")
        tally.print(f"tile bench --against HEAD, load changing every {args.switch:g} s")
        false_rate, caught = tally.rates()
        return 0 if false_rate <= 0.01 and caught >= 0.99 else 1


if __name__ == "__main__":
    raise SystemExit(main())
