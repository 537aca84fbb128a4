"""`python -m tools.build_profiles [LABEL ...]`: what each Cargo profile costs and buys.

For every profile (default: dev and release) it times a clean build, a no-op rebuild and a
rebuild after touching one source file, weighs the extension, times `import` and the engine
benchmark on that very build, and writes `results/perf/rust-build-profiles/<stamp>/`:
`summary.json` (an Artifact Format v1 report), `summary.md` (the profiles side by side),
`metrics.jsonl`, `events.jsonl` and `commands/commands.jsonl` with every command's logs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tools.build_profiles import __version__
from tools.build_profiles._commands import Commands
from tools.build_profiles._errors import BuildProfileError, ExitCode
from tools.build_profiles._measure import ProfileResult, measure_profile
from tools.build_profiles._summary import build_report, render_markdown, run_status
from tools.build_profiles._target import (
    DEFAULT_LABELS,
    DEFAULT_TARGET,
    Target,
    check_labels,
    load_target,
)

if TYPE_CHECKING:
    from pydantic import JsonValue

    import tile_artifacts as ta

__all__ = ["main"]

_REPO = Path(__file__).resolve().parents[2]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.build_profiles",
        description="Compare Cargo build profiles of tile's Rust engine (or another target).",
    )
    parser.add_argument(
        "labels", nargs="*", help=f"Cargo profiles (default: {' '.join(DEFAULT_LABELS)})"
    )
    parser.add_argument(
        "--target", type=Path, default=DEFAULT_TARGET, help="target file (default: tile-stats)"
    )
    parser.add_argument(
        "--output-root",
        type=Path,
        default=_REPO / "results" / "perf" / "rust-build-profiles",
        help="where the timestamped result directory goes",
    )
    parser.add_argument(
        "--target-root",
        type=Path,
        default=_REPO / "target" / "rust-build-profiles",
        help="each profile builds in <target-root>/<label>/",
    )
    parser.add_argument("--import-runs", type=int, default=5, help="fresh interpreters per import")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per command")
    args = parser.parse_args(argv)
    if args.import_runs < 1 or args.timeout <= 0:
        raise BuildProfileError(
            "--import-runs must be at least 1 and --timeout positive",
            hint="e.g. `--import-runs 5 --timeout 1800`",
        )
    return args


def _open(output_root: Path) -> ta.ArtifactWriter:
    import tile_artifacts as ta

    run_id = ta.new_run_id("build-profiles")
    stamp = run_id.split("-")[-2]
    try:
        return ta.ArtifactWriter(
            output_root.absolute() / stamp,
            run_id=run_id,
            producer=ta.producer_info("tools.build_profiles", __version__, _REPO),
        )
    except ta.ArtifactError as exc:
        raise BuildProfileError(
            exc.message, hint=exc.hint or "pick another --output-root"
        ) from None


def _versions(commands: Commands, target: Target) -> dict[str, str]:
    found: dict[str, str] = {}
    for tool in ("cargo", "rustc"):
        done = commands.run("setup", [tool, "--version"], cwd=target.root)
        if not done.ok:
            raise BuildProfileError(
                f"`{tool} --version` failed (exit status {done.return_code})",
                hint="install a Rust toolchain (https://rustup.rs) and put it on PATH",
                code=ExitCode.INFRA,
            )
        found[tool] = done.stdout().strip()
    return found


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _report_profile(result: ProfileResult) -> None:
    if result.ok:
        _say(f"  {result.label}: clean build {result.clean_build_s:.1f} s, "
             f"no-op {result.noop_rebuild_s:.2f} s, incremental {result.incremental_rebuild_s:.1f} s")  # fmt: skip
    else:
        _say(f"  {result.label}: FAILED: {result.failure}")


def run(args: argparse.Namespace) -> int:
    """Measure every profile and write the result directory; return the exit code."""
    target = load_target(args.target)
    labels = check_labels(target, args.labels or list(DEFAULT_LABELS))
    if shutil.which("cargo") is None:
        raise BuildProfileError(
            "`cargo` is not on PATH", hint="install a Rust toolchain (https://rustup.rs)"
        )
    writer = _open(args.output_root)
    commands = Commands(writer, timeout_s=args.timeout)
    versions = _versions(commands, target)
    target_root = args.target_root.absolute()
    results: list[ProfileResult] = []
    interrupted = False
    try:
        for label in labels:
            _say(f"{target.name}: profile `{label}` in {target_root / label}")
            writer.event("profile_started", label, phase="build")
            result = measure_profile(
                commands, target, label, target_root, import_runs=args.import_runs
            )
            results.append(result)
            writer.event("profile_done", f"{label}: {result.failure or 'ok'}", phase="build")
            _report_profile(result)
    except KeyboardInterrupt:
        interrupted = True
    configuration: dict[str, JsonValue] = {
        "target": str(target.source),
        "manifest": str(target.manifest),
        "package": target.package,
        "labels": list(labels),
        "target_root": str(target_root),
        "import_runs": args.import_runs,
        "cpus": os.cpu_count(),
        **versions,
    }
    report = build_report(writer, target, results, configuration, interrupted=interrupted)
    writer.write_json("summary.json", report, description="the profiles as a tile.report")
    writer.append_jsonl("metrics.jsonl", *report.metrics)
    markdown = render_markdown(target, report, results)
    writer.write_text("summary.md", markdown, description="the profiles side by side")
    print(markdown)
    _say(f"wrote {writer.run_dir}")
    if interrupted:
        return 130
    return int(ExitCode.OK if run_status(results) == "success" else ExitCode.INFRA)


def main(argv: list[str] | None = None) -> int:
    """Entry point: every known problem becomes `error:` + `hint:` and an exit code."""
    try:
        return run(_parse(argv))
    except BuildProfileError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        print(f"hint: {exc.hint}", file=sys.stderr)
        return int(exc.code)


if __name__ == "__main__":
    sys.exit(main())
