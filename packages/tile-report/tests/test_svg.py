"""The plotting kit: round ticks, padded spans, escaped elements, thinned strips."""

from __future__ import annotations

import pytest

from tile_report._samples import thin
from tile_report._svg import el, fmt_num, linear_ticks, log_ticks, mark, span, text


def test_linear_ticks_are_round_and_inside() -> None:
    assert linear_ticks(0.0, 1.0) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    ticks = linear_ticks(0.0123, 0.0189)
    assert all(0.0123 <= t <= 0.0189 for t in ticks)
    assert len(ticks) >= 3


def test_log_ticks_use_decades_then_one_two_five_then_linear() -> None:
    assert log_ticks(1e-7, 2e-3) == [1e-7, 1e-6, 1e-5, 1e-4, 1e-3]
    assert log_ticks(3e-5, 9e-4) == [5e-5, 1e-4, 2e-4, 5e-4]
    narrow = log_ticks(1.2e-4, 1.8e-4)  # no 1-2-5 value inside: round linear steps
    assert len(narrow) >= 2
    assert all(1.2e-4 <= t <= 1.8e-4 for t in narrow)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (4800.0, "4800"),
        (989.0, "989"),
        (0.0123, "0.0123"),
        (1.5, "1.5"),
        (1e-7, "1e-7"),
    ],
)
def test_tick_labels_keep_three_digits(value: float, text: str) -> None:
    assert fmt_num(value) == text


def test_spans_pad_and_survive_one_value_or_none() -> None:
    lo, hi = span([1.0, 2.0], log=False)
    assert lo < 1.0 and hi > 2.0
    assert span([5.0], log=True) == (2.5, 10.0)
    assert span([0.0, -1.0], log=True) == (1.0, 10.0)  # nothing positive to draw


def test_elements_escape_and_spell_attributes() -> None:
    node = text(1.25, 2, "<b>", text_anchor="end", cls="a b", skip=None)
    assert node == '<text x="1.2" y="2" text-anchor="end" class="a b">&lt;b&gt;</text>'
    assert el("g", node) == f"<g>{node}</g>"  # children are markup already
    tip = mark("circle", 'say "hi" & <go>', r=3)
    assert tip.startswith('<circle class="mark" r="3">')
    assert "<title>say &quot;hi&quot; &amp; &lt;go&gt;</title>" in tip


def test_thinning_keeps_the_extremes_and_the_shape() -> None:
    values = [float(i) for i in range(1000)]
    kept = thin(values, 100)
    assert len(kept) == 100
    assert (kept[0], kept[-1]) == (0.0, 999.0)
    assert thin([3.0, 1.0], 100) == [1.0, 3.0]
