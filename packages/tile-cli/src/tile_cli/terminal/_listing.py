"""`tile list` for people and for programs: each kernel's bench and test cases, the modes it
declares and its tunables (values, default), from the runner's plan."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

import tile_protocol as tp

__all__ = ["list_json_lines", "op_note", "print_listing", "tunables_cell"]


def tunables_cell(tunables: Sequence[tp.TunableInfo]) -> str:
    """`block_rows: 1, 2*, 4` (`*` the default), one tunable a line, or `-` for none."""
    if not tunables:
        return "-"
    return "\n".join(
        f"{t.name}: " + ", ".join(v + ("*" if v == t.default else "") for v in t.values)
        for t in tunables
    )


def op_note(op: tp.OpInfo | None) -> str:
    """`  (op layernorm: jnp, baseline)` after the name of a kernel that implements an op."""
    if op is None:
        return ""
    return f"  (op {op.name}: {op.impl}{', baseline' if op.baseline else ''})"


def _ops(cases: Sequence[tp.CaseInfo]) -> dict[str, tp.OpInfo]:
    return {c.kernel: c.op for c in cases if c.op is not None}


def _by_kernel(cases: Sequence[tp.CaseInfo]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for case in cases:
        out.setdefault(case.kernel, []).append(case.case_id)
    return out


def _kernels(plan: tp.Plan | None) -> list[tp.KernelInfo]:
    """The plan's kernels; an older runner (before protocol 1.16) sends none: the bench
    cases' kernels then stand alone, with nothing known of their modes and tunables."""
    if plan is None:
        return []
    if plan.kernels:
        return list(plan.kernels)
    return [tp.KernelInfo(name=name, modes=[]) for name in _by_kernel(plan.cases)]


def _tuned_modes(kernel: tp.KernelInfo) -> list[str]:
    """The modes the kernel's tunables change: those it names, else every mode it has."""
    if not kernel.tunables:
        return []
    return kernel.modes if kernel.tuned_modes is None else kernel.tuned_modes


def _only_in(kernel: tp.KernelInfo) -> str:
    """` (fwd, fwd_bwd only)` after the tunables of a kernel whose other modes ignore them."""
    tuned = _tuned_modes(kernel)
    return f" ({', '.join(tuned)} only)" if tuned and tuned != kernel.modes else ""


def print_listing(out: Console, plan: tp.Plan | None) -> tuple[int, int]:
    """Each kernel's cases (bench, then test where they differ), then one table of every
    kernel's modes, tunables and case counts; the numbers of bench and test cases."""
    bench = _by_kernel(plan.cases if plan is not None else [])
    kernels = _kernels(plan)
    table = Table(title="kernels", title_justify="left", header_style="bold",
                  box=box.SIMPLE if not out.is_terminal else box.ROUNDED)  # fmt: skip
    for i, head in enumerate(("kernel", "modes", "tunables (* default)", "bench", "test")):
        table.add_column(head, justify="right" if i >= 3 else "left", no_wrap=i == 0)
    tests = 0
    ops = _ops(plan.cases if plan is not None else [])
    captured = {c.case_id: c.captured for c in plan.cases} if plan is not None else {}
    for kernel in kernels:
        ids = bench.get(kernel.name, [])
        out.print(kernel.name + op_note(ops.get(kernel.name)), style="bold", markup=False)
        for case_id in ids:
            origin = f"  (captured from {captured[case_id]})" if captured.get(case_id) else ""
            out.print(f"  {case_id}{origin}", markup=False)
        if kernel.test_cases and kernel.test_cases != ids:
            out.print("  test cases:", style="dim")
            for case_id in kernel.test_cases:
                out.print(f"    {case_id}", markup=False)
        tests += len(kernel.test_cases)
        table.add_row(Text(kernel.name), Text(", ".join(kernel.modes) or "?"),
                      Text(tunables_cell(kernel.tunables) + _only_in(kernel)), str(len(ids)),
                      str(len(kernel.test_cases)) if plan and plan.kernels else "?")  # fmt: skip
    if kernels:
        out.print()
        out.print(table)
    return sum(len(v) for v in bench.values()), tests


def list_json_lines(plan: tp.Plan | None) -> list[str]:
    """JSON Lines: one per bench case (`type` case, `suite` bench; first, as before), one per
    test case (`suite` test), then one per kernel (`type` kernel: modes, tunables, counts)."""
    if plan is None:
        return []
    docs: list[dict[str, Any]] = [
        {
            "type": "case",
            "suite": "bench",
            "case_id": c.case_id,
            "kernel": c.kernel,
            "params": c.params,
            "op": None
            if c.op is None
            else {"name": c.op.name, "impl": c.op.impl, "baseline": c.op.baseline},
        }
        | ({"captured": c.captured} if c.captured else {})
        for c in plan.cases
    ]
    kernels = _kernels(plan)
    for kernel in kernels:
        docs += [{"type": "case", "suite": "test", "case_id": case_id, "kernel": kernel.name}
                 for case_id in kernel.test_cases]  # fmt: skip
    bench = _by_kernel(plan.cases)
    for kernel in kernels:
        docs.append({
            "type": "kernel", "kernel": kernel.name, "description": kernel.description,
            "modes": kernel.modes, "tuned_modes": _tuned_modes(kernel),
            "tunables": [{"name": t.name, "values": t.values, "default": t.default}
                         for t in kernel.tunables],
            "bench_cases": len(bench.get(kernel.name, [])), "test_cases": len(kernel.test_cases),
        })  # fmt: skip
    return [json.dumps(doc) for doc in docs]
