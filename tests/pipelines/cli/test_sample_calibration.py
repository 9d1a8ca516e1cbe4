"""`axialrope sample --calibration OUT/calibration.json`: auto takes the calibration's band for the requested
size and aspect, on a diffusers pipeline (a tiny Flux folder) and on this project's own pipeline; each
sample equals the one made with the band's method named on the command line.

The calibration.json files are written here by hand, in the calibration's format (kind, version,
trained_grid, default_extrapolation)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from axialrope.models import create_dit
from axialrope.pipelines.cli import main
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

pytestmark = pytest.mark.usefixtures("one_thread")


def write_calibration(folder, trained_grid, bands, **extra):
    path = folder / "calibration.json"
    content = {
        "kind": "axialrope-calibration",
        "version": 1,
        "reference": "self",
        "trained_grid": list(trained_grid),
        "default_extrapolation": bands,
        **extra,
    }
    path.write_text(json.dumps(content))
    return path


# Flux's tiny folder: 2 px per token; its calibration at 8 x 8 tokens (16 x 16 px), square and tall sizes
FLUX_BANDS = [
    {"up_to_scale": None, "method": "pi", "entropy_scaling": True, "aspect": 1.0},
    {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": False, "aspect": 2.0},
]


def flux_sample(folder, out, height, width, *extra):
    args = ["sample", "--model", str(folder), "--prompt", "a red cube", "--height", str(height), "--width", str(width)]
    return main([*args, "--steps", "2", "--out", str(out), *extra])


@pytest.mark.parametrize("size, method", [((32, 32), "pi+entropy"), ((32, 16), "dype-yarn")])
def test_sample_with_a_calibration_drives_flux_with_the_bands_method(tiny_flux_folder, tmp_path, capsys, size, method):
    calibration = write_calibration(tmp_path, (8, 8), FLUX_BANDS, family="flux")
    assert flux_sample(tiny_flux_folder, tmp_path / "auto.png", *size, "--calibration", str(calibration)) == 0
    assert f"extrapolation auto from {calibration}" in capsys.readouterr().out
    named = ["--extrapolation", method, "--trained-grid", "8", "8"]
    assert flux_sample(tiny_flux_folder, tmp_path / "named.png", *size, *named) == 0
    assert flux_sample(tiny_flux_folder, tmp_path / "none.png", *size, "--extrapolation", "none") == 0
    auto, named, none = (np.asarray(Image.open(tmp_path / f"{n}.png")) for n in ("auto", "named", "none"))
    assert np.array_equal(auto, named)
    assert not np.array_equal(auto, none)


@pytest.fixture(scope="module")
def own_folder(tmp_path_factory):
    """A tiny image pipeline of this project (16 x 16 px, patch 2: 8 x 8 tokens) that records pi in its
    model_index.json, which --calibration replaces."""
    folder = tmp_path_factory.mktemp("own") / "image"
    torch.manual_seed(0)
    model = create_dit("tiny", sample_size=16, patch_size=2, in_channels=3, num_classes=2)
    with torch.no_grad():  # DiT's init zeroes its output layer: perturbed, the samples depend on the positions
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn(parameter.shape))
    bands = [{"up_to_scale": None, "method": "pi", "entropy_scaling": False}]
    AxialDiTPipeline.from_model(model, default_extrapolation=bands).save_pretrained(folder)
    return folder


def own_sample(folder, out, height, width, *extra):
    args = ["sample", "--model", str(folder), "--classes", "0", "--num", "1", "--steps", "2"]
    return main([*args, "--height", str(height), "--width", str(width), "--out", str(out), *extra])


@pytest.mark.parametrize(
    "size, method, shown",
    [
        ((32, 32), "yarn+entropy", "extrapolation auto: yarn (beta_fast=16) + entropy scaling"),
        ((16, 32), "ntk", "extrapolation auto: ntk, 2 steps"),
    ],
)
def test_sample_with_a_calibration_picks_its_band_on_the_projects_own_pipeline(
    own_folder, tmp_path, capsys, size, method, shown
):
    bands = [
        {"up_to_scale": None, "method": "yarn", "entropy_scaling": True, "aspect": 1.0, "options": {"beta_fast": 16}},
        {"up_to_scale": None, "method": "ntk", "entropy_scaling": False, "aspect": 0.5},
    ]
    calibration = write_calibration(tmp_path, (8, 8), bands)
    assert own_sample(own_folder, tmp_path / "auto.png", *size, "--calibration", str(calibration)) == 0
    assert shown in capsys.readouterr().out
    options = ["--option", "beta_fast=16"] if method.startswith("yarn") else []
    assert own_sample(own_folder, tmp_path / "named.png", *size, "--extrapolation", method, *options) == 0
    assert own_sample(own_folder, tmp_path / "recorded.png", *size) == 0  # its model_index.json's pi
    auto, named, recorded = (np.asarray(Image.open(tmp_path / f"{n}.png")) for n in ("auto", "named", "recorded"))
    assert np.array_equal(auto, named)
    assert not np.array_equal(auto, recorded)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--extrapolation", "pi"], "--calibration is read by --extrapolation auto (the default), not"),
        (["--extrapolation", "auto+entropy"], "--calibration is read by --extrapolation auto"),
        (["--entropy-scaling"], "--entropy-scaling with --calibration"),
        (["--option", "beta_fast=16"], "--option beta_fast with --calibration"),
    ],
)
def test_flags_that_a_calibration_does_not_take_are_refused(own_folder, tmp_path, capsys, extra, message):
    calibration = write_calibration(tmp_path, (8, 8), [{"up_to_scale": None, "method": "pi", "entropy_scaling": 0}])
    out = tmp_path / "x.png"
    assert own_sample(own_folder, out, 32, 32, "--calibration", str(calibration), *extra) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_bad_or_unfitting_calibration_is_refused_before_sampling(own_folder, tiny_flux_folder, tmp_path, capsys):
    out = tmp_path / "x.png"
    assert own_sample(own_folder, out, 32, 32, "--calibration", str(tmp_path / "missing.json")) == 2
    assert "missing.json': no such file" in capsys.readouterr().err
    pi = [{"up_to_scale": None, "method": "pi", "entropy_scaling": False}]
    bad = write_calibration(tmp_path, (8, 8), pi, kind="run")
    assert own_sample(own_folder, out, 32, 32, "--calibration", str(bad)) == 2
    assert "not a calibration" in capsys.readouterr().err
    other_grid = write_calibration(tmp_path, (16, 16), pi)
    assert own_sample(own_folder, out, 32, 32, "--calibration", str(other_grid)) == 2
    assert "relative to trained_grid [16, 16], this model's is [8, 8] tokens" in capsys.readouterr().err
    wan = write_calibration(tmp_path, (8, 8), pi, family="wan")
    assert flux_sample(tiny_flux_folder, out, 32, 32, "--calibration", str(wan)) == 2
    assert "measured on 'wan', this model is 'flux'" in capsys.readouterr().err
    assert not out.exists()
