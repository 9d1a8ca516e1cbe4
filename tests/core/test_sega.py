"""SEGA against ComfyUI-DyPE's port of the authors' code (the `sega_port` fixture, float64), and its identities."""

import math

import numpy as np
import pytest
import torch

from axialrope import AxialRotaryEmbedding, Extrapolation
from axialrope.frequencies import rope_frequencies
from axialrope.scaling import RopeScaling
from axialrope.sega import (
    SegaSpectrum,
    latent_spectrum,
    pair_magnitudes,
    reference_magnitude,
    spectral_spread,
    token_map,
)

# sizes where the port's float32 linspace bins the axis profiles exactly (see `test_bins_are_exact`)
GRIDS = [(16, 32), (12, 12), (9, 20), (64, 7)]


def _tokens(grid, channels=6, batch=2, seed=0):
    """Packed tokens (B, h * w, C) with some structure (a smooth ramp and a stripe) on top of noise."""
    g = torch.Generator().manual_seed(seed)
    h, w = grid
    y, x = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij")
    structure = 0.3 * y / h + 0.5 * torch.sin(2 * math.pi * x * 3 / w)
    noise = torch.randn(batch, h, w, channels, generator=g, dtype=torch.float64)
    return (noise + structure[None, :, :, None]).reshape(batch, h * w, channels)


@pytest.mark.parametrize("grid", GRIDS)
def test_profiles_and_spread_equal_the_port(sega_port, grid):
    tokens = _tokens(grid)
    h, w = grid
    ours = latent_spectrum(tokens, grid)
    port_h, port_w = sega_port.axis_profiles(tokens.numpy(), h, w, max(h // 2, 8), max(w // 2, 8))
    np.testing.assert_allclose(ours.profiles[0], port_h, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(ours.profiles[1], port_w, rtol=1e-7, atol=1e-12)
    radial = sega_port.radial_profile(tokens.numpy(), h, w, max(h, w) // 2)
    assert ours.spread == pytest.approx(sega_port.spread(radial), rel=1e-7, abs=1e-12)
    assert 0.0 <= ours.spread <= 1.0


@pytest.mark.parametrize("ratio", [1.0, 1.5, 2.0, 4.0, 0.5])
@pytest.mark.parametrize("rule", ["power", "log"])
def test_reference_magnitude_equals_the_port(sega_port, ratio, rule):
    formula = {"power": "power_res", "log": "log_res"}[rule]
    assert reference_magnitude(ratio, rule) == pytest.approx(sega_port.base(1024 * ratio, 1024, formula), rel=1e-12)
    assert reference_magnitude(ratio, rule, 0.2) == pytest.approx(sega_port.base(1024 * ratio, 1024, formula, 0.2))


@pytest.mark.parametrize("dim", [6, 16, 56])
@pytest.mark.parametrize("spread", [0.0, 0.3, 1.0])
def test_pair_magnitudes_equal_the_port(sega_port, dim, spread):
    profile = sega_port.axis_profiles(_tokens((16, 32)).numpy(), 16, 32, 8, 16)[1]
    inv_freq = rope_frequencies(dim, 10000.0, RopeScaling("ntk", factor=2.0))[0]
    for alpha, beta, floor in ((0.15, 1.5, 1.0), (0.4, 0.7, 0.0)):
        ours = pair_magnitudes(profile, inv_freq, 1.12, spread, alpha, beta, floor)
        port = sega_port.allocation(profile, inv_freq.numpy(), 1.12, spread, alpha, beta, floor)
        np.testing.assert_allclose(ours.numpy(), port, rtol=1e-12)


@pytest.mark.parametrize(("trained", "grid"), [((8, 8), (16, 16)), ((8, 8), (16, 32)), ((8, 12), (12, 12))])
def test_tables_equal_the_port(sega_port, trained, grid):
    """The whole method on a (y, x) rope: NTK from the larger ratio on both axes, magnitudes per axis."""
    dims, theta = (16, 12), 10000.0
    tokens = _tokens(grid)
    method = Extrapolation.from_name("sega")
    plan = method.plan(trained, grid, spectrum=method.spectrum(tokens, grid))
    cos, sin = AxialRotaryEmbedding(dims, theta, scaling=list(plan.scalings)).for_grid(*grid)
    h, w = grid
    profiles = sega_port.axis_profiles(tokens.numpy(), h, w, max(h // 2, 8), max(w // 2, 8))
    spread = sega_port.spread(sega_port.radial_profile(tokens.numpy(), h, w, max(h, w) // 2))
    scale = max(grid[0] / trained[0], grid[1] / trained[1])
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    parts = [
        sega_port.axis_table(d, theta, scale, pos.ravel(), profile, spread, n, t)
        for d, pos, profile, n, t in zip(dims, (y, x), profiles, grid, trained, strict=True)
    ]
    np.testing.assert_allclose(cos.numpy(), np.concatenate([p[0] for p in parts], axis=1), atol=2e-6)
    np.testing.assert_allclose(sin.numpy(), np.concatenate([p[1] for p in parts], axis=1), atol=2e-6)


@pytest.mark.parametrize("grid", [(8, 8), (6, 8), (4, 3)])
def test_identity_at_and_inside_the_trained_grid(grid):
    """No scaling at all: the tables are the trained ones, bit for bit, whatever the latent."""
    method = Extrapolation.from_name("sega")
    plan = method.plan((8, 8), grid, spectrum=method.spectrum(_tokens(grid), grid))
    assert plan.scalings == (None, None) and plan.logit_scale == 1.0
    trained = AxialRotaryEmbedding((16, 12)).for_grid(*grid)
    planned = AxialRotaryEmbedding((16, 12), scaling=list(plan.scalings)).for_grid(*grid)
    assert all(torch.equal(a, b) for a, b in zip(trained, planned, strict=True))


def test_formula_written_out_in_float64():
    """m_i from the module docstring's formula, written out here, on a profile where every step shows."""
    profile = [4.0, 2.0, 1.0, 0.5, 8.0, 0.25]
    dim, theta, s = 10, 100.0, 2.0
    inv_freq = (theta * s ** (dim / (dim - 2))) ** -(np.arange(0, dim, 2) / dim)
    pairs = len(inv_freq)
    position = (1 - np.arange(pairs) / (pairs - 1)) * (len(profile) - 1)  # geometric frequencies: even spacing
    log_e = np.log(profile)
    lo = np.floor(position).astype(int)
    hi = np.minimum(lo + 1, len(profile) - 1)
    energy = log_e[lo] + (position - lo) * (log_e[hi] - log_e[lo])
    z = (energy - energy.mean()) / energy.std(ddof=1)
    tilt = np.tanh(1.5 * z)
    expected = np.maximum(s**0.08 * (1 - 0.15 * 0.6 * (tilt - tilt.mean())), 1.0)
    got = pair_magnitudes(profile, torch.tensor(inv_freq), reference_magnitude(s), 0.6)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-13)
    # and through the tables: each pair's cos and sin carry it
    scaling = RopeScaling("sega", factor=s, sega_profile=tuple(profile), sega_reference=s**0.08, sega_spread=0.6)
    freqs, gain = rope_frequencies(dim, theta, scaling)
    np.testing.assert_allclose(freqs.numpy(), inv_freq, rtol=1e-15)
    np.testing.assert_allclose(gain.numpy(), expected, rtol=1e-13)


def test_bins_are_exact(sega_port):
    """Each frequency k of 0 .. K = n // 2 in bin floor(k bins / K): at 24 tokens (K = bins = 12) every bin holds
    one frequency and the last two, where the port's float32 linspace puts k = 8 in bin 7 and leaves bin 8 empty."""
    tokens = _tokens((16, 24))
    ours = latent_spectrum(tokens, (16, 24)).profiles[1]
    port = sega_port.axis_profiles(tokens.numpy(), 16, 24, 8, 12)[1]
    assert all(e > 0 for e in ours) and port[8] == 0.0
    same = [k for k in range(12) if k not in (7, 8)]
    np.testing.assert_allclose(np.array(ours)[same], port[same], rtol=1e-7)


def test_flatness_spread_ends():
    assert spectral_spread(torch.ones(16)) == pytest.approx(0.0, abs=1e-7)  # the 1e-8 in the flatness
    peaked = torch.zeros(16)
    peaked[0] = 100.0
    assert spectral_spread(peaked) > 0.99
    assert spectral_spread(torch.ones(8), 0.2, 0.8) == pytest.approx(0.2, abs=1e-7)


def test_token_map_layouts_agree():
    """A latent (B, C, H, W) with 2 x 2 patches and the same latent packed as Flux packs it give one map."""
    latent = torch.randn(2, 3, 8, 12, dtype=torch.float64)
    packed = latent.reshape(2, 3, 4, 2, 6, 2).permute(0, 2, 4, 1, 3, 5).reshape(2, 24, 12)
    assert torch.allclose(token_map(latent, (4, 6)), token_map(packed, (4, 6)), atol=1e-14)
    video = torch.randn(1, 3, 5, 8, 12, dtype=torch.float64)
    frames_first = video.transpose(1, 2)  # CogVideoX's (B, T, C, H, W)
    assert torch.allclose(token_map(video, (5, 4, 6)), token_map(frames_first, (5, 4, 6)), atol=1e-14)
    with pytest.raises(ValueError, match="not a multiple"):
        token_map(latent, (3, 6))
    with pytest.raises(ValueError, match="fewer than"):
        token_map(packed, (8, 8))


def test_video_grid_leaves_time_as_trained():
    method = Extrapolation.from_name("sega")
    video = torch.randn(1, 4, 6, 16, 16)
    plan = method.plan((4, 8, 8), (6, 16, 16), spectrum=method.spectrum(video, (6, 8, 8)))
    assert plan.scalings[0] is None and plan.factors == (1.0, 2.0, 2.0)
    assert all(s.rope_type == "sega" and s.factor == 2.0 for s in plan.scalings[1:])


def test_one_axis_beyond_gets_ntk_on_both_and_magnitudes_on_its_own():
    """The authors' rule: one NTK scale (the larger ratio) for both axes; m_ref from each axis's own ratio."""
    method = Extrapolation.from_name("sega")
    plan = method.plan((8, 8), (8, 16), spectrum=method.spectrum(_tokens((8, 16)), (8, 16)))
    assert [s.factor for s in plan.scalings] == [2.0, 2.0]
    assert plan.scalings[0].sega_reference == 1.0 and plan.scalings[1].sega_reference == pytest.approx(2**0.08)
    assert rope_frequencies(12, 10000.0, plan.scalings[0])[1] == 1.0  # a gain of 1, as plain NTK


def test_no_spectrum_gives_the_reference_magnitude():
    plan = Extrapolation.from_name("sega").plan((8, 8), (16, 16))
    _, gain = rope_frequencies(16, 10000.0, plan.scalings[0])
    assert gain == pytest.approx(2**0.08)


def test_options_checked():
    assert Extrapolation.from_name("sega", sega_alpha=0.3, sega_spread=[0.1, 0.9]).sega_spread == (0.1, 0.9)
    for bad in ({"sega_alpha": -1.0}, {"sega_spread": (0.9, 0.1)}, {"sega_reference": "cubic"}, {"sega_kappa": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            Extrapolation.from_name("sega", **bad)
    with pytest.raises(ValueError, match="sega_alpha=0.3 is not read by method 'yarn'"):
        Extrapolation.from_name("yarn", sega_alpha=0.3)
    with pytest.raises(ValueError, match="profiles"):
        Extrapolation.from_name("sega").plan((8, 8), (16, 16), spectrum=SegaSpectrum(((1.0,),), 0.5))
    with pytest.raises(ValueError, match="sega needs"):
        Extrapolation.from_name("sega").plan((8,), (16,))
    assert Extrapolation("sega").is_latent_dependent and not Extrapolation("ntk").is_latent_dependent
