"""A case's per-kernel breakdown: each device kernel of one call, its time and its share.

The `cupti` timer's session already sees every launch by name (`(name, ms)` in launch
order); `KernelLog` keeps those per call instead of only their sum, and `kernel_times` turns
them into protocol `KernelTime`s, naming each kernel readably and, where the optimized HLO
says, the fusion or custom call it came from. Standard library only: the runner imports it
on every backend, and only a CUPTI-timed case ever fills one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tile_protocol import KernelTime
from tile_runner._stats import summarize

__all__ = [
    "KernelLog",
    "entry_copies",
    "hlo_origins",
    "kernel_times",
    "short_name",
    "unseen_copies_note",
]

Launch = tuple[str, float]  # (kernel name, milliseconds), as CUPTI reports it
# A kernel's CI needs less precision than the case's (whose CI drives the stopping rule and
# the gates): 250 bootstrap resamples cost a tenth of the default 2000's time.
_RESAMPLES = 250


class KernelLog:
    """Per-call kernel times of the calls a sampler timed, one list per kernel name.

    A call's launches are summed per name (a kernel launched twice per call counts once,
    with `launches` 2). The first call fixes the launch sequence; a call that launches
    another sequence (a different kernel, or a different count) marks the log `broken`:
    its per-kernel times would no longer describe one and the same call.
    """

    def __init__(self) -> None:
        self.sequence: tuple[str, ...] | None = None
        self.times: dict[str, list[float]] = {}  # name -> seconds per call
        self.broken = False

    @property
    def calls(self) -> int:
        """How many calls the log holds."""
        return len(next(iter(self.times.values()), list[float]()))

    def add_calls(self, launches: Sequence[Launch], n: int, *, skip: int = 0) -> None:
        """Add `n` calls whose launches CUPTI gave in order, `skip` leading ones per call
        (a cache flush's) left out."""
        if self.broken or n <= 0 or len(launches) % n:
            self.broken = True
            return
        per = len(launches) // n
        names = [name for name, _ in launches]
        if self.sequence is None:
            self.sequence = tuple(names[skip:per])
            self.times = {name: [] for name in dict.fromkeys(self.sequence)}
        # One comparison of the whole batch against the first call's sequence (in C), then one
        # slice per launch position: a call is not a Python loop of its own.
        expected = ([""] * skip + list(self.sequence)) * n
        if skip:
            names = [name if i % per >= skip else "" for i, name in enumerate(names)]
        if names != expected:
            self.broken = True
            return
        seconds: dict[str, list[float]] = {}
        for j, name in enumerate(self.sequence, start=skip):
            column = [float(ms) / 1e3 for _, ms in launches[j::per]]
            if name in seconds:
                column = [a + b for a, b in zip(seconds[name], column, strict=True)]
            seconds[name] = column
        for name, column in seconds.items():
            self.times[name].extend(column)

    def extend(self, other: KernelLog) -> None:
        """Append another log of the same function's calls (a later round's)."""
        if other.broken or (self.sequence is not None and other.sequence != self.sequence):
            self.broken = True
            return
        if self.sequence is None:
            self.sequence, self.times = other.sequence, {k: list(v) for k, v in other.times.items()}
            return
        for name, values in other.times.items():
            self.times[name].extend(values)

    def launches(self, name: str) -> int:
        """How many times one call launches `name`."""
        return (self.sequence or ()).count(name)


def kernel_times(
    log: KernelLog | None, calls: int, case_median: float, hlo: str | None
) -> list[KernelTime] | None:
    """The breakdown of a case whose samples were `calls` calls with median `case_median`;
    None when the log does not describe exactly those calls."""
    if log is None or log.broken or not log.times or log.calls != calls or case_median <= 0:
        return None
    origins = hlo_origins(hlo) if hlo else {}
    out: list[KernelTime] = []
    for name, seconds in log.times.items():
        stats = summarize(seconds, None, resamples=_RESAMPLES)
        out.append(
            KernelTime(
                name=name,
                short=short_name(name),
                origin=origins.get(_sanitized(name)) or _library_origin(name, origins),
                launches=log.launches(name),
                stats=stats,
                share=stats.median / case_median,
            )
        )
    return out


# ---------------------------------------------------------------- names

_MANGLED_PART = re.compile(r"(\d+)")
_SHORT_MAX = 40


def _demangle(name: str) -> str:
    """The qualified name inside an Itanium-mangled C++ symbol (`_ZN4cute6kernelI...` ->
    `cute::kernel`), without template arguments; `name` itself when it is not mangled."""
    if not name.startswith("_Z"):
        return name
    rest = name[3:] if name.startswith("_ZN") else name[2:]
    parts: list[str] = []
    while rest and rest[0].isdigit():
        match = _MANGLED_PART.match(rest)
        assert match is not None
        size = int(match.group(1))
        start = match.end()
        parts.append(rest[start : start + size])
        rest = rest[start + size :]
        if not name.startswith("_ZN"):
            break
    return "::".join(parts) or name


def short_name(name: str) -> str:
    """A kernel name a person can read in a table: demangled, and at most 40 characters."""
    readable = _demangle(name)
    if len(readable) <= _SHORT_MAX:
        return readable
    return readable[: _SHORT_MAX - 1] + "…"


def _sanitized(name: str) -> str:
    """XLA names a fusion's kernel after its instruction with `.` and `-` made `_`."""
    return name.replace(".", "_").replace("-", "_")


# ---------------------------------------------------------------- origins in the HLO

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*.*?\b(fusion|custom-call)\(", re.M)
_KIND = re.compile(r"\bkind=(k\w+)")
_TARGET = re.compile(r'custom_call_target="([^"]+)"')
# A Pallas (Triton) call's kernel name is the `name` in its custom call's backend config,
# written `name = "k"` (an MLIR dictionary) or `"name":"k"` (JSON, escaped or not).
_CALL_NAME = re.compile(r'\b\\?"?name\\?"?\s*[=:]\s*\\?"([^"\\]+)')
_GEMM_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul", "__cudnn$")
_LIBRARY = "<library call>"  # a key no sanitized kernel name can be


def hlo_origins(hlo: str) -> dict[str, str]:
    """Kernel name (as XLA sanitizes it) -> the instruction it came from, for every fusion
    and custom call of optimized HLO text, and the module's library gemm call when it has
    one (under a key no kernel name can be)."""
    origins: dict[str, str] = {}
    for line in hlo.splitlines():
        match = _INSTRUCTION.match(line)
        if match is None:
            continue
        instruction, op = match.groups()
        if op == "fusion":
            kind = _KIND.search(line)
            origins[_sanitized(instruction)] = (
                f"{instruction} ({kind.group(1) if kind else 'fusion'})"
            )
            continue
        target = _TARGET.search(line)
        label = f"{instruction} ({target.group(1) if target else 'custom-call'})"
        origins[_sanitized(instruction)] = label
        triton = _CALL_NAME.search(line)
        if triton is not None:
            origins.setdefault(_sanitized(triton.group(1)), label)
        if target is not None and target.group(1).startswith(_GEMM_TARGETS):
            origins.setdefault(_LIBRARY, label)
    return origins


def _library_origin(name: str, origins: dict[str, str]) -> str | None:
    """A cuBLAS/cuDNN kernel keeps its library's name: tie it to the module's one library
    gemm call when there is one."""
    lowered = name.lower()
    if any(word in lowered for word in ("gemm", "nvjet", "xmma", "cutlass")):
        return origins.get(_LIBRARY)
    return None


# ---------------------------------------------------------------- work no kernel timer sees

_ENTRY = re.compile(r"^ENTRY\b.*$", re.M)
_COPY = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\w+)\[([\d,]*)\]\S*\s+copy\(")
_ITEM_BYTES = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2, "u16": 2, "f32": 4,
               "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u64": 8, "c64": 8, "c128": 16}  # fmt: skip


def entry_copies(hlo: str) -> list[tuple[str, int]]:
    """(instruction, bytes) of every `copy` the entry computation runs outside a fusion.

    XLA runs such a copy as a device-to-device memcpy, not a kernel. The usual source: an
    output aliased to an input (Pallas `input_output_aliases`) that the caller does not
    donate, so XLA copies the input first to keep the caller's array intact.
    """
    entry = _ENTRY.search(hlo)
    if entry is None:
        return []
    copies: list[tuple[str, int]] = []
    for line in hlo[entry.end() :].splitlines():
        if line.startswith("}"):
            break
        match = _COPY.match(line)
        if match is None:
            continue
        name, dtype, dims = match.groups()
        size = _ITEM_BYTES.get(dtype.lower(), 1)
        for dim in filter(None, dims.split(",")):
            size *= int(dim)
        copies.append((name, size))
    return copies


def unseen_copies_note(hlo: str | None, kernels: Sequence[str]) -> str | None:
    """What the `cupti` timer leaves out of a call whose HLO copies outside any kernel it saw
    launched (`kernels`, by name), or None."""
    seen = {_sanitized(k) for k in kernels}
    unseen = [(n, b) for n, b in entry_copies(hlo or "") if _sanitized(n) not in seen]
    if not unseen:
        return None
    total = sum(b for _, b in unseen)
    names = ", ".join(f"`{n}`" for n, _ in unseen[:3]) + (" ..." if len(unseen) > 3 else "")
    return (
        f"XLA copies {total / 2**20:.1f} MiB on the device in each call ({names}) outside any "
        "kernel: the cupti timer times kernels only, so the median leaves the copy out, and "
        "the kernel after it may read its input from L2. An output aliased to an input the "
        "call does not donate makes such a copy (Pallas `input_output_aliases`): donate the "
        "input, or time the case with `--timer batched`, which includes it"
    )
