"""The bands `auto` picks from and the one rule that picks: by scale, and by aspect where bands record one."""

from __future__ import annotations

import math

import pytest

from axialrope import Extrapolation
from axialrope.models.extrapolation_bands import (
    band_for_scale,
    check_default_extrapolation,
    choose_band,
    extrapolation_scale,
    grid_aspect,
    select_extrapolation,
)


def band(up_to_scale, method="pi", entropy_scaling=False, **extra):
    return {"up_to_scale": up_to_scale, "method": method, "entropy_scaling": entropy_scaling, **extra}


PLAIN = [band(1.5, "pi"), band(3.0, "yarn", True), band(None, "dype-yarn")]
# square and wide (h / w = 0.5) bands, as a calibration at 2x and 3x of both writes them
ASPECTS = [
    band(2.0, "yarn", aspect=1.0, options={"beta_fast": 16.0}),
    band(None, "ntk", True, aspect=1.0),
    band(2.0, "pi", aspect=0.5),
    band(3.0, "dype-yarn", aspect=0.5, options={"dype_lambda_t": 3.0}),
]


@pytest.mark.parametrize(
    "scale, method",
    [(0.5, "pi"), (1.5, "pi"), (1.50001, "yarn"), (3.0, "yarn"), (3.5, "dype-yarn"), (100.0, "dype-yarn")],
)
def test_bands_without_aspect_pick_by_scale_alone_whatever_the_aspect(scale, method):
    bands = check_default_extrapolation(PLAIN)
    assert band_for_scale(bands, scale)["method"] == method
    for aspect in (None, 0.25, 1.0, 4.0):  # no band has an aspect: the requested one is not looked at
        assert choose_band(bands, scale, aspect) is band_for_scale(bands, scale)


def test_beyond_the_last_closed_band_the_last_band_is_taken():
    bands = check_default_extrapolation(PLAIN[:2])
    assert band_for_scale(bands, 7.0)["method"] == "yarn"


@pytest.mark.parametrize(
    "aspect, scale, method",
    [
        (1.0, 1.5, "yarn"),
        (1.0, 2.5, "ntk"),  # the square None band: and beyond
        (0.5, 2.0, "pi"),
        (0.5, 2.5, "dype-yarn"),
        (0.5, 9.0, "dype-yarn"),  # the wide bands end at 3: their last
        (0.4, 1.2, "pi"),  # |log(0.5 / 0.4)| < |log(1 / 0.4)|: wide
        (0.8, 1.2, "yarn"),  # nearer square than wide
        (2.0, 2.5, "ntk"),  # tall: square is nearer than wide
    ],
)
def test_bands_with_aspect_pick_the_nearest_aspect_then_the_scale(aspect, scale, method):
    assert choose_band(check_default_extrapolation(ASPECTS), scale, aspect)["method"] == method


def test_equally_near_aspects_take_the_first_in_the_list():
    bands = check_default_extrapolation([band(None, "pi", aspect=2.0), band(None, "ntk", aspect=0.5)])
    assert choose_band(bands, 2.0, 1.0)["method"] == "pi"


def test_bands_without_aspect_match_any_aspect_beside_those_with_one():
    """The candidates are the nearest aspect's bands and the bands without one, by up_to_scale."""
    bands = check_default_extrapolation([band(1.5, "ntk"), band(None, "pi"), band(2.0, "yarn", aspect=0.5)])
    assert choose_band(bands, 1.2, 0.5)["method"] == "ntk"  # any aspect's 1.5 comes before the wide 2.0
    assert choose_band(bands, 1.8, 0.5)["method"] == "yarn"
    assert choose_band(bands, 2.5, 0.5)["method"] == "pi"
    assert choose_band(bands, 1.8, None)["method"] == "yarn"  # no aspect asked: every band is a candidate


def test_select_extrapolation_gives_the_bands_method_options_and_entropy_and_none_within():
    bands = check_default_extrapolation(ASPECTS)
    assert select_extrapolation(bands, (8, 8), (16, 16)) == Extrapolation("yarn", beta_fast=16.0)
    assert select_extrapolation(bands, (8, 8), (24, 24)) == Extrapolation("ntk", entropy_scaling=True)
    assert select_extrapolation(bands, (8, 8), (12, 24)) == Extrapolation("dype-yarn", dype_lambda_t=3.0)
    assert select_extrapolation(bands, (8, 8), (8, 8)) == Extrapolation("none")
    assert select_extrapolation(bands, (8, 8), (4, 8)) == Extrapolation("none")
    # video: time counts in the scale, h / w of the last two axes in the aspect
    video = check_default_extrapolation([band(2.0, "ntk", aspect=1.0), band(None, "riflex", aspect=1.0)])
    assert select_extrapolation(video, (4, 8, 8), (8, 8, 8)) == Extrapolation("ntk")
    assert select_extrapolation(video, (4, 8, 8), (12, 8, 8)) == Extrapolation("riflex")


def test_scale_and_aspect_of_grids():
    assert extrapolation_scale((8, 8), (8, 24)) == 3.0
    assert extrapolation_scale((2, 8, 8), (6, 8, 8)) == 3.0
    assert grid_aspect((16, 32)) == 0.5 and grid_aspect((5, 16, 32)) == 0.5 and grid_aspect((7,)) is None


def test_check_keeps_the_optional_keys_and_copies():
    checked = check_default_extrapolation(ASPECTS)
    assert checked == ASPECTS and checked[0] is not ASPECTS[0]
    assert checked[0]["options"] is not ASPECTS[0]["options"]
    assert check_default_extrapolation([band(None, aspect=1)])[0]["aspect"] == 1.0
    assert check_default_extrapolation(None) is None


@pytest.mark.parametrize(
    "bands, match",
    [
        ([band(2.0, aspect=1.0), band(1.5, aspect=1.0)], r"band 1 .*must increase from band to band of its aspect"),
        ([band(None, aspect=1.0), band(2.0, aspect=1.0)], r"band 0 .*only allowed on the last band of its aspect"),
        ([band(None), band(2.0)], r"band 0 .*null .*only allowed on the last band"),
        ([band(2.0, aspect=0.0)], r"band 0 .*aspect must be a positive number"),
        ([band(2.0, aspect=math.inf)], r"aspect must be a positive number"),
        ([band(2.0, aspect="wide")], r"aspect must be a positive number"),
        ([band(2.0, options=[1])], r"options must be a dict of Extrapolation fields"),
        ([band(2.0, options={"method": "ntk"})], r"options must not repeat method or entropy_scaling"),
        ([band(2.0, options={"beta_fast": 16.0})], r"beta_fast=16.0 is not read by method 'pi'"),
        ([band(2.0, "yarn", options={"speed": 1})], r"band 0 .*unknown option 'speed'"),
        ([band(2.0, "yarn", options={"beta_fast": -1.0})], r"band 0 .*beta_fast must be"),
        ([band(2.0, colour="red")], r"unknown key\(s\) 'colour'.*optionally measured, aspect, options"),
    ],
)
def test_bad_bands_are_refused_naming_the_band(bands, match):
    with pytest.raises(ValueError, match=match):
        check_default_extrapolation(bands)


def test_bands_of_different_aspects_are_sorted_each_on_its_own():
    """2.0 after 3.0 is fine when they belong to different aspects; the None of one aspect ends only it."""
    bands = [band(3.0, aspect=1.0), band(None, aspect=1.0), band(2.0, aspect=0.5), band(None, aspect=0.5)]
    assert len(check_default_extrapolation(bands)) == 4
