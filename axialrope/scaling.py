"""Context-scaling configurations for RoPE.

`RopeScaling` is the package's typed form of transformers' `rope_scaling` /
`rope_parameters` dict. It is frozen and hashable, so it can be part of a cache key.
`as_rope_scaling` turns whatever a user passes (None, a dict, a `RopeScaling`) into
a validated `RopeScaling` or None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .validation import is_int, is_real

ROPE_TYPES = ("default", "linear", "ntk", "dynamic", "yarn", "llama3", "riflex", "dype_yarn", "sega")
# The ramps of yarn and dype_yarn are bounded by counts of rotations within the trained length. A pair rotates
# at most L_train / (2 pi) times there (the fastest, frequency 1), so a bound beyond a million rotations is
# past every pair of any model; and 2 pi times a count near float's limit overflows the ramp's arithmetic.
MAX_RAMP_ROTATIONS = 1e6

# Each rope type and the optional keys that change its numbers. Anything else in a
# dict is a typo or a feature we do not have, and gets an error instead of silence.
_KEYS_FOR_TYPE = {
    "default": set(),
    "linear": {"factor"},
    "ntk": {"factor"},
    "dynamic": {"factor", "original_max_position_embeddings"},
    "yarn": {
        "factor",
        "original_max_position_embeddings",
        "beta_fast",
        "beta_slow",
        "mscale",
        "mscale_all_dim",
        "attention_factor",
        "truncate",
    },
    "llama3": {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"},
    "riflex": {"factor", "original_max_position_embeddings", "riflex_index"},
    "dype_yarn": {
        "factor",
        "original_max_position_embeddings",
        "kappa",
        "beta_0",
        "beta_1",
        "gamma_0",
        "gamma_1",
        "attention_factor",
    },
    "sega": {"factor", "sega_profile", "sega_reference", "sega_spread", "sega_alpha", "sega_beta", "sega_floor"},
}
_REQUIRED_KEYS = {
    "linear": {"factor"},
    "ntk": {"factor"},
    "dynamic": {"factor", "original_max_position_embeddings"},
    "yarn": {"factor", "original_max_position_embeddings"},
    "llama3": {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"},
    "riflex": {"factor", "original_max_position_embeddings"},
    "dype_yarn": {"factor", "original_max_position_embeddings"},
    "sega": {"factor"},
}


@dataclass(frozen=True)
class RopeScaling:
    """How to stretch RoPE beyond the context length it was trained at (formulas: `axialrope.frequencies`).

    Attributes:
        rope_type: "default" (no scaling), "linear" (position interpolation), "ntk" (static
            NTK-aware base), "dynamic" (NTK from the current length), "yarn", "llama3",
            "riflex" (video length), "dype_yarn" (DyPE's three-band YaRN) or "sega" (NTK, a gain per pair).
        factor: s = L_eval / L_train, at least 1; every rope type but "default" needs it (as
            in transformers, a missing factor is an error, not "no scaling").
        original_max_position_embeddings: L_train, the trained context length (required by
            dynamic, yarn, llama3, riflex and dype_yarn), in the units of the positions: a token
            count, or a real number where positions are not indices (LTX-Video).
        beta_fast, beta_slow: YaRN's ramp bounds, in rotations within L_train.
        mscale, mscale_all_dim: DeepSeek-style YaRN temperature, each >= 0 (both set: the
            attention factor is get_mscale(s, mscale) / get_mscale(s, mscale_all_dim)).
        attention_factor: explicit YaRN attention factor (> 0), overrides the above.
        truncate: round YaRN's correction range outwards to whole pairs.
        low_freq_factor, high_freq_factor: Llama-3's wavelength band edges.
        riflex_index: RIFLEx's intrinsic pair, 0-based (RIFLEx's code counts from 1), or None
            for this project's rule (the pair whose period is closest to L_train).
        kappa: DyPE's kappa(t) for dype_yarn (1 at pure noise with the default schedule).
        beta_0, beta_1, gamma_0, gamma_1: dype_yarn's PI-to-NTK and NTK-to-unscaled ramps, in
            rotations within L_train (times kappa).
        sega_*: sega's axis profile, m_ref, sigma and settings (`axialrope.sega.pair_magnitudes`: per-pair gains).
    """

    rope_type: str = "default"
    factor: float | None = None
    original_max_position_embeddings: int | float | None = None
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    mscale: float | None = None
    mscale_all_dim: float | None = None
    attention_factor: float | None = None
    truncate: bool = True
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    riflex_index: int | None = None
    kappa: float = 1.0
    beta_0: float = 1.25
    beta_1: float = 0.75
    gamma_0: float = 16.0
    gamma_1: float = 2.0
    sega_profile: tuple[float, ...] | None = None
    sega_reference: float = 1.0
    sega_spread: float = 0.0
    sega_alpha: float = 0.15
    sega_beta: float = 1.5
    sega_floor: float = 1.0

    def __post_init__(self) -> None:
        if self.rope_type not in ROPE_TYPES:
            raise ValueError(f"scaling: unknown rope_type {self.rope_type!r}; expected one of {ROPE_TYPES}")
        for name in (
            "factor",
            "beta_fast",
            "beta_slow",
            "mscale",
            "mscale_all_dim",
            "attention_factor",
            "low_freq_factor",
            "high_freq_factor",
            "kappa",
            "beta_0",
            "beta_1",
            "gamma_0",
            "gamma_1",
            "sega_reference",
            "sega_spread",
            "sega_alpha",
            "sega_beta",
            "sega_floor",
        ):
            value = getattr(self, name)
            if value is None:
                continue
            if not is_real(value):
                raise TypeError(f"scaling: {name} must be a real number, got {type(value).__name__}")
            if not math.isfinite(value):
                raise ValueError(f"scaling: {name} must be finite, got {value}")
            # float() so that equal configs hash equally whether given 4 or 4.0
            object.__setattr__(self, name, float(value))
        if self.rope_type != "default" and self.factor is not None and self.factor < 1:
            raise ValueError(f"scaling: factor must be >= 1 (it is L_eval / L_train), got {self.factor}")
        if self.attention_factor is not None and not self.attention_factor > 0:
            raise ValueError(
                f"scaling: attention_factor must be > 0 (it multiplies cos and sin), got {self.attention_factor}"
            )
        for name in ("mscale", "mscale_all_dim"):
            if getattr(self, name) is not None and getattr(self, name) < 0:
                raise ValueError(f"scaling: {name} must be >= 0, got {getattr(self, name)}")
        length = self.original_max_position_embeddings
        if length is not None:
            if not is_real(length):
                raise TypeError(f"scaling: original_max_position_embeddings must be a number, got {length!r}")
            if not (math.isfinite(length) and length > 0):
                raise ValueError(f"scaling: original_max_position_embeddings must be positive and finite, got {length}")
            # a whole number stays an int (transformers' configs); fractional lengths are kept as given
            length = int(length) if float(length).is_integer() else float(length)
            object.__setattr__(self, "original_max_position_embeddings", length)
        if self.riflex_index is not None and (not is_int(self.riflex_index) or self.riflex_index < 0):
            raise ValueError(f"scaling: riflex_index must be a non-negative integer, got {self.riflex_index!r}")
        if not isinstance(self.truncate, bool):
            raise TypeError(f"scaling: truncate must be a bool, got {type(self.truncate).__name__}")
        missing = sorted(k for k in _REQUIRED_KEYS.get(self.rope_type, ()) if getattr(self, k) is None)
        if missing:
            raise ValueError(f"scaling: rope_type {self.rope_type!r} needs {', '.join(missing)}")
        if self.rope_type == "yarn" and not self.beta_fast > self.beta_slow > 0:
            raise ValueError(
                f"scaling: yarn needs beta_fast > beta_slow > 0, got beta_fast={self.beta_fast}, "
                f"beta_slow={self.beta_slow}"
            )
        ramps = {"yarn": ("beta_fast",), "dype_yarn": ("beta_0", "gamma_0")}.get(self.rope_type, ())
        for name in ramps:
            check_ramp_rotations(getattr(self, name), f"scaling: {name}")
        if self.rope_type == "dype_yarn":
            if self.kappa < 0:
                raise ValueError(f"scaling: dype_yarn needs kappa >= 0, got {self.kappa}")
            for high, low in (("beta_0", "beta_1"), ("gamma_0", "gamma_1")):
                if not getattr(self, high) > getattr(self, low) > 0:
                    raise ValueError(
                        f"scaling: dype_yarn needs {high} > {low} > 0, got {high}={getattr(self, high)}, "
                        f"{low}={getattr(self, low)}"
                    )
        if self.sega_profile is not None:
            values = self.sega_profile
            if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
                raise TypeError(f"scaling: sega_profile must be a sequence of bin energies, got {values!r}")
            values = tuple(values)
            if not values or any(not is_real(v) or not math.isfinite(v) or v < 0 for v in values):
                raise ValueError(f"scaling: sega_profile must be finite energies >= 0, got {values!r}")
            object.__setattr__(self, "sega_profile", tuple(float(v) for v in values))
        if self.sega_reference < 1 or self.sega_floor < 0:
            raise ValueError(
                f"scaling: sega needs sega_reference >= 1 and sega_floor >= 0, got {self.sega_reference} and "
                f"{self.sega_floor}"
            )
        if self.rope_type == "llama3" and not self.high_freq_factor > self.low_freq_factor > 0:
            raise ValueError(
                f"scaling: llama3 needs high_freq_factor > low_freq_factor > 0, got "
                f"low_freq_factor={self.low_freq_factor}, high_freq_factor={self.high_freq_factor}"
            )

    @classmethod
    def from_dict(cls, config: dict, theta: float | None = None) -> RopeScaling:
        """Reads transformers' format: `{"rope_type": "yarn", "factor": 4.0, ...}`.

        The older key `"type"` works too. A `"rope_theta"` entry (transformers v5 puts
        the base inside `rope_parameters`) must agree with `theta` when one is given.
        """
        config = dict(config)
        rope_type = config.pop("rope_type", None)
        legacy_type = config.pop("type", None)
        rope_type = rope_type or legacy_type or "default"
        if not isinstance(rope_type, str):
            raise TypeError(f"scaling: rope_type must be a string, got {type(rope_type).__name__}")
        if rope_type not in _KEYS_FOR_TYPE:
            raise ValueError(f"scaling: unknown rope_type {rope_type!r}; expected one of {ROPE_TYPES}")
        dict_theta = config.pop("rope_theta", None)
        if dict_theta is not None and theta is not None and float(dict_theta) != float(theta):
            raise ValueError(
                f"scaling: rope_theta={dict_theta} in the dict disagrees with theta={theta}; pass theta={dict_theta}"
            )
        unknown = sorted(set(config) - _KEYS_FOR_TYPE[rope_type])
        if unknown:
            raise ValueError(
                f"scaling: keys {unknown} are not used by rope_type {rope_type!r}; "
                f"it takes {sorted(_KEYS_FOR_TYPE[rope_type]) or 'no parameters'}"
            )
        # transformers writes None for "use the default"; so do we
        config = {k: v for k, v in config.items() if v is not None}
        return cls(rope_type=rope_type, **config)

    def to_dict(self) -> dict:
        """The transformers-format dict, with only the keys this rope type uses."""
        keys = _KEYS_FOR_TYPE[self.rope_type]
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name in keys}
        return {"rope_type": self.rope_type, **{k: v for k, v in values.items() if v is not None}}


def check_ramp_rotations(value: float, name: str) -> None:
    """ValueError naming `name` unless `value`, the upper bound of a ramp in rotations within the trained length,
    is at most MAX_RAMP_ROTATIONS (its lower bound lies below it)."""
    if not value <= MAX_RAMP_ROTATIONS:
        raise ValueError(
            f"{name} must be at most {MAX_RAMP_ROTATIONS:g} rotations within the trained length (no pair of any "
            f"model rotates that often there), got {value!r}"
        )


# what a `scaling` argument takes: None, a transformers-format dict or a RopeScaling
ScalingLike = RopeScaling | dict | None


def as_rope_scaling(scaling: ScalingLike, theta: float | None = None) -> RopeScaling | None:
    """None, a transformers-format dict or a `RopeScaling` -> a validated `RopeScaling` or None."""
    if scaling is None or isinstance(scaling, RopeScaling):
        return scaling
    if isinstance(scaling, dict):
        return RopeScaling.from_dict(scaling, theta=theta)
    raise TypeError(f"scaling must be None, a dict or a RopeScaling, got {type(scaling).__name__}")


__all__ = ["MAX_RAMP_ROTATIONS", "ROPE_TYPES", "RopeScaling", "ScalingLike", "as_rope_scaling", "check_ramp_rotations"]
