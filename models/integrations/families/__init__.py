"""One adapter per diffusers model family; `family_of(transformer)` finds the transformer's."""

from __future__ import annotations

from .base import ExtrapolatedRope, Family, StepTime, TrainedGrid
from .cogvideox import CogVideoX
from .flux import Flux
from .hunyuan_video import HunyuanVideo
from .ltx_video import LTXVideo
from .qwen_image import QwenImage
from .wan import Wan

FAMILIES: tuple[Family, ...] = (Flux(), QwenImage(), Wan(), HunyuanVideo(), CogVideoX(), LTXVideo())


def supported_classes() -> list[str]:
    return [name for family in FAMILIES for name in family.class_names]


def family_of(transformer) -> Family:
    """The family of a diffusers transformer, by class (subclasses included); TypeError otherwise."""
    for family in FAMILIES:
        if isinstance(transformer, family.transformer_classes()):
            return family
    raise TypeError(
        f"apply_extrapolation supports diffusers' {', '.join(supported_classes())} (or a pipeline holding one "
        f"as `transformer`), got {type(transformer).__name__}"
    )


__all__ = ["ExtrapolatedRope", "FAMILIES", "Family", "StepTime", "TrainedGrid", "family_of", "supported_classes"]
