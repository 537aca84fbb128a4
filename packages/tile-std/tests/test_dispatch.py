"""The Pallas path is chosen per call from the default backend, not fixed at import."""

from __future__ import annotations

import jax
import pytest

import tile_std

# compiler_params is plumbing with no public name; the test pins what it builds.
from tile_std import _pallas  # pyright: ignore[reportPrivateUsage]


def test_interpret_on_cpu():
    assert jax.default_backend() == "cpu"
    assert tile_std.interpret_mode() is True


def test_decided_at_call_time(monkeypatch: pytest.MonkeyPatch):
    # tile_std._pallas reads jax.default_backend from the jax module at each call.
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert tile_std.interpret_mode() is False
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    assert tile_std.interpret_mode() is True


def test_triton_params_are_always_given():
    # Without them jax >= 0.10 lowers pallas_call to Mosaic GPU, which these kernels do not target.
    params = _pallas.compiler_params(8, 3)
    assert (params.num_warps, params.num_stages) == (8, 3)
    assert type(params).__module__.startswith("jax._src.pallas.triton")
