"""The per-kernel breakdown: CUPTI's launches per call kept by kernel, named readably, tied to
the HLO instruction they came from (real optimized HLO from XLA), and summarised per kernel."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

from tile_runner._breakdown import (
    KernelLog,
    entry_copies,
    hlo_origins,
    kernel_times,
    short_name,
    unseen_copies_note,
)


def _calls(*per_call: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [launch for call in per_call for launch in call]


def test_a_log_keeps_each_kernel_per_call_and_sums_repeated_launches() -> None:
    log = KernelLog()
    call = [("fusion_1", 1.0), ("gemm", 3.0), ("fusion_1", 0.5)]
    log.add_calls(_calls(call, [("fusion_1", 2.0), ("gemm", 4.0), ("fusion_1", 1.0)]), 2)
    assert log.calls == 2 and not log.broken
    assert log.times == {"fusion_1": [1.5e-3, 3.0e-3], "gemm": [3e-3, 4e-3]}
    assert (log.launches("fusion_1"), log.launches("gemm")) == (2, 1)


def test_a_cold_call_drops_the_flush_kernels_in_front() -> None:
    log = KernelLog()
    log.add_calls([("flush", 9.0), ("k", 1.0), ("flush", 9.0), ("k", 2.0)], 2, skip=1)
    assert log.times == {"k": [1e-3, 2e-3]}


@pytest.mark.parametrize(
    "launches",
    [
        [("a", 1.0), ("b", 1.0), ("a", 1.0), ("c", 1.0)],  # another kernel in the 2nd call
        [("a", 1.0), ("b", 1.0), ("a", 1.0)],  # a count that does not divide into calls
    ],
)
def test_a_call_with_another_launch_sequence_breaks_the_log(
    launches: list[tuple[str, float]],
) -> None:
    log = KernelLog()
    log.add_calls(launches, 2)
    assert log.broken
    assert kernel_times(log, 2, 1e-3, None) is None


def test_rounds_extend_a_log_and_a_mismatched_round_breaks_it() -> None:
    first, second, other = KernelLog(), KernelLog(), KernelLog()
    first.add_calls([("a", 1.0)], 1)
    second.add_calls([("a", 2.0), ("a", 3.0)], 2)
    other.add_calls([("b", 1.0)], 1)
    first.extend(second)
    assert first.times == {"a": [1e-3, 2e-3, 3e-3]}
    first.extend(other)
    assert first.broken


def test_kernel_times_give_medians_shares_and_launches() -> None:
    log = KernelLog()
    calls = [[("fusion_3", 1.0), ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tile", 3.0)]] * 20
    log.add_calls(_calls(*calls), 20)
    hlo = (
        "  %fusion.3 = f32[8]{0} fusion(%p), kind=kInput, calls=%c\n"
        "  %cublas-gemm.1 = (bf16[8,8]{1,0}, s8[0]{0}) custom-call(%a, %b), "
        'custom_call_target="__cublas$gemm"\n'
    )
    times = kernel_times(log, 20, 4e-3, hlo)
    assert times is not None
    by_name = {k.name: k for k in times}
    fusion = by_name["fusion_3"]
    assert fusion.stats.median == pytest.approx(1e-3) and fusion.share == pytest.approx(0.25)
    assert fusion.origin == "fusion.3 (kInput)"
    gemm = by_name["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tile"]
    assert gemm.origin == "cublas-gemm.1 (__cublas$gemm)" and gemm.share == pytest.approx(0.75)
    assert len(gemm.short) <= 40 and gemm.short.endswith("…")
    # A log of other calls than the samples' is no breakdown of them.
    assert kernel_times(log, 19, 4e-3, hlo) is None


def test_origins_come_from_real_optimized_hlo() -> None:
    def f(x: jax.Array) -> jax.Array:
        return jnp.sin(x) * 2 + jnp.sum(x, axis=1, keepdims=True)

    compiled = jax.jit(f).lower(jnp.ones((64, 64))).compile()  # pyright: ignore[reportUnknownMemberType]
    text = compiled.as_text()
    assert text is not None
    origins = hlo_origins(text)
    fusions = re.findall(r"%([\w.\-]+) = [^\n]*? fusion\(", text)
    assert fusions, "XLA made no fusion of this program"
    for name in fusions:
        sanitized = name.replace(".", "_").replace("-", "_")
        assert origins[sanitized].startswith(f"{name} (k")


@pytest.mark.parametrize(
    "config",
    [
        'backend_config={debug = false, ir = "ML\\EFR", name = "std_layernorm", num_warps = 8 : i32}',
        'backend_config="{\\"name\\":\\"std_layernorm\\",\\"num_warps\\":8}"',
        'backend_config={"name":"std_layernorm"}',
    ],
)
def test_a_pallas_kernel_is_tied_to_its_custom_call_by_the_name_in_its_config(config: str) -> None:
    line = (
        '  %custom-call.1 = bf16[64,64]{1,0} custom-call(%p0), custom_call_target="__gpu$xla.gpu'
        '.triton", metadata={op_name="jit(layernorm)/pallas_call"}, ' + config
    )
    origins = hlo_origins(line)
    assert origins["std_layernorm"] == "custom-call.1 (__gpu$xla.gpu.triton)"
    assert "pallas_call" not in origins  # the op_name of the metadata is not a kernel name


def test_short_names_are_demangled_and_bounded() -> None:
    assert short_name("loop_add_fusion") == "loop_add_fusion"
    assert short_name("_ZN7cutlass13device_kernelIN4cute6KernelEEEvT_") == "cutlass::device_kernel"
    assert short_name("_Z14softmax_kernelPfi") == "softmax_kernel"
    assert len(short_name("x" * 100)) == 40


def _set_row(x: jax.Array) -> jax.Array:
    # An in-place update of an argument: XLA copies the argument first unless it is donated.
    return x.at[0].set(1.0)


def test_copies_outside_any_kernel_are_found_in_real_hlo() -> None:
    x = jnp.ones((256, 128), jnp.float32)
    kept = jax.jit(_set_row).lower(x).compile().as_text() or ""  # pyright: ignore[reportUnknownMemberType]
    donated = jax.jit(_set_row, donate_argnums=0).lower(x).compile().as_text() or ""  # pyright: ignore[reportUnknownMemberType]
    [(name, size)] = entry_copies(kept)
    assert name.startswith("copy") and size == 256 * 128 * 4
    assert entry_copies(donated) == []


def test_only_the_entry_computations_own_copies_count() -> None:
    hlo = "\n".join([
        "%fused (p: bf16[8]) -> bf16[8] {",
        "  %copy.9 = bf16[8]{0} copy(%p)",
        "}",
        "ENTRY %main (x.1: bf16[4096,4096]) -> bf16[4096,4096] {",
        "  %copy.3 = bf16[4096,4096]{1,0} copy(%x.1)",
        '  ROOT %k = bf16[4096,4096]{1,0} custom-call(%copy.3), custom_call_target="t"',
        "}",
    ])  # fmt: skip
    assert entry_copies(hlo) == [("copy.3", 4096 * 4096 * 2)]
    note = unseen_copies_note(hlo, ["kernel"])
    assert note is not None and "32.0 MiB" in note and "`copy.3`" in note
    assert "--timer batched" in note
    # A copy CUPTI saw launched as a kernel of that name is timed: nothing to say.
    assert unseen_copies_note(hlo, ["copy_3", "kernel"]) is None
    assert unseen_copies_note(None, ["kernel"]) is None
