"""RoPE inverse frequencies, plain and context-scaled: `rope_frequencies` (`scaling_is_identity`: a
scaling that changes nothing); `KeyBands`, a magnitude per pair for reference images' keys.

It is the only place in the package where a frequency formula is written, in float64 on the CPU
(dim // 2 values, exact for later use at large positions). d is the rotary dimension, b the base
(theta), theta_i = b^(-2i/d) for i = 0 .. d/2 - 1, s the scaling factor L_eval / L_train:

    linear     theta_i / s
    ntk        base b * s^(d/(d-2))
    dynamic    base b * (s * L / L_train - (s - 1))^(d/(d-2)), L = max(seq_len, L_train)
    yarn       theta_i blended towards theta_i / s by a ramp over the pairs that rotate between
               beta_fast and beta_slow times within L_train
    llama3     theta_i / s above wavelength L_train / low_freq_factor, kept below
               L_train / high_freq_factor, blended between
    riflex     without riflex_index, theta_k = min(theta_k, 0.9 * 2 pi / (s * L_train)) for the
               pair k whose period is closest to L_train (this project's rule); with it,
               theta_k = 0.9 * 2 pi / (s * L_train) when s * L_train > round(2 pi / theta_k)
               (RIFLEx's rule); every other pair kept
    dype_yarn  per pair, PI below beta_1 * kappa rotations within L_train, NTK between, unscaled
               above gamma_0 * kappa, with linear ramps from beta_1 to beta_0 and from gamma_1 to
               gamma_0 rotations (DyPE); attention factor 0.1 ln s + 1
    sega       the ntk frequencies; attention factor one number per pair, SEGA's magnitudes m_i from the
               axis's energy profile (`axialrope.sega`), or m_ref for all where there is no profile
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .scaling import RopeScaling, ScalingLike, as_rope_scaling
from .sega.spectrum import pair_magnitudes
from .validation import is_int, is_real


def check_rotary_dim(dim: int, name: str = "dim") -> int:
    """Raises unless `dim` is a positive even integer; returns it as an int."""
    if not is_int(dim):
        raise TypeError(f"{name} must be an int, got {type(dim).__name__}")
    if dim <= 0 or dim % 2:
        raise ValueError(f"{name} must be a positive even number (channels rotate in pairs), got {dim}")
    return dim


def check_theta(theta: float, name: str = "theta") -> float:
    """Raises unless `theta` is a finite number > 1; returns it as a float."""
    if not is_real(theta):
        raise TypeError(f"{name} must be a real number, got {type(theta).__name__}")
    if not (math.isfinite(theta) and theta > 1):
        raise ValueError(f"{name} must be a finite number > 1 (the RoPE base), got {theta}")
    return float(theta)


def default_inv_freq(dim: int, theta: float) -> torch.Tensor:
    """theta_i = theta^(-2i/dim) for i = 0 .. dim/2 - 1, float64, shape (dim // 2,)."""
    exponents = torch.arange(0, dim, 2, dtype=torch.float64) / dim
    return theta**-exponents


def _ntk_exponent(dim: int, kind: str) -> float:
    if dim <= 2:
        raise ValueError(f"dim must be > 2 for {kind} scaling (the base grows as s^(d/(d-2))), got {dim}")
    return dim / (dim - 2)


def _ntk_base(theta: float, growth: float, dim: int, kind: str) -> float:
    """theta * growth^(d/(d-2)); ValueError (not OverflowError) where that leaves float64's range."""
    try:
        base = theta * growth ** _ntk_exponent(dim, kind)
    except OverflowError:
        base = math.inf
    if not math.isfinite(base):
        raise ValueError(
            f"scaling: the {kind} factor (scale {growth:g}) is too large for dim {dim}: the base "
            "theta * s^(d/(d-2)) overflows float64"
        )
    return base


def yarn_get_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's attention temperature: 0.1 * mscale * ln(s) + 1, and 1 for s <= 1."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def correction_range(
    dim: int, theta: float, trained: float, fast: float, slow: float, truncate: bool = True
) -> tuple[float, float]:
    """The pair indices (low, high) where a ramp between two rotation counts starts and ends.

    Pair i completes r_i = L_train * theta_i / (2 pi) rotations within the trained length;
    solving r_i = rotations gives the (fractional) pair index dim * ln(L_train / (2 pi r)) /
    (2 ln theta). `fast` > `slow` rotations give low < high. With `truncate` the range is
    rounded outwards to whole pairs; low is clamped to >= 0 and high to <= dim - 1. A count of
    0 rotations lies beyond every pair (index +inf).
    """

    def pair_index_for(rotations: float) -> float:
        if rotations == 0:
            return math.inf
        wavelength_ratio = trained / (rotations * 2 * math.pi)
        return dim * math.log(wavelength_ratio) / (2 * math.log(theta))

    low, high = pair_index_for(fast), pair_index_for(slow)
    if truncate:
        low, high = math.floor(low) if math.isfinite(low) else low, math.ceil(high) if math.isfinite(high) else high
    return max(low, 0), min(high, dim - 1)


def yarn_correction_range(dim: int, theta: float, scaling: RopeScaling) -> tuple[float, float]:
    """The pair indices (low, high) between which YaRN ramps from extrapolation to interpolation
    (`correction_range` at beta_fast and beta_slow rotations)."""
    return correction_range(
        dim, theta, scaling.original_max_position_embeddings, scaling.beta_fast, scaling.beta_slow, scaling.truncate
    )


def linear_ramp(pairs: int, low: float, high: float) -> torch.Tensor:
    """clamp((i - low) / (high - low), 0, 1) for i = 0 .. pairs - 1, float64.

    A zero-width ramp is widened by 0.001 (as YaRN does) rather than divided by zero. When low
    is +inf (a band edge at 0 rotations), the ramp is its limit, 1 everywhere.
    """
    if math.isinf(low):
        return torch.ones(pairs, dtype=torch.float64)
    if low == high:
        high += 0.001
    return ((torch.arange(pairs, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)


@dataclass(frozen=True)
class KeyBands:
    """Untwisting RoPE's magnitude per rotated pair of a reference key (arXiv 2602.05013), over denoising.

    Per axis of n pairs, pair j (j = 0 the fastest, n - 1 the slowest) of a reference image's key is
    multiplied by

        s_j(t) = high(t) + (low(t) - high(t)) * (j / (n - 1))^beta

    a smooth polynomial ramp over the pair index (not a cutoff in rotations), with high(t) and low(t)
    each linear in the denoising progress 1 - t (t = 1 pure noise, t = 0 the clean sample), from
    `*_start` at t = 1 to `*_end` at t = 0. `high` < 1 weakens the fast pairs that tie a query to the
    key at its own position (what copies the reference's content); `low` > 1 strengthens the slow,
    nearly position-free ones (what carries its look). A single pair takes `high`. All 1: no change.

    The defaults are the schedule the public port xmarre/ComfyUI-Untwisting-RoPE calls the paper's
    for Flux (beta = 2 is stated in the paper); the paper's own page gives the formula and that both
    scales rise linearly over denoising.
    """

    high_start: float = 0.25
    high_end: float = 0.75
    low_start: float = 1.0
    low_end: float = 1.4
    beta: float = 2.0

    def __post_init__(self):
        for name in ("high_start", "high_end", "low_start", "low_end"):
            value = getattr(self, name)
            if not is_real(value) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not is_real(self.beta) or not math.isfinite(self.beta) or self.beta <= 0:
            raise ValueError(f"beta must be a finite number > 0, got {self.beta!r}")

    def ends(self, t: float) -> tuple[float, float]:
        """(high, low) at diffusion time t in [0, 1] (1 = pure noise): linear in the progress 1 - t."""
        if not is_real(t) or not 0.0 <= t <= 1.0:
            raise ValueError(f"t must be a number in [0, 1], got {t!r}")
        progress = 1.0 - float(t)
        high = self.high_start + (self.high_end - self.high_start) * progress
        low = self.low_start + (self.low_end - self.low_start) * progress
        return high, low

    def pair_scales(self, pairs: int, t: float) -> torch.Tensor:
        """(pairs,) float64: s_j(t) for j = 0 .. pairs - 1 (the fastest pair first)."""
        if not is_int(pairs) or pairs < 1:
            raise ValueError(f"pairs must be a positive int, got {pairs!r}")
        high, low = self.ends(t)
        fraction = torch.arange(pairs, dtype=torch.float64) / max(pairs - 1, 1)
        return high + (low - high) * fraction.pow(float(self.beta))


def yarn_attention_factor(scaling: RopeScaling) -> float:
    """The factor that multiplies cos and sin under YaRN (q.k logits grow by its square)."""
    if scaling.attention_factor is not None:
        return scaling.attention_factor
    if scaling.mscale and scaling.mscale_all_dim:
        return yarn_get_mscale(scaling.factor, scaling.mscale) / yarn_get_mscale(scaling.factor, scaling.mscale_all_dim)
    return yarn_get_mscale(scaling.factor)


def _yarn(inv_freq: torch.Tensor, dim: int, theta: float, scaling: RopeScaling) -> tuple[torch.Tensor, float]:
    # ramp = 0 for high-frequency pairs (kept), 1 for low-frequency pairs (divided by s)
    ramp = linear_ramp(dim // 2, *yarn_correction_range(dim, theta, scaling))
    inv_freq = inv_freq * (1 - ramp) + inv_freq / scaling.factor * ramp
    return inv_freq, yarn_attention_factor(scaling)


def _dype_yarn(inv_freq: torch.Tensor, dim: int, theta: float, scaling: RopeScaling) -> tuple[torch.Tensor, float]:
    # DyPE's YaRN (guyyariv/DyPE, flux/transformer_flux.py): three bands by rotations within
    # L_train, both band edges multiplied by kappa(t). Slowest pairs (fewer than beta rotations):
    # PI; between beta and gamma: NTK; fastest (more than gamma): unscaled. Band edges are
    # rounded outwards and clamped as the authors do (low >= 0, high <= dim - 1, then <= dim // 2);
    # for a tiny kappa the upper edge passes the last pair and the clamp turns that ramp over,
    # so every pair is PI there (close to t = 0). We keep that, to equal their tables.
    s, trained, kappa = scaling.factor, scaling.original_max_position_embeddings, scaling.kappa
    pairs = dim // 2
    ntk = default_inv_freq(dim, theta * s ** _ntk_exponent(dim, "dype_yarn"))

    def ramp(fast: float, slow: float) -> torch.Tensor:
        low, high = correction_range(dim, theta, trained, fast * kappa, slow * kappa)
        return linear_ramp(pairs, low, min(high, pairs))

    to_pi = ramp(scaling.beta_0, scaling.beta_1)  # 1 for the slowest pairs
    blended = inv_freq / s * to_pi + ntk * (1 - to_pi)
    scaled = ramp(scaling.gamma_0, scaling.gamma_1)  # 0 for the fastest pairs, which stay as trained
    inv_freq = blended * scaled + inv_freq * (1 - scaled)
    gain = scaling.attention_factor if scaling.attention_factor is not None else yarn_get_mscale(s)
    return inv_freq, gain


def _sega(dim: int, theta: float, scaling: RopeScaling) -> tuple[torch.Tensor, float | torch.Tensor]:
    # SEGA: NTK's frequencies; each pair's magnitude from the axis's energy profile at those frequencies. An axis
    # whose reference is 1 (not beyond its trained length) keeps a gain of 1, as does one without a spectrum
    # (then m_ref throughout), as in the authors' code
    grown = scaling.factor > 1
    inv_freq = default_inv_freq(dim, _ntk_base(theta, scaling.factor, dim, "sega") if grown else theta)
    reference = scaling.sega_reference
    if scaling.sega_profile is None or reference <= 1.0 + 1e-8:
        return inv_freq, reference
    magnitudes = pair_magnitudes(
        scaling.sega_profile,
        inv_freq,
        reference,
        scaling.sega_spread,
        scaling.sega_alpha,
        scaling.sega_beta,
        scaling.sega_floor,
    )
    return inv_freq, magnitudes


def _llama3(inv_freq: torch.Tensor, scaling: RopeScaling) -> torch.Tensor:
    trained = scaling.original_max_position_embeddings
    wavelength = 2 * math.pi / inv_freq
    long_wavelength = trained / scaling.low_freq_factor  # longer than this: divided by s
    short_wavelength = trained / scaling.high_freq_factor  # shorter than this: kept
    # between the two, blend smoothly in 1 / wavelength
    smooth = (trained / wavelength - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor)
    blended = (1 - smooth) * inv_freq / scaling.factor + smooth * inv_freq
    scaled = torch.where(wavelength > long_wavelength, inv_freq / scaling.factor, inv_freq)
    is_medium = (wavelength >= short_wavelength) & (wavelength <= long_wavelength)
    return torch.where(is_medium, blended, scaled)


def riflex_intrinsic_index(inv_freq: torch.Tensor, trained_length: float) -> int:
    """This project's rule: the pair whose period 2 pi / theta_k is closest to the trained length (0-based)."""
    return int(((2 * math.pi / inv_freq) - trained_length).abs().argmin())


def riflex_index_beyond(inv_freq: torch.Tensor, trained_length: float) -> int:
    """The pair with the shortest period longer than the trained length (0-based): the first one
    the model never saw complete a period. It gives the index RIFLEx's authors publish for
    HunyuanVideo and CogVideoX; we use it where they publish none."""
    periods = 2 * math.pi / inv_freq
    longer = (periods > trained_length).nonzero().flatten()
    if longer.numel() == 0:
        raise ValueError(f"no pair has a period longer than the trained length {trained_length}")
    return int(longer[periods[longer].argmin()])


def riflex_period(inv_freq: torch.Tensor, k: int) -> int:
    """N_k = round(2 pi / theta_k), pair k's period in positions, rounded as RIFLEx's identify_k does."""
    return round(2 * math.pi / float(inv_freq[k]))


def _riflex(inv_freq: torch.Tensor, scaling: RopeScaling) -> torch.Tensor:
    # RIFLEx (Zhao et al. 2025): the intrinsic pair would complete a period within the new
    # length and repeat the video; slow it so that it completes 0.9 of one period there.
    trained = scaling.original_max_position_embeddings
    length = scaling.factor * trained
    k = scaling.riflex_index
    if k is not None and k >= inv_freq.numel():
        raise ValueError(f"scaling: riflex_index={k} is out of range for {inv_freq.numel()} pairs")
    inv_freq = inv_freq.clone()
    if k is None:  # this project's rule (own models)
        k = riflex_intrinsic_index(inv_freq, trained)
        inv_freq[k] = min(float(inv_freq[k]), 0.9 * 2 * math.pi / length)
    elif length > riflex_period(inv_freq, k):  # RIFLEx's rule: only past the pair's period N_k
        inv_freq[k] = 0.9 * 2 * math.pi / length
    return inv_freq


def rope_frequencies(
    dim: int,
    theta: float = 10000.0,
    scaling: ScalingLike = None,
    seq_len: int | None = None,
) -> tuple[torch.Tensor, float]:
    """Inverse frequencies of RoPE over `dim` rotary channels, with optional context scaling.

    Args:
        dim: rotary dimension d (even); there are d // 2 rotated pairs.
        theta: the base b.
        scaling: None, a transformers-format dict (`{"rope_type": "yarn", "factor": 4.0,
            "original_max_position_embeddings": 4096, ...}`) or a `RopeScaling`.
        seq_len: the current length, used by "dynamic" only (None means the trained length).

    Returns:
        inv_freq: float64 tensor of shape (dim // 2,), on the CPU.
        attention_factor: multiplies cos and sin (1.0 except for YaRN and DyPE's YaRN); for "sega" with
            magnitudes, a float64 tensor (dim // 2,) with one factor per pair.

    The formula of each rope_type is in the module docstring (s = factor).
    """
    dim = check_rotary_dim(dim)
    theta = check_theta(theta)
    scaling = as_rope_scaling(scaling, theta=theta)
    return _scaled(default_inv_freq(dim, theta), dim, theta, scaling, seq_len)


def scaling_is_identity(dim: int, theta: float, scaling: ScalingLike) -> bool:
    """Whether `scaling` leaves the inverse frequencies and attention factor of `dim` channels with base
    `theta` exactly as without it (None; riflex before its pair's period; dype_yarn of factor 1 ...).

    The trained frequencies are computed once and the scaled ones from them."""
    dim = check_rotary_dim(dim)
    theta = check_theta(theta)
    scaling = as_rope_scaling(scaling, theta=theta)
    if scaling is None:
        return True
    trained = default_inv_freq(dim, theta)
    scaled, gain = _scaled(trained, dim, theta, scaling, None)
    unit = bool((gain == 1.0).all()) if isinstance(gain, torch.Tensor) else gain == 1.0
    return unit and torch.equal(scaled, trained)


def _scaled(
    inv_freq: torch.Tensor, dim: int, theta: float, scaling: RopeScaling | None, seq_len
) -> tuple[torch.Tensor, float]:
    """(inverse frequencies, attention factor) of `scaling` from the trained `inv_freq` (left unchanged)."""
    kind = "default" if scaling is None else scaling.rope_type
    if kind == "default":
        return inv_freq, 1.0
    if kind == "linear":
        return inv_freq / scaling.factor, 1.0
    if kind == "ntk":
        return default_inv_freq(dim, _ntk_base(theta, scaling.factor, dim, kind)), 1.0
    if kind == "dynamic":
        trained = scaling.original_max_position_embeddings
        if seq_len is not None and (not is_real(seq_len) or seq_len < 0):
            raise ValueError(f"seq_len must be a non-negative number or None, got {seq_len!r}")
        length = trained if seq_len is None else max(seq_len, trained)
        growth = scaling.factor * length / trained - (scaling.factor - 1)
        return default_inv_freq(dim, _ntk_base(theta, growth, dim, kind)), 1.0
    if kind == "yarn":
        return _yarn(inv_freq, dim, theta, scaling)
    if kind == "llama3":
        return _llama3(inv_freq, scaling), 1.0
    if kind == "riflex":
        return _riflex(inv_freq, scaling), 1.0
    if kind == "dype_yarn":
        return _dype_yarn(inv_freq, dim, theta, scaling)
    if kind == "sega":
        return _sega(dim, theta, scaling)
    raise AssertionError(f"unhandled rope_type {kind}")  # RopeScaling validated it
