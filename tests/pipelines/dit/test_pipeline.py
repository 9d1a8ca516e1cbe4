"""AxialDiTPipeline: shapes and outputs, save/load, extrapolation plans applied per step, restore, bad input.

Models here are tiny and randomly initialised (all weights perturbed so the output depends on
positions); sample quality is irrelevant.
"""

from __future__ import annotations

import dataclasses
from itertools import pairwise

import numpy as np
import PIL.Image
import pytest
import torch

from axialrope import Extrapolation
from axialrope.extrapolation import EXTRAPOLATION_METHODS
from axialrope.models import create_dit
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

STEPS = 3


def _image_pipe(randomised, position_encoding="rope"):
    model = create_dit(
        "tiny", sample_size=16, patch_size=2, in_channels=3, num_classes=3, position_encoding=position_encoding
    )
    return AxialDiTPipeline.from_model(randomised(model), class_names=["circle", "square", "ring"])


@pytest.fixture(scope="module")
def image_pipe(randomised):
    return _image_pipe(randomised)


@pytest.fixture(scope="module")
def video_pipe(randomised):
    model = create_dit(
        "tiny", sample_size=8, num_frames=4, temporal_patch_size=2, patch_size=2, in_channels=3, num_classes=0
    )
    return AxialDiTPipeline.from_model(randomised(model))


def _seeded(seed=0):
    return torch.Generator().manual_seed(seed)


def _run(pipe, **kwargs):
    kwargs = {"num_inference_steps": STEPS, "generator": _seeded(), "output_type": "pt", **kwargs}
    output = pipe(**kwargs)
    return output.images if output.images is not None else output.frames


# -- shapes and output types ------------------------------------------------------------------


def test_image_output_types_and_sizes(image_pipe):
    pt = _run(image_pipe, class_labels=["circle", 2], height=32, width=24)
    assert pt.shape == (2, 3, 32, 24) and pt.dtype == torch.float32 and 0 <= pt.min() and pt.max() <= 1
    array = _run(image_pipe, class_labels=[0, 1], output_type="np")  # default size: trained 16x16
    assert array.shape == (2, 16, 16, 3) and np.allclose(
        array, _run(image_pipe, class_labels=[0, 1]).permute(0, 2, 3, 1)
    )
    pictures = _run(image_pipe, class_labels=[0], output_type="pil", height=16, width=32)
    assert len(pictures) == 1 and isinstance(pictures[0], PIL.Image.Image) and pictures[0].size == (32, 16)


def test_video_output_types_and_sizes(video_pipe):
    pt = _run(video_pipe, batch_size=2, num_frames=8, height=8, width=16)
    assert pt.shape == (2, 8, 3, 8, 16)  # (b, t, c, h, w) as diffusers' video pipelines
    assert _run(video_pipe, output_type="np").shape == (1, 4, 8, 8, 3)
    clips = _run(video_pipe, output_type="pil", num_frames=6)
    assert len(clips) == 1 and len(clips[0]) == 6 and clips[0][0].size == (8, 8)


@pytest.mark.parametrize("rho", [0.0, 0.9])
def test_a_video_model_samples_from_the_frame_correlated_noise_it_was_trained_on(rho, tmp_path):
    # at init the output layer is zero, so the velocity is 0 and the samples are the initial noise
    model = create_dit(
        "tiny", sample_size=8, num_frames=4, patch_size=2, in_channels=3, num_classes=0, frame_noise_correlation=rho
    )
    AxialDiTPipeline.from_model(model).save_pretrained(tmp_path)  # the prior travels with the weights
    # (b, t, c, h, w), noise clamped into [0, 1]
    frames = _run(AxialDiTPipeline.from_pretrained(tmp_path), batch_size=16)
    first, last = frames[:, 0].flatten(), frames[:, -1].flatten()
    assert abs(float(torch.corrcoef(torch.stack([first, last]))[0, 1]) - rho) < 0.1


def test_return_dict_false_gives_a_tuple(image_pipe):
    (images,) = image_pipe(class_labels=[0], num_inference_steps=1, output_type="pt", return_dict=False)
    assert images.shape == (1, 3, 16, 16)


# -- save / load --------------------------------------------------------------------------------


def test_save_and_load_give_identical_samples(image_pipe, tmp_path):
    image_pipe.save_pretrained(tmp_path / "pipe")
    loaded = AxialDiTPipeline.from_pretrained(tmp_path / "pipe")
    assert loaded.config.class_names == ["circle", "square", "ring"]
    assert loaded.transformer.base_grid == image_pipe.transformer.base_grid
    assert type(loaded.scheduler) is type(image_pipe.scheduler)
    kwargs = dict(class_labels=["ring", 0], height=32, width=32, extrapolation="dype-yarn", guidance_scale=2.0)
    assert torch.equal(_run(loaded, **kwargs), _run(image_pipe, **kwargs))


def test_the_same_seed_gives_the_same_samples_and_another_seed_does_not(image_pipe):
    first = _run(image_pipe, class_labels=[1])
    assert torch.equal(first, _run(image_pipe, class_labels=[1]))
    assert not torch.equal(first, _run(image_pipe, class_labels=[1], generator=_seeded(1)))


@pytest.mark.parametrize("sampler", ["ddpm", "stochastic flow"])
def test_the_seed_also_draws_the_noise_of_stochastic_samplers(image_pipe, sampler):
    """DDPM, and flow matching with diffusers' stochastic_sampling, draw fresh noise at every step."""
    if sampler == "ddpm":
        pipe = AxialDiTPipeline.from_model(image_pipe.transformer, "ddpm")
    else:
        scheduler = type(image_pipe.scheduler).from_config(image_pipe.scheduler.config, stochastic_sampling=True)
        pipe = AxialDiTPipeline(image_pipe.transformer, scheduler)
    pipe.set_progress_bar_config(disable=True)
    first = _run(pipe, class_labels=[1])
    torch.manual_seed(123)  # the global generator must not matter
    assert torch.equal(first, _run(pipe, class_labels=[1]))
    assert not torch.equal(first, _run(pipe, class_labels=[1], generator=_seeded(1)))


# -- extrapolation --------------------------------------------------------------------------------


@pytest.mark.parametrize("entropy_scaling", [False, True])
def test_at_the_trained_size_every_method_gives_the_plain_output(image_pipe, video_pipe, entropy_scaling):
    plain_image = _run(image_pipe, class_labels=[0, 1])
    plain_video = _run(video_pipe)
    for method in EXTRAPOLATION_METHODS:
        extrapolation = Extrapolation(method, entropy_scaling=entropy_scaling)
        if method != "riflex":
            assert torch.equal(_run(image_pipe, class_labels=[0, 1], extrapolation=extrapolation), plain_image), method
        assert torch.equal(_run(video_pipe, extrapolation=extrapolation), plain_video), method


def test_beyond_the_trained_size_methods_change_the_samples(image_pipe):
    kwargs = dict(class_labels=[0], height=32, width=32)
    methods = ("none", "pi", "ntk", "yarn", "dype-ntk", "spa")
    outputs = {m: _run(image_pipe, extrapolation=m, **kwargs) for m in methods}
    outputs["none+entropy"] = _run(image_pipe, extrapolation="none", entropy_scaling=True, **kwargs)
    names = list(outputs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not torch.allclose(outputs[a], outputs[b]), (a, b)


def test_the_pipeline_takes_the_extrapolation_names_of_the_cli(image_pipe):
    from axialrope.pipelines.cli import sample as cli
    from axialrope.pipelines.dit import extrapolation_names

    assert cli.make_extrapolation is extrapolation_names.make_extrapolation  # one parser for both
    kwargs = dict(class_labels=[0], height=32, width=32)
    assert torch.equal(
        _run(image_pipe, extrapolation="yarn+entropy", **kwargs),
        _run(image_pipe, extrapolation=Extrapolation("yarn", entropy_scaling=True), **kwargs),
    )
    auto = image_pipe.resolve_extrapolation(height=32, width=32, entropy_scaling=True)
    assert torch.equal(
        _run(image_pipe, extrapolation="auto+entropy", **kwargs), _run(image_pipe, extrapolation=auto, **kwargs)
    )


def _record_configs(pipe, **kwargs):
    """The rope_config the model sees at each of its forward calls during one pipeline call."""
    seen = []
    handle = pipe.transformer.register_forward_pre_hook(lambda module, args: seen.append(module.rope_config))
    try:
        _run(pipe, **kwargs)
    finally:
        handle.remove()
    return seen


def _factors(config, n_axes):
    scalings = config.scaling if isinstance(config.scaling, tuple) else (config.scaling,) * n_axes
    return [1.0 if s is None else s.factor for s in scalings]


@pytest.mark.parametrize("method", ["kappa-pi", "kappa-ntk", "kappa-yarn"])
def test_the_kappa_variants_start_extrapolated_and_end_at_the_trained_encoding(image_pipe, method):
    original = image_pipe.transformer.rope_config
    seen = _record_configs(
        image_pipe, class_labels=[0], height=32, width=48, extrapolation=method, num_inference_steps=8
    )
    assert len(seen) == 8
    # step 0 is pure noise (sigma = 1): the full per-axis scale s_a = eval / trained tokens
    assert _factors(seen[0], 2) == pytest.approx([2.0, 3.0])
    first_axis = [_factors(c, 2)[0] for c in seen]
    assert all(a > b for a, b in pairwise(first_axis))  # shrinks as sigma falls
    # the last step runs at flow matching's smallest sigma, 1/1000: kappa = 1e-6, s^kappa = 1 + O(1e-6)
    assert _factors(seen[-1], 2) == pytest.approx([1.0, 1.0], abs=1e-5)
    assert seen[-1].attention_scale == pytest.approx(original.attention_scale, abs=1e-5)
    assert seen[-1].theta == original.theta


def test_dype_methods_follow_the_authors_schedule_per_step(image_pipe):
    seen = _record_configs(
        image_pipe, class_labels=[0], height=32, width=48, extrapolation="dype-yarn", num_inference_steps=4
    )
    kappas = [c.scaling[0].kappa for c in seen]
    assert kappas[0] == pytest.approx(1.0) and all(a > b for a, b in pairwise(kappas))
    assert [s.factor for s in seen[-1].scaling] == [2.0, 3.0]  # s itself, not s^kappa
    ntk = _record_configs(
        image_pipe, class_labels=[0], height=32, width=48, extrapolation="dype-ntk", num_inference_steps=4
    )
    assert _factors(ntk[0], 2) == pytest.approx([2.0**2, 3.0**2])  # Dy-NTK at t = 1: factor s^(2 kappa)


def test_static_methods_use_one_plan_for_every_step(image_pipe):
    original = image_pipe.transformer.rope_config
    seen = _record_configs(
        image_pipe, class_labels=[0], height=32, width=32, extrapolation="yarn", entropy_scaling=True
    )
    assert len({id(c) for c in seen}) == 1
    plan = Extrapolation("yarn", entropy_scaling=True).plan((8, 8), (16, 16))
    assert seen[0] == dataclasses.replace(original, scaling=plan.scalings, attention_scale=plan.logit_scale)
    # "none" beyond the trained size keeps the trained encoding itself
    assert all(
        c is original for c in _record_configs(image_pipe, class_labels=[0], height=32, width=32, extrapolation="none")
    )


def test_riflex_scales_only_the_temporal_axis(video_pipe):
    seen = _record_configs(video_pipe, num_frames=12, height=16, width=16, extrapolation="riflex")
    scalings = seen[0].scaling
    assert scalings[0].rope_type == "riflex" and scalings[0].factor == pytest.approx(12 / 4)  # frames: eval / trained
    assert scalings[1] is None and scalings[2] is None


def test_rope_config_is_restored_after_a_call_and_after_an_error(image_pipe):
    original = image_pipe.transformer.rope_config
    _run(image_pipe, class_labels=[0], height=32, width=32, extrapolation="dype-ntk")
    assert image_pipe.transformer.rope_config is original

    calls = []

    def fail_on_second_step(module, args):
        calls.append(module.rope_config)
        if len(calls) == 2:
            raise RuntimeError("interrupted")

    handle = image_pipe.transformer.register_forward_pre_hook(fail_on_second_step)
    try:
        with pytest.raises(RuntimeError, match="interrupted"):
            _run(image_pipe, class_labels=[0], height=32, width=32, extrapolation="pi")
    finally:
        handle.remove()
    assert calls[0] is not original and image_pipe.transformer.rope_config is original


def test_sincos_model_takes_none_and_entropy_scaling_only(randomised):
    pipe = _image_pipe(randomised, "sincos")
    plain = _run(pipe, class_labels=[0], height=32, width=32, extrapolation="none")
    entropy = _run(pipe, class_labels=[0], height=32, width=32, extrapolation="none", entropy_scaling=True)
    assert not torch.allclose(plain, entropy)
    assert pipe.transformer.rope_config.attention_scale == 1.0
    for method in ("pi", "dype-yarn"):
        with pytest.raises(ValueError, match="sin-cos"):
            _run(pipe, class_labels=[0], extrapolation=method)


# -- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(height=17), ValueError, "height=17 is not divisible by the model's patch size 2"),
        (dict(width=0), ValueError, "width must be a positive integer"),
        (dict(num_frames=8), ValueError, "num_frames given, but this is an image model"),
        (dict(extrapolation="yarnn"), ValueError, "method must be one of"),
        (dict(extrapolation=3), TypeError, "extrapolation must be a method name"),
        (dict(extrapolation="riflex", height=32), ValueError, "riflex needs a"),
        (dict(extrapolation=Extrapolation("pi"), entropy_scaling=True), ValueError, "set entropy_scaling on"),
        (dict(class_labels=None, guidance_scale=2.0), ValueError, "no class_labels were given"),
        (dict(class_labels=["hexagon"]), ValueError, "unknown class 'hexagon'"),
        (dict(class_labels=[3]), ValueError, "out of range"),
        (dict(class_labels=[0.5]), TypeError, "integer ids or names"),
        (dict(output_type="latents"), ValueError, "output_type must be one of"),
        (dict(num_inference_steps=0), ValueError, "num_inference_steps"),
    ],
)
def test_bad_input_gets_a_clear_error(image_pipe, kwargs, error, match):
    kwargs = {"class_labels": [0], **kwargs}
    with pytest.raises(error, match=match):
        _run(image_pipe, **kwargs)
    assert image_pipe.transformer.rope_config.scaling is None


def test_bad_extrapolation_parameter_is_rejected():
    with pytest.raises(ValueError, match="beta_fast"):
        Extrapolation("yarn", beta_fast=0.5)


def test_unconditional_model_rejects_labels_and_guidance(video_pipe):
    with pytest.raises(ValueError, match="unconditional"):
        _run(video_pipe, class_labels=[0])
    with pytest.raises(ValueError, match="this model is unconditional"):
        _run(video_pipe, guidance_scale=3.0)


def test_loading_a_missing_or_non_model_folder_fails_clearly(image_pipe, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        AxialDiTPipeline.from_pretrained(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no model_index.json"):
        AxialDiTPipeline.from_pretrained(tmp_path / "empty")
    image_pipe.transformer.save_pretrained(tmp_path / "bare")
    with pytest.raises(ValueError, match="DiT.from_pretrained"):
        AxialDiTPipeline.from_pretrained(tmp_path / "bare")


def test_class_names_must_match_the_classes():
    model = create_dit("tiny", sample_size=8, patch_size=2, in_channels=3, num_classes=2)
    with pytest.raises(ValueError, match="class_names must be 2 strings"):
        AxialDiTPipeline.from_model(model, class_names=["a", "b", "c"])
