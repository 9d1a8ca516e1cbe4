"""apply_extrapolation(..., "auto", calibration=...): each call gets the method of the calibration's band
for its token grid (scale and aspect), exactly as if that method had been applied on its own; the trained
grid stays the untouched model's, remove() restores it, and bad calibrations are refused before any change.

The calibrations are written here by hand, in calibration.json's format (models/calibration_file.py)."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation

T = 700.0  # a timestep mid-schedule on Wan's 0-1000 scale (its timestep-dependent methods read it)
FLUX_T = 0.7  # Flux's transformer takes sigma


def calibration(trained_grid, bands, **extra) -> dict:
    return {
        "kind": "axialrope-calibration",
        "version": 1,
        "reference": "self",
        "trained_grid": list(trained_grid),
        "default_extrapolation": bands,
        **extra,
    }


# Flux, trained (tiny) at 4 x 4 tokens: square sizes up to 2x take yarn with beta_fast 16, beyond it ntk +
# entropy; wide sizes (h / w = 0.5) up to 2x pi, beyond it dype-yarn
FLUX_BANDS = [
    {"up_to_scale": 2.0, "method": "yarn", "entropy_scaling": False, "aspect": 1.0, "options": {"beta_fast": 16.0}},
    {"up_to_scale": None, "method": "ntk", "entropy_scaling": True, "aspect": 1.0},
    {"up_to_scale": 2.0, "method": "pi", "entropy_scaling": False, "aspect": 0.5},
    {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": False, "aspect": 0.5},
]
# Wan, trained at 3 x 4 x 4 tokens, no aspect: up to 1.5x kappa-yarn (timestep-dependent), beyond riflex
WAN_BANDS = [
    {"up_to_scale": 1.5, "method": "kappa-yarn", "entropy_scaling": True, "measured": "by hand"},
    {"up_to_scale": None, "method": "riflex", "entropy_scaling": False},
]


def outputs(model, tiny, name, grid, timestep):
    return tiny.run(model, tiny.TINY[name], grid, timestep)


@pytest.mark.parametrize(
    "grid, expected",
    [
        ((6, 6), Extrapolation("yarn", beta_fast=16.0)),  # square, scale 1.5
        ((12, 12), Extrapolation("ntk", entropy_scaling=True)),  # square, scale 3
        ((4, 8), Extrapolation("pi")),  # wide, scale 2
        ((5, 12), Extrapolation("dype-yarn")),  # h / w 0.42: nearest the wide bands, scale 3
    ],
)
def test_each_flux_call_gets_its_bands_method_as_if_applied_alone(tiny, grid, expected):
    model = tiny.make_flux()
    with apply_extrapolation(model, expected, trained_grid=(4, 4)):
        alone = outputs(model, tiny, "flux", grid, FLUX_T)
    with apply_extrapolation(model, "auto", calibration=calibration((4, 4), FLUX_BANDS)) as handle:
        assert handle.extrapolation is None and handle.extrapolation_for(grid) == expected
        assert handle.trained_grid == (4, 4)
        chosen = outputs(model, tiny, "flux", grid, FLUX_T)
    assert torch.equal(chosen, alone)
    assert expected.method != "none" and not torch.equal(chosen, outputs(model, tiny, "flux", grid, FLUX_T))


def test_one_patched_flux_serves_two_sizes_each_with_its_band(tiny):
    """The choice is per call: the same handle gives a square and a wide call their own methods."""
    model = tiny.make_flux()
    expected = {}
    for grid, method in (((6, 6), Extrapolation("yarn", beta_fast=16.0)), ((4, 8), Extrapolation("pi"))):
        with apply_extrapolation(model, method, trained_grid=(4, 4)):
            expected[grid] = outputs(model, tiny, "flux", grid, FLUX_T)
    with apply_extrapolation(model, "auto", calibration=calibration((4, 4), FLUX_BANDS)):
        for grid in ((6, 6), (4, 8), (6, 6)):
            assert torch.equal(outputs(model, tiny, "flux", grid, FLUX_T), expected[grid])


def test_a_sega_band_reads_each_calls_latent_as_sega_applied_alone(tiny):
    """sega's magnitudes come from the call's latent: under auto the latent is taken for a band that needs it."""
    model = tiny.make_flux()
    bands = [
        {"up_to_scale": 2.0, "method": "pi", "entropy_scaling": False},
        {"up_to_scale": None, "method": "sega", "entropy_scaling": False},
    ]
    for grid, method in (((12, 12), "sega"), ((6, 6), "pi")):
        with apply_extrapolation(model, method, trained_grid=(4, 4)):
            alone = outputs(model, tiny, "flux", grid, FLUX_T)
        with apply_extrapolation(model, "auto", calibration=calibration((4, 4), bands)):
            assert torch.equal(outputs(model, tiny, "flux", grid, FLUX_T), alone)


def test_at_and_inside_the_trained_grid_auto_is_the_untouched_model_and_remove_restores_it(tiny):
    model = tiny.make_flux()
    untouched = {grid: outputs(model, tiny, "flux", grid, FLUX_T) for grid in ((4, 4), (3, 4), (6, 6))}
    handle = apply_extrapolation(model, "auto", calibration=calibration((4, 4), FLUX_BANDS))
    assert handle.extrapolation_for((4, 4)) == Extrapolation("none")
    for grid in ((4, 4), (3, 4)):
        assert torch.equal(outputs(model, tiny, "flux", grid, FLUX_T), untouched[grid])
    assert not torch.equal(outputs(model, tiny, "flux", (6, 6), FLUX_T), untouched[(6, 6)])
    handle.remove()
    for grid, output in untouched.items():
        assert torch.equal(outputs(model, tiny, "flux", grid, FLUX_T), output)
    assert "auto" in repr(handle)


@pytest.mark.parametrize(
    "grid, expected",
    [
        ((4, 6, 6), Extrapolation("kappa-yarn", entropy_scaling=True)),  # scale 1.5 (h, w), h / w 1
        ((3, 4, 8), Extrapolation("riflex")),  # scale 2 in width
        ((9, 4, 4), Extrapolation("riflex")),  # scale 3 in time
    ],
)
def test_each_wan_call_gets_its_bands_method_as_if_applied_alone(tiny, grid, expected):
    model = tiny.make_wan()
    with apply_extrapolation(model, expected, trained_grid=(3, 4, 4)) as alone_handle:
        alone = outputs(model, tiny, "wan", grid, T)
        k = alone_handle.extrapolation.riflex_index
    with apply_extrapolation(model, "auto", calibration=calibration((3, 4, 4), WAN_BANDS)) as handle:
        assert handle.extrapolation_for(grid).riflex_index == k  # riflex's k resolved for the model, as alone
        chosen = outputs(model, tiny, "wan", grid, T)
    assert torch.equal(chosen, alone)


def test_wan_at_its_trained_grid_is_bit_identical_and_restored(tiny):
    model = tiny.make_wan()
    untouched = outputs(model, tiny, "wan", (3, 4, 4), T)
    with apply_extrapolation(model, "auto", calibration=calibration((3, 4, 4), WAN_BANDS)):
        assert torch.equal(outputs(model, tiny, "wan", (3, 4, 4), T), untouched)
    assert torch.equal(outputs(model, tiny, "wan", (3, 4, 4), T), untouched)


def test_the_calibration_is_read_from_a_file_and_its_trained_grid_taken(tiny, tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(calibration((4, 4), FLUX_BANDS, family="flux", cells=[{"any": "thing"}])))
    model = tiny.make_flux()
    with apply_extrapolation(model, Extrapolation("pi"), trained_grid=(4, 4)):
        alone = outputs(model, tiny, "flux", (4, 8), FLUX_T)
    with apply_extrapolation(model, "auto", calibration=str(path)) as handle:
        assert handle.trained_grid == (4, 4) and handle.calibration.bands[2]["method"] == "pi"
        assert torch.equal(outputs(model, tiny, "flux", (4, 8), FLUX_T), alone)
    with apply_extrapolation(model, "auto", calibration=path, trained_grid=(4, 4)):  # the same grid: fine
        assert torch.equal(outputs(model, tiny, "flux", (4, 8), FLUX_T), alone)


def test_a_deep_copy_carries_the_choice(tiny):
    model = tiny.make_flux()
    with apply_extrapolation(model, "pi", trained_grid=(4, 4)):
        alone = outputs(model, tiny, "flux", (4, 8), FLUX_T)
    apply_extrapolation(model, "auto", calibration=calibration((4, 4), FLUX_BANDS))
    assert torch.equal(outputs(copy.deepcopy(model), tiny, "flux", (4, 8), FLUX_T), alone)


# -- refused --------------------------------------------------------------------------------------------------


def bad_file(tmp_path, text: str):
    path = tmp_path / "calibration.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda tmp: tmp / "missing.json", r"calibration '.*missing.json': no such file"),
        (lambda tmp: bad_file(tmp, "{not json"), r"calibration '.*calibration.json': not valid JSON"),
        (lambda tmp: bad_file(tmp, json.dumps({"kind": "report"})), r"'.*calibration.json': not a calibration"),
        (lambda tmp: bad_file(tmp, "[1, 2]"), r"not a calibration"),
        (
            lambda tmp: bad_file(tmp, json.dumps(calibration((4, 4), [{"up_to_scale": 2, "method": "dype"}]))),
            r"calibration '.*calibration.json': default_extrapolation band 0 .* missing entropy_scaling",
        ),
        (lambda tmp: calibration((4, 4), []), r"the calibration dict: its default_extrapolation holds no band"),
        (lambda tmp: calibration((4, 0), FLUX_BANDS), r"trained_grid must be \[h, w\] or \[t, h, w\]"),
        (lambda tmp: {**calibration((4, 4), FLUX_BANDS), "version": 7}, r"version 7 is not one"),
        (lambda tmp: calibration((4, 4), FLUX_BANDS, family="wan"), r"measured on 'wan', this model is 'flux'"),
        (lambda tmp: calibration((3, 4, 4), FLUX_BANDS), r"trained_grid \[3, 4, 4\] is not \(h, w\)"),
        (
            lambda tmp: calibration((4, 4), [{"up_to_scale": None, "method": "riflex", "entropy_scaling": False}]),
            r"band 0 .*riflex extrapolates video length",
        ),
        (
            lambda tmp: calibration(
                (4, 4), [{"up_to_scale": None, "method": "pi", "entropy_scaling": False, "options": {"beta_fast": 8}}]
            ),
            r"band 0 .*beta_fast=8 is not read by method 'pi'",
        ),
    ],
)
def test_a_bad_calibration_is_refused_naming_it_and_nothing_changes(tiny, tmp_path, make, match):
    model = tiny.make_flux()
    rope = model.pos_embed
    with pytest.raises(ValueError, match=match):
        apply_extrapolation(model, "auto", calibration=make(tmp_path))
    assert model.pos_embed is rope and "_axialrope_extrapolation" not in vars(model)


def test_auto_needs_a_calibration_and_a_calibration_needs_auto(tiny):
    model = tiny.make_flux()
    with pytest.raises(ValueError, match='method "auto" needs calibration='):
        apply_extrapolation(model, "auto")
    with pytest.raises(ValueError, match='calibration is read by method="auto" only'):
        apply_extrapolation(model, "pi", calibration=calibration((4, 4), FLUX_BANDS))
    with pytest.raises(TypeError, match="takes each band's own options from the calibration; got beta_fast"):
        apply_extrapolation(model, "auto", calibration=calibration((4, 4), FLUX_BANDS), beta_fast=8.0)
    with pytest.raises(ValueError, match=r"relative to trained_grid \[4, 4\], but the call gives \[8, 8\]"):
        apply_extrapolation(model, "auto", calibration=calibration((4, 4), FLUX_BANDS), trained_grid=(8, 8))
    with pytest.raises(TypeError, match="calibration must be the path of a calibration.json"):
        apply_extrapolation(model, "auto", calibration=3)


def test_a_band_whose_method_the_family_refuses_is_named(tiny):
    """ERNIE-Image passes its attention a table of angles, with no room for a gain: yarn (whose temperature is
    one) is refused there, and the message names the band that asks for it; nothing changes."""
    bands = [
        {"up_to_scale": 2.0, "method": "pi", "entropy_scaling": False},
        {"up_to_scale": None, "method": "yarn", "entropy_scaling": False},
    ]
    model = tiny.TINY["ernie-image"].make()
    rope = model.pos_embed
    with pytest.raises(ValueError, match=r"calibration band 1 .*'yarn'.*yarn puts a gain on the rope tables"):
        apply_extrapolation(model, "auto", calibration=calibration((4, 4), bands))
    assert model.pos_embed is rope and "_axialrope_extrapolation" not in vars(model)


def flux_pipe(folder):
    from diffusers import FluxPipeline

    pipe = FluxPipeline.from_pretrained(folder)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def schedule(pipe, height, width) -> torch.Tensor:
    """The sigmas of one 2-step sample at height x width px (the shift the schedule was set with shows there)."""
    pipe("a cat", height=height, width=width, num_inference_steps=2, max_sequence_length=8, output_type="latent")
    return pipe.scheduler.sigmas.clone()


def test_flux_shift_cap_follows_each_calls_band(tiny_flux_folder):
    """All bands dype-*: the cap is on as with dype-yarn alone; none: off; a mix: each pipeline call is capped
    exactly where its size's band is dype-*, as that method applied alone would do."""
    from axialrope.models.integrations.ropes.flux import is_capped

    pipe = flux_pipe(tiny_flux_folder)
    grid = (4, 4)  # 8 x 8 px: the tiny VAE (no downsampling) and Flux's 2 x 2 packing make 2 px a token
    all_dype = [{"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": False}]
    with apply_extrapolation(pipe, "auto", calibration=calibration(grid, all_dype)) as handle:
        assert is_capped(pipe.scheduler) and handle.family.name == "flux"
    assert not is_capped(pipe.scheduler)
    with apply_extrapolation(pipe, "auto", calibration=calibration(grid, FLUX_BANDS[:2])):
        assert not is_capped(pipe.scheduler)  # yarn and ntk: no cap, as they have on their own
    with apply_extrapolation(pipe, "auto", calibration=calibration(grid, FLUX_BANDS), shift_cap=False):
        assert not is_capped(pipe.scheduler)
    for size, method in (((8, 16), "pi"), ((10, 24), "dype-yarn"), ((12, 12), "yarn")):
        with apply_extrapolation(pipe, method, trained_grid=grid):
            alone = schedule(pipe, *size)
        with apply_extrapolation(pipe, "auto", calibration=calibration(grid, FLUX_BANDS)):
            assert is_capped(pipe.scheduler)
            assert torch.equal(schedule(pipe, *size), alone)
    assert not is_capped(pipe.scheduler)
    with apply_extrapolation(pipe, "auto", calibration=calibration(grid, FLUX_BANDS)):
        with pytest.raises(ValueError, match="needs the call's size.*shift_cap=True or shift_cap=False"):
            pipe.scheduler.set_timesteps(2, mu=1.0)  # outside a call of the patched pipeline: no size recorded
    with apply_extrapolation(pipe, "dype-yarn", trained_grid=grid):
        capped = schedule(pipe, 10, 24)
    with apply_extrapolation(pipe, "pi", trained_grid=grid):
        assert not torch.equal(schedule(pipe, 10, 24), capped)  # the test tells the two apart


@pytest.mark.parametrize("grid", [(6, 6), (12, 12)])
def test_qwen_reads_dype_time_by_the_authors_code_only_in_a_dype_band(tiny, grid):
    """Qwen-Image's dype-* methods follow DyPE's Qwen code (its own time rule, the trained text table);
    under "auto" a call in a kappa-yarn band keeps the family's time rule, one in a dype-yarn band the
    authors': each as the method applied alone."""
    bands = [
        {"up_to_scale": 2.0, "method": "kappa-yarn", "entropy_scaling": False},
        {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": False},
    ]
    model = tiny.make_qwen()
    method = "kappa-yarn" if grid == (6, 6) else "dype-yarn"
    with apply_extrapolation(model, method, trained_grid=(4, 4)):
        alone = outputs(model, tiny, "qwen-image", grid, FLUX_T)
    with apply_extrapolation(model, "auto", calibration=calibration((4, 4), bands)):
        assert torch.equal(outputs(model, tiny, "qwen-image", grid, FLUX_T), alone)
