"""Mochi: learned frequencies take only the methods that move positions, and its timestep counts up."""

import pytest

from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import family_for_class, methods_for


def test_only_the_methods_moving_positions_apply_and_the_others_name_them(tiny):
    model = tiny.TINY["mochi"].make()
    family = family_for_class("MochiTransformer3DModel")
    assert methods_for(family) == ["none", "pi", "kappa-pi"]
    for method in ("ntk", "yarn", "dype-ntk", "kappa-yarn", "riflex"):
        with pytest.raises(ValueError, match=f"{method} has no meaning for Mochi.*methods are none, pi, kappa-pi"):
            apply_extrapolation(model, method)
    assert not hasattr(model, "_axialrope_extrapolation")


def test_the_timestep_is_zero_at_pure_noise():
    time = family_for_class("MochiTransformer3DModel").time
    assert (time.to_t(0.0), time.to_t(250.0), time.to_t(1000.0)) == (1.0, 0.75, 0.0)
    assert time.timestep_at(0.75) == 250.0
