"""SEGA, spectral-energy guided attention (Rajabi et al. 2026, arXiv 2605.22668): the spectral half of the method.

SEGA scales the spatial axes by NTK (`plan.py`) and gives each of their pairs a magnitude m_i, a gain on
its cos and sin (its share of the q.k logit grows by m_i^2), chosen at every step from the current latent:

    map     the latent on its token grid (mean over batch, channels, frames, patch pixels), minus its mean
    E_a     per spatial axis: |FFT along a|^2 averaged over the other axis; frequency k of 0 .. K = n_a // 2
            in bin floor(k B / K) of B = max(K, 8) bins (mean per bin)
    E_r     |FFT2|^2 binned by distance from the centre of the shifted spectrum, max(h, w) // 2 bins
    sigma   low + (high - low) (1 - SF^gamma), SF = geometric / arithmetic mean of E_r (1: white noise)
    m_ref   s_a^kappa ("power", kappa 0.08) or 1 + kappa ln s_a ("log", kappa 0.1), s_a = max(1, n_a / n_a_train)
    m_i     pair i at (1 - u_i)(B - 1) in E_a, u_i its log-period scaled to [0, 1]; z = ln E_a there (linear
            interpolation), standardised; m_i = max(floor, m_ref (1 - alpha sigma (tanh(beta z_i) - mean)))

so energetic frequencies get less than m_ref, quiet ones more. Defaults, the authors' code as ComfyUI-DyPE's
port carries it: alpha 0.15, beta 1.5, floor 1, spread (0, 1), gamma 1.5; energies below 1e-8 count as 1e-8.
Unlike the port, each frequency has its exact bin: its float32 linspace puts some on a bin edge one bin low,
leaving empty bins at many sizes (24, 48, 96 tokens; docs/extrapolation.md). float64 on the CPU throughout,
after the latent is reduced to its (h, w) map on its own device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..validation import is_int, is_real

SEGA_REFERENCES = ("power", "log")
DEFAULT_KAPPA = {"power": 0.08, "log": 0.1}
ENERGY_FLOOR = 1e-8  # the smallest energy a bin counts with (an empty bin has none)
MIN_BINS = 8


@dataclass(frozen=True)
class SegaSpectrum:
    """What SEGA reads from one latent: per spatial axis its energy profile, and the spread.

    profiles: one tuple of bin energies per spatial axis, in the grid's order ((y, x)).
    spread: sigma in [low, high] of the spread range, from the radial profile's flatness.
    Hashable, so a plan built from it can key a table cache.
    """

    profiles: tuple[tuple[float, ...], ...]
    spread: float

    def __post_init__(self):
        profiles = tuple(tuple(float(e) for e in p) for p in self.profiles)
        if not profiles or any(len(p) == 0 for p in profiles):
            raise ValueError(f"profiles must be non-empty energy profiles, one per spatial axis, got {self.profiles!r}")
        if any(not math.isfinite(e) or e < 0 for p in profiles for e in p):
            raise ValueError("profiles must hold finite non-negative energies")
        if not is_real(self.spread) or not math.isfinite(self.spread):
            raise ValueError(f"spread must be a finite number, got {self.spread!r}")
        object.__setattr__(self, "profiles", profiles)
        object.__setattr__(self, "spread", float(self.spread))


def token_map(latent: torch.Tensor, grid: Sequence[int]) -> torch.Tensor:
    """The latent on its token grid, (h, w) float64 on the CPU: the mean over everything but the two spatial axes.

    Args:
        latent: one of
            (B, C, H, W) or (B, C, T, H, W) (also (B, T, C, H, W)): a latent whose last two axes are
                multiples of the grid's (each token's patch of pixels is averaged);
            (B, N, D): packed tokens whose first prod(grid) are the grid's, row-major (Flux, Qwen-Image:
                each token's D values are its channels and patch pixels, averaged).
        grid: the token grid (h, w) or (t, h, w).
    """
    if not isinstance(latent, torch.Tensor) or latent.is_complex() or not latent.is_floating_point():
        raise TypeError(f"latent must be a real floating-point tensor, got {latent!r:.80}")
    grid = tuple(grid)
    if len(grid) < 2 or any(not is_int(n) or n <= 0 for n in grid):
        raise ValueError(f"grid must be two or more positive token counts ((h, w) or (t, h, w)), got {grid}")
    h, w = grid[-2:]
    values = latent.detach()
    work = torch.float32 if values.device.type == "mps" else torch.float64  # MPS has no float64
    if values.ndim == 3:
        tokens = math.prod(grid)
        if values.shape[1] < tokens:
            raise ValueError(f"latent has {values.shape[1]} tokens, fewer than the grid {grid}'s {tokens}")
        cells = values[:, :tokens].reshape(values.shape[0], *grid, values.shape[-1]).movedim(-1, 1)
        reduced = cells.to(work).mean(dim=tuple(range(cells.ndim - 2)))
    elif values.ndim in (4, 5):
        height, width = values.shape[-2:]
        if height % h or width % w:
            raise ValueError(f"latent's spatial size {(height, width)} is not a multiple of the token grid {(h, w)}")
        pixels = values.to(work).mean(dim=tuple(range(values.ndim - 2)))  # (H, W)
        reduced = pixels.reshape(h, height // h, w, width // w).mean(dim=(1, 3))
    else:
        raise ValueError(
            f"latent must be (B, C, H, W), (B, C, T, H, W) or packed tokens (B, N, D), got {tuple(latent.shape)}"
        )
    return reduced.cpu().to(torch.float64)


def _binned(power: torch.Tensor, where: torch.Tensor, n_bins: int) -> torch.Tensor:
    """Mean of `power` per bin index `where` (same shape), (n_bins,) float64; an empty bin holds 0."""
    where = where.flatten()
    total = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, where, power.flatten())
    count = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, where, torch.ones_like(power.flatten()))
    return torch.where(count > 0, total / count.clamp(min=1), torch.zeros_like(total))


def axis_energy_profile(centred: torch.Tensor, axis: int, n_bins: int) -> torch.Tensor:
    """E_a of a mean-free map (h, w) along `axis` (0: y, 1: x), (n_bins,) float64 (module docstring)."""
    length = centred.shape[axis]
    power = torch.fft.fft(centred, dim=axis).abs().square().mean(dim=1 - axis)[: length // 2 + 1]
    # frequency k of 0 .. K = n // 2 goes to bin floor(k / K * n_bins), in integers: with n_bins = K (the usual
    # case) every k sits on a bin edge, where a float linspace puts some a bin too low and leaves empty bins
    k = torch.arange(len(power))
    where = (k * n_bins // max(len(power) - 1, 1)).clamp(0, n_bins - 1)
    return _binned(power, where, n_bins)


def radial_energy_profile(centred: torch.Tensor, n_bins: int) -> torch.Tensor:
    """E_r of a mean-free map (h, w), (n_bins,) float64 (module docstring)."""
    h, w = centred.shape
    power = torch.fft.fftshift(torch.fft.fft2(centred)).abs().square()
    y = torch.arange(h, dtype=torch.float64) - h / 2
    x = torch.arange(w, dtype=torch.float64) - w / 2
    radius = (y[:, None].square() + x[None, :].square()).sqrt()
    radius = radius / (radius.max() + ENERGY_FLOOR)
    return _binned(power, (radius * n_bins).long().clamp(0, n_bins - 1), n_bins)


def spectral_spread(profile: torch.Tensor, low: float = 0.0, high: float = 1.0, exponent: float = 1.5) -> float:
    """sigma = low + (high - low) (1 - SF^exponent), SF the flatness of `profile` (n_bins,) in [0, 1]."""
    energy = profile.to(torch.float64).clamp(min=ENERGY_FLOOR)
    flatness = (energy.log().mean().exp() / (energy.mean() + ENERGY_FLOOR)).clamp(0.0, 1.0)
    return low + (high - low) * (1.0 - float(flatness) ** exponent)


def latent_spectrum(
    latent: torch.Tensor, grid: Sequence[int], spread_range: tuple[float, float] = (0.0, 1.0), exponent: float = 1.5
) -> SegaSpectrum:
    """SEGA's reading of a latent on its token grid (`token_map`): per spatial axis E_a, and sigma from E_r."""
    centred = token_map(latent, grid)
    centred = centred - centred.mean()
    h, w = centred.shape
    profiles = tuple(
        tuple(axis_energy_profile(centred, axis, max(n // 2, MIN_BINS)).tolist()) for axis, n in enumerate((h, w))
    )
    radial = radial_energy_profile(centred, max(max(h, w) // 2, 1))
    return SegaSpectrum(profiles, spectral_spread(radial, *spread_range, exponent))


def reference_magnitude(scale: float, rule: str = "power", kappa: float | None = None) -> float:
    """m_ref of an axis at ratio `scale` (s_a; below 1 counts as 1): s^kappa or 1 + kappa ln s."""
    if rule not in SEGA_REFERENCES:
        raise ValueError(f"rule must be one of {SEGA_REFERENCES}, got {rule!r}")
    s = max(float(scale), 1.0)
    kappa = DEFAULT_KAPPA[rule] if kappa is None else float(kappa)
    return s**kappa if rule == "power" else 1.0 + kappa * math.log(s)


def pair_magnitudes(
    profile: Sequence[float] | torch.Tensor,
    inv_freq: torch.Tensor,
    reference: float,
    spread: float,
    alpha: float = 0.15,
    beta: float = 1.5,
    floor: float = 1.0,
) -> torch.Tensor:
    """m_i of an axis's pairs, (pairs,) float64, from its energy profile (n_bins,), its inverse frequencies
    (pairs,), m_ref and sigma (module docstring). Uniform m_ref where nothing spreads it: sigma or alpha <= 0,
    or a single pair (the floor is not applied there, as in the authors' code)."""
    inv_freq = torch.as_tensor(inv_freq, dtype=torch.float64).cpu()
    pairs = inv_freq.numel()
    if spread <= 0 or alpha <= 0 or pairs < 2:
        return torch.full((pairs,), float(reference), dtype=torch.float64)
    log_energy = torch.as_tensor(profile, dtype=torch.float64).clamp(min=ENERGY_FLOOR).log()
    bins = log_energy.numel()
    log_period = (2 * math.pi / inv_freq.clamp(min=ENERGY_FLOOR)).log()
    extent = log_period.max() - log_period.min()
    slow = (log_period - log_period.min()) / extent if extent > 1e-6 else torch.zeros_like(log_period)
    position = (1.0 - slow) * (bins - 1)
    below = position.floor().long().clamp(0, bins - 1)
    above = (below + 1).clamp(0, bins - 1)
    fraction = (position - below).clamp(0.0, 1.0)
    energy = log_energy[below] * (1 - fraction) + log_energy[above] * fraction
    z = (energy - energy.mean()) / energy.std().clamp(min=ENERGY_FLOOR)
    tilt = torch.tanh(beta * z)
    magnitudes = reference * (1.0 - alpha * spread * (tilt - tilt.mean()))
    return magnitudes.clamp(min=floor)


__all__ = [
    "DEFAULT_KAPPA",
    "SEGA_REFERENCES",
    "SegaSpectrum",
    "axis_energy_profile",
    "latent_spectrum",
    "pair_magnitudes",
    "radial_energy_profile",
    "reference_magnitude",
    "spectral_spread",
    "token_map",
]
