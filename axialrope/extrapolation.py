"""Encoding positions on a grid larger than the trained one (images and video).

An `Extrapolation` names a method and its parameters; `plan(...)` turns it, for one trained grid,
one requested grid and (for the timestep-dependent methods) one diffusion time t (1 = pure noise,
0 = the clean sample), into a `RopePlan`: a scaling per axis for `AxialRotaryEmbedding` and one
factor for the attention logits. With s_a = max(1, L_a_eval / L_a_train) per axis:

    none                     trained frequencies, positions beyond the trained range
    pi, ntk, yarn            per-axis position interpolation, NTK-aware base, YaRN (VisionYaRN)
    riflex                   one temporal pair slowed to 0.9 periods over the video (RIFLEx)
    dype-ntk, dype-yarn      DyPE's timestep-dependent NTK and YaRN, as the authors' code
    kappa-pi, -ntk, -yarn    the static method with s_a^kappa(t): the trained encoding at t = 0
    sega                     NTK on the spatial axes from max s_a, and a magnitude per pair chosen from the
                             current latent's spectrum (SEGA; `axialrope.sega`, `plan(spectrum=...)`)

`entropy_scaling=True` also multiplies the logits by sqrt(log N_eval / log N_train);
`Extrapolation.from_name("yarn+entropy")` names it as the CLI does. The formulas of every
method are in docs/extrapolation.md ("The methods' formulas").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .frequencies import yarn_get_mscale
from .scaling import RopeScaling, check_ramp_rotations
from .sega import SegaSpectrum, check_sega_options, latent_spectrum, sega_scalings
from .validation import is_int, is_real

EXTRAPOLATION_METHODS = (
    "none",
    "pi",
    "ntk",
    "yarn",
    "riflex",
    "dype-ntk",
    "dype-yarn",
    "kappa-pi",
    "kappa-ntk",
    "kappa-yarn",
    "sega",
)
# names this project used before DyPE's own methods took the dype- prefix
RENAMED_METHODS = {"dype-pi": "kappa-pi"}
YARN_TEMPERATURES = ("tokens", "max_axis")
_YARN_OPTIONS = ("beta_fast", "beta_slow", "yarn_temperature")
_KAPPA_OPTIONS = ("dype_lambda_s", "dype_lambda_t")
_SEGA_OPTIONS = (
    "temporal_axis",
    "sega_alpha",
    "sega_beta",
    "sega_floor",
    "sega_spread",
    "sega_spread_exponent",
    "sega_reference",
    "sega_kappa",
)
# the options each method reads; any other set to a value of its own is refused, never silently unused
METHOD_OPTIONS = {
    "none": (),
    "pi": (),
    "ntk": (),
    "yarn": _YARN_OPTIONS,
    "riflex": ("temporal_axis", "riflex_index"),
    "dype-ntk": _KAPPA_OPTIONS,
    "dype-yarn": _KAPPA_OPTIONS + ("dype_beta", "dype_gamma"),
    "kappa-pi": _KAPPA_OPTIONS,
    "kappa-ntk": _KAPPA_OPTIONS,
    "kappa-yarn": _KAPPA_OPTIONS + _YARN_OPTIONS,
    "sega": _SEGA_OPTIONS,
}
ENTROPY_SUFFIX = "+entropy"  # "METHOD+entropy": the method with entropy scaling, as the CLI names it
MAX_DYPE_LAMBDA_S = 100.0  # kappa(t) <= lambda_s, and the scale grows as s^(2 kappa): far beyond DyPE's own values


@dataclass(frozen=True)
class RopePlan:
    """What a model needs to encode one grid.

    scalings: one `RopeScaling` or None per axis, for `AxialRotaryEmbedding.set_frequencies`.
    logit_scale: multiplies q.k before the softmax (1.0: unchanged).
    factors: the per-axis scale s_a = max(1, L_eval / L_train) (for kappa-* methods s_a^kappa(t);
        1.0 where the axis is as trained, and on every axis but time for riflex).
    """

    scalings: tuple[RopeScaling | None, ...]
    logit_scale: float
    factors: tuple[float, ...]


@dataclass(frozen=True)
class Extrapolation:
    """A method to go beyond the trained grid, with its parameters (see the module docstring).

    Attributes:
        method: one of EXTRAPOLATION_METHODS.
        entropy_scaling: also scale logits by sqrt(log N_eval / log N_train).
        beta_fast, beta_slow: YaRN's ramp bounds in rotations within L_a_train.
        yarn_temperature: "tokens" (s = N_eval / N_train) or "max_axis" (s = max s_a).
        dype_lambda_s, dype_lambda_t: kappa(t) = lambda_s * t^lambda_t for the dype-* and kappa-* methods.
        dype_beta, dype_gamma: dype-yarn's ramp bounds (high, low) in rotations within L_a_train,
            PI to NTK and NTK to unscaled; DyPE's are (1.25, 0.75) and (16, 2).
        temporal_axis: the time axis for riflex, and the axis sega leaves as trained (0 for (t, y, x) grids).
        riflex_index: RIFLEx's intrinsic pair k, 1-based as RIFLEx's code and paper count it
            (HunyuanVideo 4, CogVideoX 2); None: this project's rule (see the module docstring).
        sega_alpha, sega_beta, sega_floor: SEGA's amplitude, tanh sharpness and least magnitude (0.15, 1.5, 1).
        sega_spread, sega_spread_exponent: the spread's range (low, high) and exponent ((0, 1), 1.5).
        sega_reference, sega_kappa: m_ref = s_a^kappa ("power") or 1 + kappa ln s_a ("log"); kappa None:
            0.08 for "power", 0.1 for "log" (`axialrope.sega`).
    """

    method: str = "none"
    entropy_scaling: bool = False
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    yarn_temperature: str = "tokens"
    dype_lambda_s: float = 1.0
    dype_lambda_t: float = 2.0
    dype_beta: tuple[float, float] = (1.25, 0.75)
    dype_gamma: tuple[float, float] = (16.0, 2.0)
    temporal_axis: int = 0
    riflex_index: int | None = None
    sega_alpha: float = 0.15
    sega_beta: float = 1.5
    sega_floor: float = 1.0
    sega_spread: tuple[float, float] = (0.0, 1.0)
    sega_spread_exponent: float = 1.5
    sega_reference: str = "power"
    sega_kappa: float | None = None

    def __post_init__(self) -> None:
        if self.method in RENAMED_METHODS:
            raise ValueError(
                f"method {self.method!r} is now called {RENAMED_METHODS[self.method]!r} (this project's s^kappa "
                f"variant); DyPE's own methods are 'dype-ntk' and 'dype-yarn'"
            )
        if self.method not in EXTRAPOLATION_METHODS:
            raise ValueError(f"method must be one of {EXTRAPOLATION_METHODS}, got {self.method!r}")
        if self.yarn_temperature not in YARN_TEMPERATURES:
            raise ValueError(f"yarn_temperature must be one of {YARN_TEMPERATURES}, got {self.yarn_temperature!r}")
        check_sega_options(self)
        for name in ("beta_fast", "beta_slow", "dype_lambda_s", "dype_lambda_t"):
            value = getattr(self, name)
            if not is_real(value) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
        if not self.beta_fast > self.beta_slow > 0:
            raise ValueError(f"need beta_fast > beta_slow > 0, got {self.beta_fast} and {self.beta_slow}")
        check_ramp_rotations(self.beta_fast, "beta_fast")
        if not isinstance(self.entropy_scaling, bool):
            raise TypeError(f"entropy_scaling must be a bool, got {type(self.entropy_scaling).__name__}")
        for name in ("dype_beta", "dype_gamma"):
            value = tuple(getattr(self, name)) if isinstance(getattr(self, name), (tuple, list)) else None
            if (
                value is None
                or len(value) != 2
                or any(not is_real(v) or not math.isfinite(v) for v in value)
                or not value[0] > value[1] > 0
            ):
                raise ValueError(
                    f"{name} must be two numbers (high, low), finite, with high > low > 0, got {getattr(self, name)!r}"
                )
            check_ramp_rotations(value[0], f"{name}[0]")
            object.__setattr__(self, name, tuple(float(v) for v in value))
        k = self.riflex_index
        if k is not None and (not is_int(k) or k < 1):
            raise ValueError(f"riflex_index must be a positive integer (1-based, as RIFLEx counts) or None, got {k!r}")
        if not is_int(self.temporal_axis):
            raise TypeError(
                f"temporal_axis must be an int, the index of the time axis (0 for (t, y, x) grids), got "
                f"{self.temporal_axis!r}"
            )
        if self.temporal_axis < 0:
            raise ValueError(f"temporal_axis must be >= 0 (0 for (t, y, x) grids), got {self.temporal_axis}")
        if self.dype_lambda_s > MAX_DYPE_LAMBDA_S:
            raise ValueError(
                f"dype_lambda_s must be at most {MAX_DYPE_LAMBDA_S:g} (kappa(t) = lambda_s * t^lambda_t "
                f"is an exponent of the scale), got {self.dype_lambda_s!r}"
            )
        for field in dataclasses.fields(self):
            unused = field.name not in (*METHOD_OPTIONS[self.method], "method", "entropy_scaling")
            if unused and getattr(self, field.name) != field.default:
                reads = ", ".join(METHOD_OPTIONS[self.method]) or "none of the options"
                raise ValueError(
                    f"{field.name}={getattr(self, field.name)!r} is not read by method {self.method!r} "
                    f"(it reads {reads}); drop it"
                )

    def check_axes(self, axes_dims: Sequence[int]) -> None:
        """ValueError unless the method suits a rope of `axes_dims` (rotary channels per axis): riflex needs its
        temporal_axis among them, and riflex_index (1-based) among that axis's frequency pairs. Called where the
        method is applied to a model, before any table is built."""
        if self.method != "riflex":
            return
        if self.temporal_axis >= len(axes_dims):
            raise ValueError(
                f"temporal_axis={self.temporal_axis}: this rope has {len(axes_dims)} axes (channels {tuple(axes_dims)})"
            )
        pairs = axes_dims[self.temporal_axis] // 2
        if self.riflex_index is not None and self.riflex_index > pairs:
            raise ValueError(
                f"riflex_index={self.riflex_index} is beyond the temporal axis's {pairs} frequency pairs (its "
                f"{axes_dims[self.temporal_axis]} channels); RIFLEx counts them from 1, so give 1 to {pairs}, or "
                "none for this project's rule"
            )

    @classmethod
    def from_name(cls, name: str | Extrapolation, **options: Any) -> Extrapolation:
        """The one parser of extrapolation names: the names `axialrope sample --extrapolation` takes.

        `name` is a method ("yarn"), a method with entropy scaling ("yarn+entropy", see `split_name`)
        or an `Extrapolation`; `options` are the other attributes on top of it (beta_fast=16.0, ...);
        entropy_scaling=True adds entropy scaling to a name without the suffix.

            Extrapolation.from_name("yarn+entropy", beta_fast=16.0)
            Extrapolation.from_name(Extrapolation("pi"), entropy_scaling=True)

        Raises TypeError for a name that is not a string or an unknown option, ValueError for an unknown
        method or a bad option value.
        """
        fields = {field.name for field in dataclasses.fields(cls)} - {"method"}
        unknown = sorted(set(options) - fields)
        if unknown:
            raise TypeError(f"unknown option {unknown[0]!r}; Extrapolation's options are {sorted(fields)}")
        if isinstance(name, Extrapolation):
            return dataclasses.replace(name, **options) if options else name
        method, entropy = split_name(name)
        return cls(method, **({**options, "entropy_scaling": True} if entropy else options))

    @property
    def is_timestep_dependent(self) -> bool:
        return self.method.startswith(("dype-", "kappa-"))

    @property
    def is_latent_dependent(self) -> bool:
        """Whether each call's plan reads the current latent (sega: `spectrum`, then `plan(spectrum=...)`)."""
        return self.method == "sega"

    def spectrum(self, latent, grid: Sequence[int]) -> SegaSpectrum:
        """SEGA's reading of `latent` on its token `grid` (`axialrope.sega.latent_spectrum` with this
        method's spread settings): latent (B, C, H, W), (B, C, T, H, W) or packed tokens (B, N, D)."""
        return latent_spectrum(latent, grid, self.sega_spread, self.sega_spread_exponent)

    def kappa(self, timestep: float) -> float:
        """kappa(t) = lambda_s * t^lambda_t."""
        return self.dype_lambda_s * timestep**self.dype_lambda_t

    def plan(
        self,
        train_grid: Sequence[int],
        eval_grid: Sequence[int],
        timestep: float | None = None,
        token_spacing: Sequence[float] | None = None,
        spectrum: SegaSpectrum | None = None,
    ) -> RopePlan:
        """The per-axis scalings and the logit scale for `eval_grid` from a model trained on `train_grid`.

        Args:
            train_grid, eval_grid: token grid sizes per axis, e.g. (8, 16, 16) and (16, 16, 16).
            timestep: diffusion time in [0, 1], 1 = pure noise; required by the dype-* and kappa-* methods.
            token_spacing: per axis, the distance in position units between neighbouring tokens
                (default 1: positions are token indices). The trained length of a scaling that
                counts rotations (yarn, dype-yarn, riflex) is train_grid[a] * token_spacing[a].
            spectrum: sega's reading of the current latent (`spectrum(latent, grid)`); None gives every pair
                of an axis beyond its trained length the reference magnitude m_ref.
        """
        try:
            return self._plan(train_grid, eval_grid, timestep, token_spacing, spectrum)
        except OverflowError:  # s^kappa or s^(2 kappa) beyond a float
            raise ValueError(
                f"method {self.method!r}: the scale overflows at {tuple(eval_grid)} from "
                f"{tuple(train_grid)} with dype_lambda_s={self.dype_lambda_s}; lower "
                "dype_lambda_s"
            ) from None

    def _plan(self, train_grid, eval_grid, timestep, token_spacing, spectrum=None) -> RopePlan:
        train, evaluation = _check_grids(train_grid, eval_grid)
        spacing = _check_spacing(token_spacing, len(train))
        lengths = [n * step for n, step in zip(train, spacing, strict=True)]
        factors = [max(1.0, e / t) for t, e in zip(train, evaluation, strict=True)]
        base = self.method
        kappa = None
        if self.is_timestep_dependent:
            if timestep is None or not is_real(timestep) or not 0 <= timestep <= 1:
                raise ValueError(
                    f"method {self.method!r} needs a timestep in [0, 1] (1 = pure noise), got {timestep!r}"
                )
            kappa = self.kappa(timestep)
            if self.method.startswith("kappa-"):
                factors = [s**kappa for s in factors]
                base = self.method.removeprefix("kappa-")

        logit_scale = 1.0
        scalings: list[RopeScaling | None] = [None] * len(train)
        if base == "riflex":
            if not 0 <= self.temporal_axis < len(train) or len(train) < 3:
                raise ValueError(f"riflex needs a (t, y, x) grid with temporal_axis in range, got grid {train}")
            a = self.temporal_axis
            factors = [s if i == a else 1.0 for i, s in enumerate(factors)]
            if factors[a] > 1:
                k = None if self.riflex_index is None else self.riflex_index - 1
                scalings[a] = RopeScaling(
                    "riflex", factor=factors[a], original_max_position_embeddings=lengths[a], riflex_index=k
                )
        elif base == "sega":
            scalings, factors = sega_scalings(self, factors, spectrum)
        elif base == "dype-ntk":
            for a, s in enumerate(factors):
                if s > 1 and s ** (2 * kappa) > 1:
                    scalings[a] = RopeScaling("ntk", factor=s ** (2 * kappa))
        elif base == "dype-yarn":
            (beta_0, beta_1), (gamma_0, gamma_1) = self.dype_beta, self.dype_gamma
            for a, (s, length) in enumerate(zip(factors, lengths, strict=True)):
                if s > 1:
                    scalings[a] = RopeScaling(
                        "dype_yarn",
                        factor=s,
                        original_max_position_embeddings=length,
                        kappa=kappa,
                        beta_0=beta_0,
                        beta_1=beta_1,
                        gamma_0=gamma_0,
                        gamma_1=gamma_1,
                    )
        elif base != "none":
            for a, (s, length) in enumerate(zip(factors, lengths, strict=True)):
                if s > 1:  # an axis within its trained length keeps the trained encoding exactly
                    scalings[a] = self._axis_scaling(base, s, length)
            if base == "yarn":
                token_ratio = math.prod(factors)
                temperature_scale = token_ratio if self.yarn_temperature == "tokens" else max(factors)
                logit_scale *= yarn_get_mscale(temperature_scale) ** 2
        if self.entropy_scaling:
            logit_scale *= entropy_logit_scale(math.prod(train), math.prod(evaluation))
        return RopePlan(tuple(scalings), logit_scale, tuple(factors))

    def _axis_scaling(self, base: str, factor: float, trained_length: float) -> RopeScaling:
        if base == "pi":
            return RopeScaling("linear", factor=factor)
        if base == "ntk":
            return RopeScaling("ntk", factor=factor)
        # the temperature goes on the logits once (see plan), not per axis block
        return RopeScaling(
            "yarn",
            factor=factor,
            original_max_position_embeddings=trained_length,
            beta_fast=self.beta_fast,
            beta_slow=self.beta_slow,
            attention_factor=1.0,
        )


def split_name(name: str) -> tuple[str, bool]:
    """ "METHOD+entropy" -> ("METHOD", True), "METHOD" -> ("METHOD", False). The method is not checked here
    (`Extrapolation` checks it; a pipeline also reads "auto" this way)."""
    if not isinstance(name, str):
        raise TypeError(f"method must be a method name or an axialrope.Extrapolation, got {name!r}")
    method = name.removesuffix(ENTROPY_SUFFIX)
    return method, method != name


def entropy_logit_scale(train_tokens: int, eval_tokens: int) -> float:
    """sqrt(log N_eval / log N_train) for N_eval > N_train, else 1."""
    if train_tokens < 2:
        raise ValueError(f"entropy scaling needs at least 2 trained tokens, got {train_tokens}")
    return math.sqrt(math.log(eval_tokens) / math.log(train_tokens)) if eval_tokens > train_tokens else 1.0


def _check_spacing(token_spacing, n_axes: int) -> list[float]:
    if token_spacing is None:
        return [1] * n_axes
    spacing = list(token_spacing)
    if len(spacing) != n_axes or any(not is_real(v) or not (math.isfinite(v) and v > 0) for v in spacing):
        raise ValueError(f"token_spacing must be {n_axes} positive numbers (one per axis), got {token_spacing!r}")
    return spacing


def _check_grids(train_grid, eval_grid) -> tuple[list[int], list[int]]:
    grids = []
    for name, grid in (("train_grid", train_grid), ("eval_grid", eval_grid)):
        if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or not grid:
            raise TypeError(f"{name} must be a non-empty sequence of grid sizes, got {grid!r}")
        if any(not is_int(n) or n <= 0 for n in grid):
            raise ValueError(f"{name} sizes must be positive integers, got {tuple(grid)}")
        grids.append(list(grid))
    if len(grids[0]) != len(grids[1]):
        raise ValueError(
            f"train_grid {tuple(train_grid)} and eval_grid {tuple(eval_grid)} have different numbers of axes"
        )
    return grids[0], grids[1]
