"""`tile tune` picks an op's implementation (issue 40, item 3: "the implementation is also a
natural tunable"): per point, the fastest correct implementation, by the rule that picks a
kernel's configuration, recorded in the tuning file's `ops` and answered by
`tile.choose_impl`.

The rule is tested on synthetic timings (`pick_impls`); one real `tile tune` through a real
runner shows the whole path: op `act` has `jnp` (the baseline), `slow` (the same result after
64 times the work, with a tunable of its own) and `wrong` (its output is off, so it can never
be chosen).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import tile_argv, tile_env

import tile_protocol as tp
from tile_harness.tune import Decision, Measured, impl_lines, pick_impls

KERNELS = """\
import jax.numpy as jnp
from jax import lax

import tile_runner as tile

AXES = tile.axes(n=[4096, 8192])


def _inputs(case, key):
    return (tile.normal(key, (case.n,), "float32"),)


def act(x):
    return jnp.tanh(x)


def slow(x, *, unroll):
    step = lambda i, acc: acc + jnp.tanh(x + 0.0 * acc)
    return lax.fori_loop(0, 64, step, jnp.zeros_like(x), unroll=unroll) / 64


def wrong(x):
    return 1.5 * jnp.tanh(x)


OPTS = dict(inputs=_inputs, reference=act, bench=AXES, tol=1e-3)
tile.kernel("it/act_slow", op="act", impl="slow", tunables=tile.axes(unroll=[1, 2]),
            **OPTS)(slow)
tile.kernel("it/act_jnp", op="act", impl="jnp", baseline=True, **OPTS)(act)
tile.kernel("it/act_wrong", op="act", impl="wrong", **OPTS)(wrong)
"""
TOML = (
    '[project]\npaths = ["kernels"]\n[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n'
    "[tune]\nmin_runs = 3\nmax_time = 0.02\n[history]\nenabled = false\n"
)
CHOOSE = """\
import sys
sys.path.insert(0, "kernels")
import acts
import tile_runner as tile

for n in ("4096", "8192", "16"):
    chosen = tile.choose_impl("act", {"n": n}, tuning=["tuning/cpu.json"])
    print(n, chosen.kernel, chosen.source)
"""


def _result(case_id: str, kernel: str, impl: str, *, baseline: bool) -> tp.BenchResult:
    op = tp.OpInfo(name="act", impl=impl, baseline=baseline)
    stats = tp.Stats(n=1, min=1, max=1, mean=1, median=1, stdev=0, mad=0, q1=1, q3=1, p5=1, p95=1)
    return tp.BenchResult(case_id=case_id, kernel=kernel, params={"n": "8"}, timer="wall",
                          stats=stats, op=op)  # fmt: skip


def _decided(case_id: str, median: float, order: int) -> Decision:
    samples = [median * (1 + 0.001 * (i % 5)) for i in range(40)]
    m = Measured(unit_id=case_id, values={}, samples=samples, passed=True, order=order,
                 is_default=True)  # fmt: skip
    return Decision(winner=m, runner_up=None, decided_by="only", margin=None, tied=[case_id],
                    reason="")  # fmt: skip


def _pick(medians: dict[str, float]) -> list[str]:
    """The implementation chosen at one point of op `act`, whose baseline is `base`."""
    decisions = {f"k/{impl}[n=8]": _decided(f"k/{impl}[n=8]", m, i)
                 for i, (impl, m) in enumerate(medians.items())}  # fmt: skip
    results = {f"k/{impl}[n=8]": _result(f"k/{impl}[n=8]", f"k/{impl}", impl,
                                         baseline=impl == "base") for impl in medians}  # fmt: skip
    chosen = pick_impls(decisions, results, noise_floor_pct=2.0, alpha=0.05)
    return [f"{c.impl} {c.decision.decided_by}" for c in chosen]


def test_the_clearly_faster_implementation_wins_and_a_tie_goes_to_the_baseline() -> None:
    assert _pick({"base": 2.0, "fast": 1.0}) == ["fast faster"]
    # `other` measures 0.5% faster: within the noise floor, so the baseline keeps the point.
    assert _pick({"other": 0.995, "base": 1.0}) == ["base tie_default"]
    # One implementation at a point has nothing to be chosen against.
    assert _pick({"base": 1.0}) == []


@pytest.fixture(scope="module")
def tuned(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = tmp_path_factory.mktemp("impl_tune") / "proj"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "acts.py").write_text(KERNELS)
    (root / "tile.toml").write_text(TOML)
    done = subprocess.run(tile_argv("tune"), cwd=root, env=tile_env(), capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    return done, root


def test_tune_records_the_fastest_correct_implementation_of_each_point(
    tuned: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, root = tuned
    assert done.returncode == 0, done.stderr
    # The live line counts the timings of every rung against a total that includes them.
    counts = re.findall(r"tile tune · (\d+)/(\d+) done", done.stderr)
    assert counts and all(int(a) <= int(b) for a, b in counts), counts
    doc = json.loads((root / "tuning" / "cpu.json").read_text())
    chosen = {c["point"]: c for c in doc["ops"]}
    assert sorted(chosen) == ["n=4096", "n=8192"]
    for point, c in chosen.items():
        assert (c["op"], c["impl"], c["kernel"]) == ("act", "jnp", "it/act_jnp"), c
        assert c["runner_up"] == "slow" and c["decided_by"] == "faster", c
        assert c["margin"] > 2, c  # 64 times the work
        assert f"op act [{point}]: jnp (it/act_jnp)" in done.stdout
    # The slow implementation still had its own configuration tuned.
    assert {e["kernel"] for e in doc["entries"]} >= {"it/act_slow"}


def test_choose_impl_answers_from_the_tuning_file(
    tuned: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, root = tuned
    done = subprocess.run([sys.executable, "-c", CHOOSE], cwd=root, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    assert done.stdout.splitlines() == [
        "4096 it/act_jnp tuned",
        "8192 it/act_jnp tuned",
        "16 it/act_jnp default",  # not tuned at n=16: the op's baseline
    ]


def test_the_run_directory_keeps_one_finding_per_chosen_point(
    tuned: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, root = tuned
    run = next((root / ".tile" / "runs").glob("tune-*"))
    findings = json.loads((run / "report.json").read_text())["findings"]
    titles = [f["title"] for f in findings if f["title"].startswith("op act")]
    assert titles == [
        "op act [n=4096]: implementation jnp (faster)",
        "op act [n=8192]: implementation jnp (faster)",
    ]
    tune_md = (run / "tune.md").read_text()
    assert "## Implementations chosen" in tune_md
    assert "- op act [n=4096]: jnp (it/act_jnp)" in tune_md


def test_impl_lines_say_how_a_tie_stands() -> None:
    decisions = {"k/base[n=8]": _decided("k/base[n=8]", 1.0, 0),
                 "k/other[n=8]": _decided("k/other[n=8]", 0.995, 1)}  # fmt: skip
    results = {cid: _result(cid, cid.split("[")[0], cid[2:].split("[")[0],
                            baseline=cid.startswith("k/base")) for cid in decisions}  # fmt: skip
    chosen = pick_impls(decisions, results, noise_floor_pct=2.0, alpha=0.05)
    [line] = impl_lines(chosen)
    assert line.startswith("op act [n=8]: base (k/base) ")
    assert "tie_default, 0.5% slower than the runner-up, within the noise" in line


SHIPPED_CHOOSE = """\
import sys
sys.path.insert(0, "lib")
import acts_pkg
import tile_runner as tile

for n in ("4096", "8192"):
    chosen = tile.choose_impl("act", {"n": n}, tuning=sys.argv[1:])
    print(n, chosen.kernel, chosen.source)
"""


def _choice(point: str, kernel: str, impl: str, jax_version: str | None) -> tp.OpChoice:
    return tp.OpChoice(op="act", point=point, impl=impl, kernel=kernel, case_id=f"{kernel}[{point}]",
                       device_kind="cpu", jax_version=jax_version)  # fmt: skip


def test_choose_impl_reads_what_the_implementations_package_ships(tmp_path: Path) -> None:
    # A library ships its choice (made with another jax: a package's choice is its author's
    # guess and holds on any version); the project's own tuning file still comes first.
    package = tmp_path / "lib" / "acts_pkg"
    (package / "tuning").mkdir(parents=True)
    (package / "__init__.py").write_text(KERNELS)
    shipped = tp.TuningFile(
        device_kind="cpu", ops=[_choice("n=4096", "it/act_slow", "slow", "0.0.1")]
    )
    (package / "tuning" / "cpu.json").write_bytes(tp.encode_tuning(shipped))
    project = tp.TuningFile(device_kind="cpu", ops=[_choice("n=4096", "it/act_jnp", "jnp", None)])
    (tmp_path / "project.json").write_bytes(tp.encode_tuning(project))
    lines: list[list[str]] = []
    for files in ([], ["project.json"]):
        done = subprocess.run([sys.executable, "-c", SHIPPED_CHOOSE, *files], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
        lines.append(done.stdout.splitlines())
    assert lines == [
        ["4096 it/act_slow shipped", "8192 it/act_jnp default"],
        ["4096 it/act_jnp tuned", "8192 it/act_jnp default"],
    ]
