"""AxialDiTPipeline's `default_extrapolation` (bands of scale recorded in model_index.json) and
`extrapolation="auto"`, which samples with the band's method for the requested size.

Models here are tiny and randomly initialised (all weights perturbed so the output depends on
positions): the image model is trained at 16 x 16 px = 8 x 8 tokens, the video one at 4 frames of
8 x 8 px = 2 x 4 x 4 tokens.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

import axialrope.pipelines.dit.pipeline as pipeline_module
from axialrope import Extrapolation
from axialrope.models import create_dit
from axialrope.pipelines.dit.bundled import bundled_model_path
from axialrope.pipelines.dit.default_extrapolation import (
    FALLBACK_EXTRAPOLATION,
    band_for_scale,
    check_default_extrapolation,
)
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline
from axialrope.pipelines.dit.runs import pipeline_from_config, write_pipeline_config

STEPS = 3
BANDS = [
    {"up_to_scale": 1.5, "method": "pi", "entropy_scaling": False},
    {"up_to_scale": 3.0, "method": "yarn", "entropy_scaling": True, "measured": "a note on how it was measured"},
    {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": True},
]


def band(up_to_scale, method="pi", entropy_scaling=False, **extra):
    return {"up_to_scale": up_to_scale, "method": method, "entropy_scaling": entropy_scaling, **extra}


@pytest.fixture(scope="module")
def image_model(randomised):
    return randomised(create_dit("tiny", sample_size=16, patch_size=2, in_channels=3, num_classes=3))


@pytest.fixture(scope="module")
def sincos_model(randomised):
    return randomised(
        create_dit("tiny", sample_size=16, patch_size=2, in_channels=3, num_classes=3, position_encoding="sincos")
    )


@pytest.fixture(scope="module")
def video_model(randomised):
    return randomised(
        create_dit(
            "tiny", sample_size=8, num_frames=4, temporal_patch_size=2, patch_size=2, in_channels=3, num_classes=0
        )
    )


def make_pipe(model, bands=None):
    pipe = AxialDiTPipeline.from_model(model, default_extrapolation=bands)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _run(pipe, **kwargs):
    kwargs = {
        "num_inference_steps": STEPS,
        "generator": torch.Generator().manual_seed(0),
        "output_type": "pt",
        **kwargs,
    }
    output = pipe(**kwargs)
    return output.images if output.images is not None else output.frames


# -- resolution -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "size, expected",
    [
        ((16, 16), Extrapolation("none")),  # s = 1: the trained encoding
        ((8, 16), Extrapolation("none")),  # smaller than trained: s < 1
        ((24, 16), Extrapolation("pi")),  # s = 1.5: the first band holds its bound
        ((32, 32), Extrapolation("yarn", entropy_scaling=True)),  # s = 2
        ((8, 48), Extrapolation("yarn", entropy_scaling=True)),  # the largest axis ratio counts: 48 / 16 = 3
        ((50, 16), Extrapolation("dype-yarn", entropy_scaling=True)),  # s = 3.125: the open band
        ((160, 160), Extrapolation("dype-yarn", entropy_scaling=True)),  # s = 10
    ],
)
def test_auto_picks_the_band_that_covers_the_scale(image_model, size, expected):
    pipe = make_pipe(image_model, BANDS)
    assert pipe.resolve_extrapolation(height=size[0], width=size[1]) == expected


def test_beyond_the_last_closed_band_auto_takes_the_last_band(image_model):
    pipe = make_pipe(image_model, BANDS[:2])
    assert pipe.resolve_extrapolation(height=80, width=16) == Extrapolation("yarn", entropy_scaling=True)  # s = 5


def test_auto_defaults_to_the_trained_size_and_counts_the_video_frames(image_model, video_model):
    assert make_pipe(image_model, [band(None, "ntk")]).resolve_extrapolation() == Extrapolation("none")
    pipe = make_pipe(video_model, [band(1.5, "ntk"), band(None, "riflex", True)])
    assert pipe.resolve_extrapolation(num_frames=4, height=8, width=8) == Extrapolation("none")
    assert pipe.resolve_extrapolation(num_frames=6) == Extrapolation("ntk")  # 3 / 2 tokens in time
    assert pipe.resolve_extrapolation(num_frames=8) == Extrapolation("riflex", entropy_scaling=True)


def test_entropy_scaling_true_forces_it_on(image_model):
    pipe = make_pipe(image_model, BANDS)
    assert pipe.resolve_extrapolation(24, 16, entropy_scaling=True) == Extrapolation("pi", entropy_scaling=True)
    assert pipe.resolve_extrapolation(32, 32, entropy_scaling=True) == Extrapolation("yarn", entropy_scaling=True)
    with pytest.raises(TypeError, match="entropy_scaling must be a bool"):
        pipe.resolve_extrapolation(32, 32, entropy_scaling=1)
    with pytest.raises(TypeError, match="entropy_scaling must be a bool"):
        _run(pipe, class_labels=[0], height=32, width=32, entropy_scaling="yes")


@pytest.mark.parametrize(
    "size, expected",
    [
        ((32, 32), Extrapolation("yarn", beta_fast=16.0)),  # square, s = 2
        ((48, 48), Extrapolation("dype-yarn", entropy_scaling=True)),  # square, s = 3
        ((16, 32), Extrapolation("pi")),  # wide (h / w = 0.5), s = 2
        ((16, 48), Extrapolation("ntk", entropy_scaling=True)),  # h / w = 1 / 3: nearer wide than square
        ((16, 16), Extrapolation("none")),
    ],
)
def test_auto_picks_by_aspect_and_scale_with_the_bands_options(image_model, size, expected):
    bands = [
        band(2.0, "yarn", aspect=1.0, options={"beta_fast": 16.0}),
        band(None, "dype-yarn", True, aspect=1.0),
        band(2.0, "pi", aspect=0.5),
        band(None, "ntk", True, aspect=0.5),
    ]
    pipe = make_pipe(image_model, bands)
    assert pipe.resolve_extrapolation(height=size[0], width=size[1]) == expected


def test_auto_samples_with_the_chosen_bands_method(image_model):
    """A wide call under aspect bands samples exactly as the wide band's method given by name."""
    pipe = make_pipe(image_model, [band(None, "yarn", aspect=1.0), band(None, "ntk", True, aspect=0.5)])
    auto = _run(pipe, class_labels=[0], height=16, width=32)
    assert torch.equal(auto, _run(pipe, class_labels=[0], height=16, width=32, extrapolation="ntk+entropy"))
    assert not torch.equal(auto, _run(pipe, class_labels=[0], height=16, width=32, extrapolation="yarn"))


def test_a_bad_size_gets_the_pipelines_own_error(image_model):
    pipe = make_pipe(image_model, BANDS)
    with pytest.raises(ValueError, match="height=17 is not divisible by the model's patch size 2"):
        pipe.resolve_extrapolation(height=17)
    with pytest.raises(ValueError, match="num_frames given, but this is an image model"):
        pipe.resolve_extrapolation(num_frames=8)


# -- the fallback -------------------------------------------------------------------------------------


def test_the_fallback_is_a_valid_band_list_ending_open():
    assert check_default_extrapolation(FALLBACK_EXTRAPOLATION) == FALLBACK_EXTRAPOLATION
    assert FALLBACK_EXTRAPOLATION[-1]["up_to_scale"] is None  # covers every scale


@pytest.mark.parametrize("recorded", [None, []])
def test_a_pipeline_without_recorded_bands_uses_the_fallback(image_model, recorded, monkeypatch):
    pipe = make_pipe(image_model, recorded)
    expected = band_for_scale(FALLBACK_EXTRAPOLATION, 2.0)
    assert pipe.resolve_extrapolation(32, 32) == Extrapolation(
        expected["method"], entropy_scaling=expected["entropy_scaling"]
    )
    # the fallback is looked up when resolving, so replacing it (with measured bands) changes what auto picks
    monkeypatch.setattr(pipeline_module, "FALLBACK_EXTRAPOLATION", [band(1.5, "ntk"), band(None, "kappa-pi", True)])
    assert pipe.resolve_extrapolation(24, 16) == Extrapolation("ntk")
    assert pipe.resolve_extrapolation(32, 32) == Extrapolation("kappa-pi", entropy_scaling=True)
    assert pipe.resolve_extrapolation(16, 16) == Extrapolation("none")


# -- sampling with auto --------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(32, 32), (24, 16), (56, 16)])  # yarn + entropy, pi, dype-yarn + entropy
def test_auto_samples_exactly_what_the_resolved_method_samples(image_model, size):
    pipe = make_pipe(image_model, BANDS)
    kwargs = dict(class_labels=[0, 2], height=size[0], width=size[1], guidance_scale=2.0)
    resolved = pipe.resolve_extrapolation(*size)
    auto = _run(pipe, extrapolation="auto", **kwargs)
    assert torch.equal(auto, _run(pipe, extrapolation=resolved, **kwargs))
    assert torch.equal(auto, _run(pipe, **kwargs))  # auto is the default
    assert not torch.allclose(auto, _run(pipe, extrapolation="none", **kwargs))  # and it is not plain


def test_auto_with_entropy_scaling_samples_the_method_with_it(image_model):
    pipe = make_pipe(image_model, BANDS)
    kwargs = dict(class_labels=[1], height=24, width=16)
    forced = _run(pipe, extrapolation="auto", entropy_scaling=True, **kwargs)
    assert torch.equal(forced, _run(pipe, extrapolation="pi", entropy_scaling=True, **kwargs))
    assert not torch.allclose(forced, _run(pipe, extrapolation="pi", **kwargs))


def test_auto_at_the_trained_size_keeps_the_trained_encoding(image_model):
    pipe = make_pipe(image_model, [band(None, "yarn", True)])
    original = pipe.transformer.rope_config
    seen = []
    handle = pipe.transformer.register_forward_pre_hook(lambda module, args: seen.append(module.rope_config))
    try:
        _run(pipe, class_labels=[0])
    finally:
        handle.remove()
    assert len(seen) == STEPS and all(config is original for config in seen)


def test_auto_on_a_video_model_samples_the_resolved_method(video_model):
    pipe = make_pipe(video_model, [band(None, "riflex", True)])
    resolved = pipe.resolve_extrapolation(num_frames=8)
    assert resolved == Extrapolation("riflex", entropy_scaling=True)
    assert torch.equal(_run(pipe, num_frames=8), _run(pipe, num_frames=8, extrapolation=resolved))


def test_a_sincos_model_gets_none_with_the_bands_entropy_scaling(sincos_model):
    pipe = make_pipe(sincos_model, [band(2.0, "pi", False), band(None, "dype-yarn", True)])
    assert pipe.resolve_extrapolation(32, 32) == Extrapolation("none")
    assert pipe.resolve_extrapolation(48, 48) == Extrapolation("none", entropy_scaling=True)
    kwargs = dict(class_labels=[0], height=48, width=48)
    auto = _run(pipe, **kwargs)  # a RoPE method here would be refused: "sin-cos"
    assert torch.equal(auto, _run(pipe, extrapolation="none", entropy_scaling=True, **kwargs))
    assert not torch.allclose(auto, _run(pipe, extrapolation="none", **kwargs))
    with pytest.raises(ValueError, match="sin-cos"):  # explicit methods are still refused
        _run(pipe, extrapolation="dype-yarn", **kwargs)


# -- the config: saved, loaded, edited ------------------------------------------------------------------


def test_bands_survive_save_pretrained_and_from_pretrained(image_model, tmp_path):
    pipe = make_pipe(image_model)
    pipe.set_default_extrapolation(BANDS)
    assert pipe.config.default_extrapolation == BANDS
    pipe.save_pretrained(tmp_path / "pipe")
    index = json.loads((tmp_path / "pipe" / "model_index.json").read_text())
    assert index["default_extrapolation"] == BANDS  # plain JSON, "measured" note included
    loaded = AxialDiTPipeline.from_pretrained(tmp_path / "pipe")
    assert loaded.config.default_extrapolation == BANDS
    assert loaded.resolve_extrapolation(32, 32) == Extrapolation("yarn", entropy_scaling=True)
    # a training run's pipeline-config/ carries them into every checkpoint's pipeline too
    config = pipeline_from_config(write_pipeline_config(pipe, tmp_path / "pipeline-config"), image_model)
    assert config.config.default_extrapolation == BANDS


def test_setting_bands_replaces_them_and_none_removes_them(image_model):
    pipe = make_pipe(image_model, BANDS)
    pipe.set_default_extrapolation([band(None, "ntk", True)])
    assert pipe.resolve_extrapolation(32, 32) == Extrapolation("ntk", entropy_scaling=True)
    pipe.set_default_extrapolation(None)
    assert pipe.config.default_extrapolation is None
    fallback = band_for_scale(FALLBACK_EXTRAPOLATION, 2.0)
    assert pipe.resolve_extrapolation(32, 32).method == fallback["method"]


def test_whole_numbers_are_stored_as_floats_and_a_tuple_as_a_list(image_model):
    pipe = make_pipe(image_model, (band(2), band(None, "yarn")))
    assert pipe.config.default_extrapolation == [band(2.0), band(None, "yarn")]
    assert isinstance(pipe.config.default_extrapolation[0]["up_to_scale"], float)


def test_the_bundled_pipelines_record_what_the_benchmark_measured():
    """benchmarks/extrapolation.py writes each bundled pipeline's bands and the fallback's; the code agrees."""
    measured = json.loads(
        (Path(__file__).parents[3] / "benchmarks" / "results" / "extrapolation_defaults.json").read_text()
    )
    essentials = lambda bands: [{k: b[k] for k in ("up_to_scale", "method", "entropy_scaling")} for b in bands]  # noqa: E731
    assert essentials(FALLBACK_EXTRAPOLATION) == essentials(measured.pop("fallback"))
    assert set(measured) == {"shapes-rope", "shapes-sincos", "textures-rope", "textures-sincos", "moving-shapes-rope"}
    for name, bands in measured.items():
        assert AxialDiTPipeline.from_pretrained(bundled_model_path(name)).config.default_extrapolation == bands


def test_a_model_index_without_the_key_loads(image_model, tmp_path):
    make_pipe(image_model, BANDS).save_pretrained(tmp_path / "pipe")
    index_file = tmp_path / "pipe" / "model_index.json"
    index = json.loads(index_file.read_text())
    del index["default_extrapolation"]
    index_file.write_text(json.dumps(index))
    loaded = AxialDiTPipeline.from_pretrained(tmp_path / "pipe")
    assert loaded.config.default_extrapolation is None
    fallback = band_for_scale(FALLBACK_EXTRAPOLATION, 2.0)
    assert loaded.resolve_extrapolation(32, 32) == Extrapolation(
        fallback["method"], entropy_scaling=fallback["entropy_scaling"]
    )


def test_an_edited_model_index_with_a_bad_band_fails_clearly_at_load(tmp_path):
    folder = shutil.copytree(bundled_model_path("shapes-rope"), tmp_path / "pipe")
    index = json.loads((folder / "model_index.json").read_text())
    index["default_extrapolation"] = [band(2.0, "dype"), band(None, "yarn")]
    (folder / "model_index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=r"default_extrapolation band 0 .*'dype'.*method must be one of"):
        AxialDiTPipeline.from_pretrained(folder)
    index["default_extrapolation"] = [band(None, "yarn"), band(None, "pi")]
    (folder / "model_index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="default_extrapolation band 0 .*only allowed on the last band"):
        AxialDiTPipeline.from_pretrained(folder)


# -- bad bands -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bands, error, match",
    [
        ("pi", TypeError, "default_extrapolation must be a list"),
        (band(None), TypeError, "default_extrapolation must be a list"),
        ([band(2.0, "yarnn")], ValueError, r"band 0 .*'yarnn'.*method must be one of"),
        ([band(2.0, "auto")], ValueError, "method must be one of"),  # auto is not a method to record
        ([band(2.0, "dype-pi")], ValueError, "kappa-pi"),  # a renamed method: Extrapolation's own message
        ([band(2.0, 3)], ValueError, "method must be a method name"),
        ([band(0.0)], ValueError, "up_to_scale must be a positive number"),
        ([band(-1.0)], ValueError, "up_to_scale must be a positive number"),
        ([band(math.inf)], ValueError, "up_to_scale must be a positive number"),
        ([band(math.nan)], ValueError, "up_to_scale must be a positive number"),
        ([band("2")], ValueError, "up_to_scale must be a positive number"),
        ([band(True)], ValueError, "up_to_scale must be a positive number"),
        ([band(2.0), band(2.0, "ntk")], ValueError, r"band 1 .*up_to_scale must increase"),
        ([band(3.0), band(2.0, "ntk")], ValueError, r"band 1 .*up_to_scale must increase"),
        ([band(None), band(2.0, "ntk")], ValueError, r"band 0 .*only allowed on the last band"),
        ([band(2.0, "pi", "yes")], ValueError, "entropy_scaling must be true or false"),
        ([band(2.0, "pi", None)], ValueError, "entropy_scaling must be true or false"),
        ([band(2.0, "pi", False, measured=3)], ValueError, "measured must be a string"),
        ([band(2.0, "pi", False, entropy=True)], ValueError, r"unknown key\(s\) 'entropy'"),
        ([{"up_to_scale": 2.0, "method": "pi"}], ValueError, "missing entropy_scaling"),
        (["pi"], ValueError, "band 0 'pi': a band must be a dict"),
        ([band(2.0), None], ValueError, "band 1 None: a band must be a dict"),
        ([band(None, "riflex")], ValueError, "riflex extrapolates video length; this is an image model"),
    ],
)
def test_bad_bands_are_refused_naming_the_band(image_model, bands, error, match):
    with pytest.raises(error, match=match) as raised:
        make_pipe(image_model, bands)
    assert "default_extrapolation" in str(raised.value)
    pipe = make_pipe(image_model, BANDS)
    with pytest.raises(error, match=match):
        pipe.set_default_extrapolation(bands)
    assert pipe.config.default_extrapolation == BANDS  # a refused setting changes nothing
