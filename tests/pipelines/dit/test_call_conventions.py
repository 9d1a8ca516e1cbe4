"""diffusers' call conventions on AxialDiTPipeline: latents, num_images_per_prompt, callback_on_step_end,
output types through diffusers' processors, and clear errors for each."""

from __future__ import annotations

import inspect
import io

import numpy as np
import PIL.Image
import pytest
import torch
from diffusers.callbacks import PipelineCallback

from axialrope.models import create_dit
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline
from axialrope.pipelines.objectives import draw_noise

STEPS = 2


@pytest.fixture(scope="module")
def pipe(randomised):
    model = create_dit("tiny", sample_size=8, patch_size=2, in_channels=3, num_classes=3)
    pipe = AxialDiTPipeline.from_model(randomised(model), class_names=["circle", "square", "ring"])
    pipe.set_progress_bar_config(disable=True)
    return pipe


@pytest.fixture(scope="module")
def video_pipe(randomised):
    model = create_dit(
        "tiny",
        sample_size=8,
        num_frames=4,
        temporal_patch_size=2,
        patch_size=2,
        in_channels=3,
        num_classes=0,
        frame_noise_correlation=0.5,
    )
    pipe = AxialDiTPipeline.from_model(randomised(model))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _run(pipe, seed=0, **kwargs):
    kwargs = {"num_inference_steps": STEPS, "output_type": "pt", **kwargs}
    output = pipe(generator=torch.Generator().manual_seed(seed), **kwargs)
    return output.images if output.images is not None else output.frames


def test_num_images_per_prompt_gives_each_label_its_samples_side_by_side(pipe):
    per_prompt = _run(pipe, class_labels=["ring", "circle"], num_images_per_prompt=3)
    repeated = _run(pipe, class_labels=["ring"] * 3 + ["circle"] * 3)
    assert per_prompt.shape == (6, 3, 8, 8) and torch.equal(per_prompt, repeated)
    assert _run(pipe, batch_size=2, num_images_per_prompt=2, class_labels=None).shape[0] == 4  # unconditional


def test_latents_replace_the_drawn_noise(pipe, video_pipe):
    latents = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(5))
    drawn = _run(pipe, seed=5, class_labels=[0, 1])  # the seed draws exactly these latents
    assert torch.equal(_run(pipe, seed=9, class_labels=[0, 1], latents=latents), drawn)
    assert torch.equal(_run(pipe, seed=9, class_labels=[0, 1], latents=latents.double()), drawn)
    # a video model's latents: (b, c, t, h, w), its frame-correlated prior is the caller's to draw
    noise = draw_noise((1, 3, 4, 8, 8), 0.5, torch.Generator().manual_seed(3))
    assert torch.equal(_run(video_pipe, seed=3), _run(video_pipe, seed=7, latents=noise))


def test_output_types_go_through_diffusers_processors(pipe, video_pipe):
    latent = _run(pipe, class_labels=[0], output_type="latent")
    assert latent.shape == (1, 3, 8, 8) and latent.dtype == torch.float32 and latent.min() < 0  # before [0, 1]
    pt = _run(pipe, class_labels=[0])
    torch.testing.assert_close(pt, pipe.image_processor.postprocess(latent, output_type="pt"), rtol=0, atol=0)
    torch.testing.assert_close(pt, (latent.clamp(-1, 1) + 1) / 2)
    array = _run(pipe, class_labels=[0], output_type="np")
    assert array.shape == (1, 8, 8, 3) and np.allclose(array, pt.permute(0, 2, 3, 1).numpy())
    (picture,) = _run(pipe, class_labels=[0], output_type="pil")
    assert isinstance(picture, PIL.Image.Image) and picture.size == (8, 8)
    assert _run(video_pipe, output_type="latent").shape == (1, 3, 4, 8, 8)  # the sampler's layout (b, c, t, h, w)
    assert _run(video_pipe).shape == (1, 4, 3, 8, 8)  # diffusers' video layout (b, t, c, h, w)
    (images,) = pipe(class_labels=[0], num_inference_steps=1, output_type="latent", return_dict=False)
    assert images.shape == (1, 3, 8, 8)


def test_callback_on_step_end_sees_every_step_and_may_replace_the_latents(pipe):
    seen = []

    def record(p, step, timestep, callback_kwargs):
        assert p is pipe
        seen.append((step, float(timestep), tuple(callback_kwargs["latents"].shape)))
        return callback_kwargs

    plain = _run(pipe, class_labels=[0, 1], num_inference_steps=3)
    assert torch.equal(_run(pipe, class_labels=[0, 1], num_inference_steps=3, callback_on_step_end=record), plain)
    assert [s for s, _, _ in seen] == [0, 1, 2] and all(shape == (2, 3, 8, 8) for _, _, shape in seen)
    assert seen[0][1] == 1000.0  # the timestep of the step just taken, flow matching starting at sigma = 1

    def zero_at_the_end(p, step, timestep, callback_kwargs):
        return {"latents": torch.zeros_like(callback_kwargs["latents"])} if step == 2 else {}

    latent = _run(
        pipe, class_labels=[0], num_inference_steps=3, callback_on_step_end=zero_at_the_end, output_type="latent"
    )
    assert torch.equal(latent, torch.zeros(1, 3, 8, 8))


def test_diffusers_callback_objects_are_called_with_their_own_tensor_inputs(pipe):
    class Halve(PipelineCallback):
        tensor_inputs = ["latents"]

        def callback_fn(self, pipeline, step_index, timestep, callback_kwargs):
            return {"latents": callback_kwargs["latents"] / 2}

    halved = _run(pipe, class_labels=[0], num_inference_steps=1, output_type="latent", callback_on_step_end=Halve())
    torch.testing.assert_close(halved, _run(pipe, class_labels=[0], num_inference_steps=1, output_type="latent") / 2)


@pytest.mark.parametrize(
    "kwargs, error, match, model_calls",
    [
        (dict(latents=torch.randn(2, 3, 8, 8)), ValueError, r"latents must have shape \(1, 3, 8, 8\)", 0),
        (
            dict(latents=torch.randn(1, 3, 16, 16)),
            ValueError,
            r"\(batch, channels, height, width\).*got \(1, 3, 16, 16\)",
            0,
        ),
        (dict(latents=torch.zeros(1, 3, 8, 8, dtype=torch.long)), ValueError, "floating-point tensor.*torch.int64", 0),
        (dict(latents=np.zeros((1, 3, 8, 8))), TypeError, "latents must be a torch.Tensor", 0),
        (dict(callback_on_step_end="print"), TypeError, "callback_on_step_end must be callable", 0),
        (
            dict(callback_on_step_end=lambda *a: {}, callback_on_step_end_tensor_inputs=["latents", "noise_pred"]),
            ValueError,
            r"must be in \['latents'\], but found \['noise_pred'\]",
            0,
        ),
        (
            dict(callback_on_step_end=lambda *a: {}, callback_on_step_end_tensor_inputs="latents"),
            ValueError,
            "must be a list of names",
            0,
        ),
        (dict(num_images_per_prompt=0), ValueError, "num_images_per_prompt must be a positive integer", 0),
        # what a callback returns is known only after its step
        (dict(callback_on_step_end=lambda *a: 3), TypeError, "must return a dict", 1),
        (
            dict(callback_on_step_end=lambda p, s, t, kw: {"latents": kw["latents"][:, :1]}),
            ValueError,
            r"returned latents of shape \(1, 1, 8, 8\)",
            1,
        ),
    ],
)
def test_bad_latents_and_callbacks_get_clear_errors(pipe, kwargs, error, match, model_calls):
    calls = []
    handle = pipe.transformer.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        with pytest.raises(error, match=match):
            _run(pipe, class_labels=[0], **kwargs)
    finally:
        handle.remove()
    assert len(calls) == model_calls


def test_the_arguments_come_in_diffusers_order_with_axialropes_own_last():
    from diffusers import CogVideoXPipeline, FluxPipeline, StableDiffusion3Pipeline, WanPipeline

    ours = list(inspect.signature(AxialDiTPipeline.__call__).parameters)[1:]
    # diffusers' current pipelines agree on one order (its older DiTPipeline and DDPMPipeline predate it)
    for peer in (StableDiffusion3Pipeline, FluxPipeline, CogVideoXPipeline, WanPipeline):
        theirs = [
            name.replace("num_videos_per_prompt", "num_images_per_prompt")
            for name in inspect.signature(peer.__call__).parameters
        ]
        shared = [name for name in theirs if name in ours]
        assert [name for name in ours if name in shared] == shared, peer.__name__
    assert ours[-3:] == ["extrapolation", "entropy_scaling", "scheduler"]


def test_check_inputs_passes_good_arguments_and_names_a_bad_one(pipe):
    good = dict(
        class_labels=[0],
        height=8,
        width=8,
        num_frames=None,
        num_inference_steps=2,
        guidance_scale=2.0,
        num_images_per_prompt=1,
        latents=None,
        output_type="pt",
        callback_on_step_end=None,
        callback_on_step_end_tensor_inputs=["latents"],
        batch_size=1,
    )
    assert pipe.check_inputs(**good) is None
    with pytest.raises(ValueError, match="height=9 is not divisible"):
        pipe.check_inputs(**{**good, "height": 9})
    with pytest.raises(ValueError, match="guidance_scale must be a finite number in"):
        pipe.check_inputs(**{**good, "guidance_scale": 1e30})


def test_the_progress_bar_counts_steps_and_closes(randomised):
    model = create_dit("tiny", sample_size=8, patch_size=2, in_channels=3, num_classes=3)
    pipe = AxialDiTPipeline.from_model(randomised(model))
    pipe.set_progress_bar_config(file=io.StringIO())  # a bar that counts, shown nowhere
    bars = []
    original = pipe.progress_bar

    def recording_bar(*args, **kwargs):
        bars.append(original(*args, **kwargs))
        return bars[-1]

    pipe.progress_bar = recording_bar
    _run(pipe, class_labels=[0], num_inference_steps=3)
    _run(pipe, class_labels=[0], num_inference_steps=3, scheduler="heun")  # two model calls a step
    assert [(bar.n, bar.total, bar.disable) for bar in bars] == [(3, 3, True), (3, 3, True)]  # closed: disabled


def test_model_cpu_offload_samples_the_same_and_the_hooks_are_reset_after_each_call(randomised):
    """diffusers refuses enable_model_cpu_offload() without an accelerator; with device="cpu" the hooks run here."""
    model = create_dit("tiny", sample_size=8, patch_size=2, in_channels=3, num_classes=3)
    plain = AxialDiTPipeline.from_model(randomised(model))
    plain.set_progress_bar_config(disable=True)
    expected = _run(plain, class_labels=[0, 2], guidance_scale=2.0)
    offloaded = AxialDiTPipeline.from_model(plain.transformer)
    offloaded.set_progress_bar_config(disable=True)
    offloaded.enable_model_cpu_offload(device="cpu")
    freed = []
    free = offloaded.maybe_free_model_hooks
    offloaded.maybe_free_model_hooks = lambda: (freed.append(1), free())[-1]
    assert torch.equal(_run(offloaded, class_labels=[0, 2], guidance_scale=2.0), expected)
    assert freed == [1]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_model_cpu_offload_on_cuda_moves_the_transformer_back_after_the_call(randomised):
    model = create_dit("tiny", sample_size=8, patch_size=2, in_channels=3, num_classes=3)
    pipe = AxialDiTPipeline.from_model(randomised(model))
    pipe.set_progress_bar_config(disable=True)
    on_cpu = _run(pipe, class_labels=[0, 2], guidance_scale=2.0)
    pipe.enable_model_cpu_offload()
    assert pipe._execution_device.type == "cuda"
    offloaded = _run(pipe, class_labels=[0, 2], guidance_scale=2.0)
    torch.testing.assert_close(offloaded, on_cpu, atol=2e-3, rtol=0)  # float32 on another device
    assert {p.device.type for p in pipe.transformer.parameters()} == {"cpu"}  # offloaded again at the end
