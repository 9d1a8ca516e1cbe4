"""The registry of model families `apply_extrapolation` reaches (declared in `families/`).

`family_of(model)` finds a model's family by its class (subclasses too); `family_for_class(name)`
by a class name (e.g. the transformer named in a pipeline's model_index.json).
"""

from __future__ import annotations

from axialrope import EXTRAPOLATION_METHODS

from .families import FAMILIES
from .family import Family


def supported_classes() -> list[str]:
    return [name for family in FAMILIES for name in family.classes]


def family_for_class(name: str | None) -> Family | None:
    """The family covering the class called `name`, or None."""
    return next((family for family in FAMILIES if name in family.classes), None)


def family_of(model) -> Family:
    """The family of a diffusers model (its class or a base class is declared).

    Raises:
        TypeError: no family covers it (the message names the supported classes).
    """
    for cls in type(model).__mro__:
        family = family_for_class(cls.__name__)
        if family is not None:
            return family
    raise TypeError(f"apply_extrapolation supports {', '.join(supported_classes())} (and subclasses); "
                    f"got {type(model).__name__}")


def methods_for(family: Family) -> list[str]:
    """The extrapolation methods that apply to a family (riflex extrapolates video length)."""
    return [m for m in EXTRAPOLATION_METHODS if m != "riflex" or family.video]


__all__ = ["FAMILIES", "family_for_class", "family_of", "methods_for", "supported_classes"]
