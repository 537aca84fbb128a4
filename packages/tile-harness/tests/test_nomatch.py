"""The did-you-mean of filters that select no case (issue 40): each filter that matches
nothing alone is named, with the names close to it written as the flag to type."""

from __future__ import annotations

import tile_protocol as tp
from tile_harness import ExitCode, Selection, nothing_matched

CASES = [
    tp.CaseInfo(case_id=f"my_kernels/{k}[n={n},dtype=float32]", kernel=f"my_kernels/{k}")
    for k in ("fma", "fma_pallas", "scale_bias")
    for n in (256, 1024)
]


def test_a_misspelled_k_gets_the_kernel_part_it_was_close_to() -> None:
    error = nothing_matched(Selection(filters=["fmaa"]), CASES)
    assert error.code == ExitCode.USAGE
    assert error.message == "no case matches `-k fmaa`"
    assert error.hint is not None and error.hint.startswith("did you mean `-k fma`?")


def test_a_misspelled_kernel_gets_the_whole_name() -> None:
    error = nothing_matched(Selection(kernels=["my_kernels/fma_palas"]), CASES)
    assert error.hint is not None
    assert error.hint.startswith("did you mean `--kernel my_kernels/fma_pallas`")


def test_an_axis_value_is_suggested_and_only_missing_filters_are_named() -> None:
    sel = Selection(kernels=["my_kernels/fma"], filters=["dtype=flaot32"])
    error = nothing_matched(sel, CASES)
    assert error.message == "no case matches `-k dtype=flaot32`"  # the kernel matched
    assert error.hint is not None and "`-k dtype=float32`" in error.hint


def test_a_case_id_without_its_axes_gets_the_full_ids() -> None:
    error = nothing_matched(Selection(case_ids=["my_kernels/scale_bias"]), CASES)
    assert error.hint is not None
    assert "`--case my_kernels/scale_bias[n=256,dtype=float32]`" in error.hint


def test_filters_that_each_match_but_not_together() -> None:
    error = nothing_matched(Selection(kernels=["my_kernels/fma"], filters=["scale"]), CASES)
    assert "together" in error.message and error.hint is not None and "tile list" in error.hint


def test_nothing_close_and_no_kernels_at_all() -> None:
    far = nothing_matched(Selection(filters=["zzzzzz"]), CASES)
    assert far.hint == "run `tile list` to see every case id"
    empty = nothing_matched(Selection(filters=["fma"]), [])
    assert empty.message == "no kernels found"
