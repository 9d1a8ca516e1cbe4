"""Encoding positions on a grid larger than the trained one (images and video).

An `Extrapolation` names a method and its parameters; `plan(...)` turns it, for one
trained grid, one requested grid and (for the timestep-dependent methods) one
diffusion time, into a `RopePlan`: a scaling per axis for `AxialRotaryEmbedding`
and one factor for the attention logits.

Per axis a, in patch tokens, s_a = max(1, L_a_eval / L_a_train). Methods:

    none       plain extrapolation: positions beyond the trained range, trained frequencies
    pi         position interpolation per axis: theta_i / s_a
    ntk        VisionNTK: NTK-aware base per axis, b * s_a^(d_a / (d_a - 2))
    yarn       VisionYaRN: YaRN per axis with L_train = L_a_train; its temperature
               mscale = 0.1 ln(s) + 1 (s the token ratio N_eval / N_train, or the largest
               s_a) multiplies the logits by mscale^2
    riflex     video length: the temporal pair whose period is closest to L_t_train is
               slowed to 0.9 periods over L_t_eval; spatial axes as trained
    dype-pi, dype-ntk, dype-yarn
               timestep-dependent (DyPE): the method with s_a replaced by
               s_a^kappa(t), kappa(t) = lambda_s * t^lambda_t, t in [0, 1] and t = 1 pure
               noise, so early steps extrapolate most and the last step (t = 0) is the
               trained encoding

`entropy_scaling=True` (with any method) also multiplies the logits by
sqrt(log N_eval / log N_train), which keeps the attention entropy of N_eval tokens near
that of N_train tokens.

Time convention: t = 1 is pure noise, t = 0 the clean sample, as the sigmas of
diffusers' FlowMatchEulerDiscreteScheduler. A DDPM-style sampler passes t = step / T.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .frequencies import yarn_get_mscale
from .scaling import RopeScaling
from .validation import is_int, is_real

EXTRAPOLATION_METHODS = ("none", "pi", "ntk", "yarn", "riflex", "dype-pi", "dype-ntk", "dype-yarn")
YARN_TEMPERATURES = ("tokens", "max_axis")


@dataclass(frozen=True)
class RopePlan:
    """What a model needs to encode one grid.

    scalings: one `RopeScaling` or None per axis, for `AxialRotaryEmbedding.set_frequencies`.
    logit_scale: multiplies q.k before the softmax (1.0: unchanged).
    factors: the effective per-axis scale s_a used (1.0 where the axis is as trained).
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
        dype_lambda_s, dype_lambda_t: kappa(t) = lambda_s * t^lambda_t for the dype-* methods.
        temporal_axis: the time axis for riflex (0 for (t, y, x) grids).
    """

    method: str = "none"
    entropy_scaling: bool = False
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    yarn_temperature: str = "tokens"
    dype_lambda_s: float = 1.0
    dype_lambda_t: float = 2.0
    temporal_axis: int = 0

    def __post_init__(self):
        if self.method not in EXTRAPOLATION_METHODS:
            raise ValueError(f"method must be one of {EXTRAPOLATION_METHODS}, got {self.method!r}")
        if self.yarn_temperature not in YARN_TEMPERATURES:
            raise ValueError(f"yarn_temperature must be one of {YARN_TEMPERATURES}, got {self.yarn_temperature!r}")
        for name in ("beta_fast", "beta_slow", "dype_lambda_s", "dype_lambda_t"):
            value = getattr(self, name)
            if not is_real(value) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
        if not self.beta_fast > self.beta_slow > 0:
            raise ValueError(f"need beta_fast > beta_slow > 0, got {self.beta_fast} and {self.beta_slow}")
        if not isinstance(self.entropy_scaling, bool):
            raise TypeError(f"entropy_scaling must be a bool, got {type(self.entropy_scaling).__name__}")

    @property
    def is_timestep_dependent(self) -> bool:
        return self.method.startswith("dype-")

    def plan(self, train_grid: Sequence[int], eval_grid: Sequence[int], timestep: float | None = None) -> RopePlan:
        """The per-axis scalings and the logit scale for `eval_grid` from a model trained on `train_grid`.

        Args:
            train_grid, eval_grid: token grid sizes per axis, e.g. (8, 16, 16) and (16, 16, 16).
            timestep: diffusion time in [0, 1], 1 = pure noise; required by dype-* methods.
        """
        train, evaluation = _check_grids(train_grid, eval_grid)
        factors = [max(1.0, e / t) for t, e in zip(train, evaluation)]
        base = self.method
        if self.is_timestep_dependent:
            if timestep is None or not is_real(timestep) or not 0 <= timestep <= 1:
                raise ValueError(f"method {self.method!r} needs a timestep in [0, 1] (1 = pure noise), got {timestep!r}")
            kappa = self.dype_lambda_s * timestep**self.dype_lambda_t
            factors = [s**kappa for s in factors]
            base = self.method.removeprefix("dype-")

        logit_scale = 1.0
        scalings: list[RopeScaling | None] = [None] * len(train)
        if base == "riflex":
            if not 0 <= self.temporal_axis < len(train) or len(train) < 3:
                raise ValueError(f"riflex needs a (t, y, x) grid with temporal_axis in range, got grid {train}")
            a = self.temporal_axis
            factors = [s if i == a else 1.0 for i, s in enumerate(factors)]
            if factors[a] > 1:
                scalings[a] = RopeScaling("riflex", factor=factors[a], original_max_position_embeddings=train[a])
        elif base != "none":
            for a, (s, length) in enumerate(zip(factors, train)):
                if s > 1:  # an axis within its trained length keeps the trained encoding exactly
                    scalings[a] = self._axis_scaling(base, s, length)
            if base == "yarn":
                token_ratio = math.prod(factors)
                temperature_scale = token_ratio if self.yarn_temperature == "tokens" else max(factors)
                logit_scale *= yarn_get_mscale(temperature_scale) ** 2
        if self.entropy_scaling:
            logit_scale *= entropy_logit_scale(math.prod(train), math.prod(evaluation))
        return RopePlan(tuple(scalings), logit_scale, tuple(factors))

    def _axis_scaling(self, base: str, factor: float, trained_length: int) -> RopeScaling:
        if base == "pi":
            return RopeScaling("linear", factor=factor)
        if base == "ntk":
            return RopeScaling("ntk", factor=factor)
        # the temperature goes on the logits once (see plan), not per axis block
        return RopeScaling("yarn", factor=factor, original_max_position_embeddings=trained_length,
                           beta_fast=self.beta_fast, beta_slow=self.beta_slow, attention_factor=1.0)


def entropy_logit_scale(train_tokens: int, eval_tokens: int) -> float:
    """sqrt(log N_eval / log N_train) for N_eval > N_train, else 1."""
    if train_tokens < 2:
        raise ValueError(f"entropy scaling needs at least 2 trained tokens, got {train_tokens}")
    return math.sqrt(math.log(eval_tokens) / math.log(train_tokens)) if eval_tokens > train_tokens else 1.0


def _check_grids(train_grid, eval_grid) -> tuple[list[int], list[int]]:
    grids = []
    for name, grid in (("train_grid", train_grid), ("eval_grid", eval_grid)):
        if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or not grid:
            raise TypeError(f"{name} must be a non-empty sequence of grid sizes, got {grid!r}")
        if any(not is_int(n) or n <= 0 for n in grid):
            raise ValueError(f"{name} sizes must be positive integers, got {tuple(grid)}")
        grids.append(list(grid))
    if len(grids[0]) != len(grids[1]):
        raise ValueError(f"train_grid {tuple(train_grid)} and eval_grid {tuple(eval_grid)} have different numbers of axes")
    return grids[0], grids[1]
