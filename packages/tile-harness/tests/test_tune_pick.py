"""`tile tune`'s rules on synthetic timings with a known order."""

from __future__ import annotations

import random

from tile_harness.tune._files import tune_findings
from tile_harness.tune._pick import Decision, Measured, keep_fastest, pick


def _config(i: int, true_s: float, rng: random.Random, *, n: int = 30, noise: float = 0.03,
            passed: bool = True, default: bool = False) -> Measured:  # fmt: skip
    samples = [true_s * (1 + rng.gauss(0, noise)) for _ in range(n)]
    return Measured(f"k[n=1]{{c={i}}}", {"c": str(i)}, samples, passed, i, default)


def test_successive_halving_keeps_the_true_best() -> None:
    rng = random.Random(7)
    for trial in range(50):
        truths = [1.0 + 0.08 * k for k in range(27)]  # 8% apart, the best at a random place
        rng.shuffle(truths)
        alive = [_config(i, t, rng, n=5, noise=0.02) for i, t in enumerate(truths)]
        best = min(range(27), key=lambda i: truths[i])
        while len(alive) > 2:
            kept = keep_fastest(alive, eta=3)
            alive = [_config(m.order, truths[m.order], rng, n=15) for m in kept]
        assert best in {m.order for m in alive}, trial


def test_a_wrong_configuration_is_never_kept_or_chosen() -> None:
    rng = random.Random(1)
    wrong = _config(0, 0.1, rng, passed=False)  # ten times faster, and wrong
    right = [_config(i, 1.0 + i, rng) for i in range(1, 4)]
    assert wrong not in keep_fastest([wrong, *right], eta=3)
    decision = pick([wrong, *right], noise_floor_pct=2.0, alpha=0.05)
    assert decision is not None and decision.winner.order == 1
    assert pick([wrong], noise_floor_pct=2.0, alpha=0.05) is None


def test_clear_winner_ties_to_default_then_simplest() -> None:
    rng = random.Random(3)
    clear = pick([_config(2, 1.0, rng), _config(1, 1.3, rng, default=True)],
                 noise_floor_pct=2.0, alpha=0.05)  # fmt: skip
    assert clear is not None and clear.decided_by == "faster" and clear.winner.order == 2
    assert clear.margin is not None and 1.2 < clear.margin < 1.4
    same = [_config(3, 1.0, rng, noise=0.01), _config(2, 1.0, rng, noise=0.01, default=True),
            _config(1, 1.0, rng, noise=0.01)]  # fmt: skip
    tie = pick(same, noise_floor_pct=2.0, alpha=0.05)
    assert tie is not None and tie.decided_by == "tie_default" and tie.winner.order == 2
    no_default = [_config(3, 1.0, rng, noise=0.01), _config(1, 1.0, rng, noise=0.01)]
    simplest = pick(no_default, noise_floor_pct=2.0, alpha=0.05)
    assert simplest is not None and simplest.decided_by == "tie_simplest"
    assert simplest.winner.order == 1
    only = pick([_config(5, 1.0, rng)], noise_floor_pct=2.0, alpha=0.05)
    assert only is not None and only.decided_by == "only" and only.runner_up is None


def test_a_measurably_faster_finalist_wins_unless_a_tie_floor_covers_its_lead() -> None:
    # GPU-like timings: 0.1% noise, a finalist 0.5% faster than the default. `[tune] tie_floor`
    # is 0 by default, so the statistics alone decide; the gate's 2% floor would tie them.
    from tile_config import TuneConfig

    rng = random.Random(5)
    both = [_config(2, 1.0, rng, noise=0.001), _config(1, 1.005, rng, noise=0.001, default=True)]
    floor = TuneConfig().tie_floor
    assert floor == 0.0
    fastest = pick(both, noise_floor_pct=floor, alpha=0.05)
    assert fastest is not None and fastest.decided_by == "faster" and fastest.winner.order == 2
    tied = pick(both, noise_floor_pct=2.0, alpha=0.05)
    assert tied is not None and tied.decided_by == "tie_default" and tied.winner.order == 1


def test_a_finding_lists_only_its_own_cases_dropped_units() -> None:
    # `fx/copy` is a prefix of `fx/copy2`: a prefix test filed copy2's units under copy.
    def measured(case_id: str, n: int) -> Measured:
        return Measured(unit_id=f"{case_id}{{n={n}}}", values={"n": str(n)},
                        samples=[1e-3] * 5, passed=True, order=0, is_default=True)  # fmt: skip

    decisions = {
        case_id: Decision(
            winner=measured(case_id, 1),
            runner_up=None,
            decided_by="only",
            margin=None,
            tied=[],
            reason="the only correct one",
        )
        for case_id in ("fx/copy", "fx/copy2")
    }
    dropped = {"fx/copy{n=2}": "wrong output", "fx/copy2{n=3}": "slowest third"}
    copy, copy2 = tune_findings(decisions, dropped)
    assert copy.title == "fx/copy: {n=1} (only)"
    assert [e for e in copy.evidence if "wrong" in e or "slowest" in e] == [
        "fx/copy{n=2}: wrong output"
    ]
    assert "fx/copy2{n=3}: slowest third" in copy2.evidence
