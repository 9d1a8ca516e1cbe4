"""The extrapolation names that `AxialDiTPipeline(extrapolation=...)` and `axialrope sample --extrapolation` take.

A name is a method of `axialrope.EXTRAPOLATION_METHODS` or "auto" (the pipeline's pick for the size), either
with "+entropy" for entropy scaling: "yarn", "yarn+entropy", "auto", "auto+entropy".

    make_extrapolation("yarn+entropy")                       # Extrapolation("yarn", entropy_scaling=True)
    make_extrapolation("auto", auto=pipe_resolve)            # what pipe_resolve(entropy_scaling=False) returns
"""

from __future__ import annotations

from collections.abc import Callable

from axialrope import Extrapolation
from axialrope.extrapolation import ENTROPY_SUFFIX, split_name

AUTO = "auto"  # the name that picks a method from the pipeline's `default_extrapolation` for the requested size


def is_auto(name: str | Extrapolation | None) -> bool:
    """True for "auto" and "auto+entropy"."""
    return isinstance(name, str) and split_name(name)[0] == AUTO


def make_extrapolation(
    extrapolation: str | Extrapolation | None,
    entropy_scaling: bool = False,
    options: dict | None = None,
    auto: Callable[..., Extrapolation] | None = None,
) -> Extrapolation:
    """An `Extrapolation` from a name (see the module docstring), an `Extrapolation` itself, or None ("none").
    Names are read by the core's one parser, `Extrapolation.from_name`; this adds "auto" and the flag.

    Args:
        entropy_scaling: also scale attention logits (as "+entropy" does); with an `Extrapolation` it must
            already have entropy_scaling set.
        options: `Extrapolation` keyword arguments on top of the named method (beta_fast=16.0, ...).
        auto: what "auto" resolves to, called as auto(entropy_scaling=bool); without it "auto" is refused
            as an unknown method (a caller that cannot resolve it must not sample something else under its name).
    """
    if not isinstance(entropy_scaling, bool):
        raise TypeError(f"entropy_scaling must be a bool, got {type(entropy_scaling).__name__}")
    options = dict(options or {})
    if isinstance(extrapolation, Extrapolation):
        if entropy_scaling and not extrapolation.entropy_scaling:
            raise ValueError("entropy_scaling=True with an Extrapolation: set entropy_scaling on the Extrapolation")
        return Extrapolation.from_name(extrapolation, **options)
    if extrapolation is None:
        extrapolation = "none"
    if not isinstance(extrapolation, str):
        raise TypeError(f"extrapolation must be a method name or an axialrope.Extrapolation, got {extrapolation!r}")
    if is_auto(extrapolation) and auto is not None:
        resolved = auto(entropy_scaling=entropy_scaling or split_name(extrapolation)[1])
        return Extrapolation.from_name(resolved, **options)
    if entropy_scaling:
        options["entropy_scaling"] = True
    return Extrapolation.from_name(extrapolation, **options)


__all__ = ["AUTO", "ENTROPY_SUFFIX", "is_auto", "make_extrapolation"]
