"""Is the tune's winner as fast as the best configuration of an exhaustive sweep? (issue #34)

Give it the tuning file a `tile tune` wrote and the run directory of an exhaustive tune of
the same cases (`tile tune ... tune.rungs=0`: no rung prunes, so every configuration gets the
final measurement with the [bench] settings). For each tuned case it looks up the tune's winner
among the exhaustive run's configurations and prints its median beside the exhaustive best's
median and confidence interval: the winner passes when its median is no higher than the top
of the best's interval. Both figures come from the one exhaustive run, so the verdict does not
depend on how fast the machine was in the tune's own run.

Usage: python benchmarks/tune_vs_exhaustive.py TUNING_JSON EXHAUSTIVE_RUN_DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tile_protocol import TuneUnit
from tile_protocol.format import format_values


def configurations(run_dir: Path) -> dict[str, list[tuple[dict[str, str], dict[str, Any]]]]:
    """Each base case's measured configurations in a tune's report: (values, stats)."""
    report = json.loads((run_dir / "report.json").read_text())
    out: dict[str, list[tuple[dict[str, str], dict[str, Any]]]] = {}
    for case in report["cases"]:
        stats = case.get("stats")
        if case.get("status") != "success" or not stats:
            continue
        unit = TuneUnit.parse(case["case_id"])
        if unit is not None:
            out.setdefault(unit.case_id, []).append((unit.values, stats))
    return out


def judge(tuning: dict[str, Any], measured: dict[str, list[tuple[dict[str, str], Any]]]) -> int:
    """Print a row per tuned case; return how many winners fall outside the best's CI."""
    print(f"{'case':<50}{'winner':>30}{'its µs':>10}{'best':>30}{'best µs':>10}{'CI high':>10}")
    failed = 0
    for entry in tuning["entries"]:
        rows = measured.get(entry["case_id"])
        if not rows:
            print(f"{entry['case_id']:<50} not in the exhaustive run")
            failed += 1
            continue
        winner = {k: str(v) for k, v in entry["values"].items()}
        best_values, best = min(rows, key=lambda row: row[1]["median"])
        mine = next((stats for values, stats in rows if values == winner), None)
        label, best_label = format_values(winner), format_values(best_values)
        if mine is None:
            print(f"{entry['case_id']:<50}{label:>30}  not measured by the exhaustive run")
            failed += 1
            continue
        ok = mine["median"] <= best["ci_high"]
        failed += not ok
        print(
            f"{entry['case_id']:<50}{label:>30}{mine['median'] * 1e6:10.1f}{best_label:>30}"
            f"{best['median'] * 1e6:10.1f}{best['ci_high'] * 1e6:10.1f}  {'ok' if ok else 'SLOWER'}"
        )
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tuning", type=Path, help="the tuning file the tune wrote")
    parser.add_argument("exhaustive", type=Path, help="run directory of `tile tune --eta 1`")
    opts = parser.parse_args()
    for path, what in ((opts.tuning, "tuning file"), (opts.exhaustive / "report.json", "report")):
        if not path.is_file():
            print(f"error: no {what} at {path}", file=sys.stderr)
            print("hint: give the tuning/<device>.json a `tile tune` wrote, then the run "
                  "directory of `tile tune ... tune.rungs=0`", file=sys.stderr)  # fmt: skip
            return 2
    tuning = json.loads(opts.tuning.read_text())
    failed = judge(tuning, configurations(opts.exhaustive))
    total = len(tuning["entries"])
    print(f"winners within the exhaustive best's CI: {total - failed}/{total}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
