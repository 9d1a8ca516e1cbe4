"""What the copies of Wan's and HunyuanVideo's ropes, AnyFlow and Framepack do beyond the harness
(test_families.py runs every method on each): ChronoEdit's two-frame edits, Sana-Video's linear
attention, Framepack's streams, FAR's compressed context and clean copy, HunyuanImage's refiner,
RIFLEx's derived k per family, and the trained grids against the pipelines' own defaults."""

import inspect
import math

import pytest
import torch

from axialrope import EXTRAPOLATION_METHODS, Extrapolation, rope_frequencies
from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import GAIN_METHODS, family_for_class, family_of, methods_for
from axialrope.models.integrations.ropes.base import RopeSetup

T = 0.6


# -- ChronoEdit -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["none", "pi", "ntk", "yarn", "dype-ntk", "dype-yarn"])
def test_chronoedit_keeps_a_two_frame_edit_at_times_0_and_skip_minus_1(method, tiny, reference, authors):
    """The input and the edit stand at the ends of the reasoning span (times 0 and temporal_skip_len - 1):
    that span is the time axis's length, so at the trained span the time axis stays as trained while the
    spatial axes take the method, and the table is the formula at those times."""
    family, small = tiny.FAMILY["chronoedit"], tiny.TINY["chronoedit"]
    model = small.make()
    skip = tiny.TINY_MODULE.CHRONOEDIT_SKIP
    assert small.trained[0] == skip  # the tiny model's trained span is its two-frame span
    grid, timestep = (2, 8, 8), T * family.time.at_noise
    own = tiny.rope_table(model, family, small, grid, timestep)
    expected = reference.reference_for(family.kind)(
        family, model, small.inputs(model, grid, timestep), grid, small.trained, "none", timestep, authors
    )
    for a, b in zip(own, expected, strict=True):  # the declaration's positions are the model's own
        torch.testing.assert_close(a.to(b.dtype), b, rtol=0, atol=1e-5)
    with apply_extrapolation(model, method, trained_grid=small.trained):
        ours = tiny.rope_table(model, family, small, grid, timestep)
    expected = reference.reference_for(family.kind)(
        family, model, small.inputs(model, grid, timestep), grid, small.trained, method, timestep, authors
    )
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)
    if method != "yarn":  # its temperature is on every channel; the others leave the time axis as trained
        time = family.rope_axes.resolve(model.config)[0][0]
        for a, b in zip(ours, own, strict=True):
            torch.testing.assert_close(a[..., :time].double(), b[..., :time].double(), rtol=0, atol=1e-6)


def test_chronoedit_at_its_trained_span_with_two_frames_is_the_model_itself(tiny):
    small = tiny.TINY["chronoedit"]
    model = small.make()
    grid = (2, *small.trained[1:])
    plain = tiny.run(model, small, grid, 500.0)
    for method in ("pi", "dype-yarn", "riflex"):
        with apply_extrapolation(model, Extrapolation(method, entropy_scaling=True), trained_grid=small.trained):
            assert torch.equal(tiny.run(model, small, grid, 500.0), plain), method


def test_chronoedit_refuses_a_head_dim_whose_tables_mix_axes(tiny):
    from diffusers import ChronoEditTransformer3DModel

    model = ChronoEditTransformer3DModel(**{**tiny.TINY_MODULE.WAN_LIKE, "attention_head_dim": 16})
    with pytest.raises(ValueError, match="attention_head_dim=16"):
        apply_extrapolation(model, "pi")
    assert not hasattr(model, "_axialrope_extrapolation")


# -- Sana-Video's linear attention -------------------------------------------------------------------------------


def test_the_gain_methods_are_those_whose_plan_carries_a_gain():
    """GAIN_METHODS is what the core does: at 2x, the methods whose tables carry a gain (a logit scale or
    an attention factor) are exactly these."""
    carrying = set()
    for method in EXTRAPOLATION_METHODS:
        plan = Extrapolation(method).plan((4, 4, 4), (8, 8, 8), T)
        gains = [rope_frequencies(16, 10000.0, s)[1] for s in plan.scalings if s is not None]
        if plan.logit_scale != 1.0 or any(g != 1.0 for g in gains):
            carrying.add(method)
    assert carrying == set(GAIN_METHODS)


@pytest.mark.parametrize("method, entropy", [*[(m, False) for m in GAIN_METHODS], ("pi", True), ("none", True)])
def test_sana_video_refuses_a_gain_on_its_linear_attention(method, entropy, tiny):
    model = tiny.TINY["sana-video"].make()
    with pytest.raises(
        ValueError,
        match="attention is linear.*its methods are none, pi, ntk, riflex, dype-ntk, "
        "kappa-pi, kappa-ntk \\(without entropy scaling\\)",
    ):
        apply_extrapolation(model, Extrapolation(method, entropy_scaling=entropy))
    assert not hasattr(model, "_axialrope_extrapolation")
    assert methods_for(family_of(model)) == ["none", "pi", "ntk", "riflex", "dype-ntk", "kappa-pi", "kappa-ntk"]


# -- Framepack --------------------------------------------------------------------------------------------------


def test_framepack_gives_every_stream_the_method_at_its_own_frame_indices(tiny, reference, authors):
    """One forward calls the rope once per stream (the frames being made, the clean context, the 2x and 4x
    history), each at its frame indices: every call is the formula there, times kept as trained."""
    family, small = tiny.FAMILY["framepack"], tiny.TINY["framepack"]
    model = small.make()
    grid, timestep = (8, 8), T * family.time.at_noise
    inputs = small.inputs(model, grid, timestep)
    seen = []
    with apply_extrapolation(model, "dype-yarn", trained_grid=small.trained):
        hook = model.rope.register_forward_hook(lambda m, a, out: seen.append(out))
        with torch.no_grad():
            model(**inputs, return_dict=False)
        hook.remove()
    streams = list(tiny.TINY_MODULE.FRAMEPACK_INDICES)
    assert len(seen) == len(streams)
    for stream, table in zip(streams, seen, strict=True):
        expected = reference.framepack_reference(
            family, model, {"indices_latents": inputs[stream]}, grid, small.trained, "dype-yarn", timestep, authors
        )
        for a, b in zip(table, expected, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=2e-6, msg=lambda m, s=stream: f"{s}: {m}")


def test_framepack_makes_video_but_takes_no_riflex(tiny):
    family = tiny.FAMILY["framepack"]
    assert family.video and family.temporal_axis is None
    model = tiny.TINY["framepack"].make()
    with pytest.raises(
        ValueError, match="riflex extrapolates video length; Framepack places its frames at indices its pipeline packs"
    ):
        apply_extrapolation(model, "riflex")
    with pytest.raises(ValueError, match=r"trained_grid must have 2 axes \(h, w\)"):
        apply_extrapolation(model, "pi", trained_grid=(3, 4, 4))


# -- AnyFlow-FAR ------------------------------------------------------------------------------------------------


def test_far_puts_the_compressed_context_first_and_the_clean_copy_last(tiny, reference, authors):
    """The rope called as FAR's cache step calls it (with clean_hidden_states): compressed context, the full
    frames, the full frames again, the method at the whole video's grid; the same layout as the model's own."""
    family, small = tiny.FAMILY["anyflow-far"], tiny.TINY["anyflow-far"]
    model = small.make()
    frames, h, w = 6, 8, 8
    layout = dict(
        total_frames=frames, num_compressed_frames=2, full_frame_shape=(h, w), compressed_frame_shape=(h // 2, w // 2)
    )
    clean = torch.zeros(1, 4, 4, 2 * h, 2 * w)
    own = model.rope(far_cfg=layout, device=torch.device("cpu"), clean_hidden_states=clean)["key"]
    handle = apply_extrapolation(model, "ntk", trained_grid=small.trained)
    handle.time.set(T * family.time.at_noise)
    ours = model.rope(far_cfg=layout, device=torch.device("cpu"), clean_hidden_states=clean)
    handle.remove()
    assert ours["query"] is ours["key"] and ours["key"].shape == own.shape
    expected, _ = reference.anyflow_reference(
        family,
        model,
        {},
        (frames, h, w),
        small.trained,
        "ntk",
        T * family.time.at_noise,
        authors,
        compressed=2,
        twice=True,
    )
    torch.testing.assert_close(ours["key"], expected, rtol=0, atol=2e-6)


# -- HunyuanImage ---------------------------------------------------------------------------------------------


def test_hunyuan_image_refuses_the_refiners_three_axis_config():
    from diffusers import HunyuanImageTransformer2DModel

    model = HunyuanImageTransformer2DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=1,
        attention_head_dim=32,
        num_layers=1,
        num_single_layers=1,
        num_refiner_layers=1,
        patch_size=(1, 1, 1),
        text_embed_dim=16,
        rope_axes_dim=(16, 8, 8),
    )
    with pytest.raises(ValueError, match="HunyuanImage with 3 rope axes"):
        apply_extrapolation(model, "pi")
    with pytest.raises(ValueError, match="riflex extrapolates video length; HunyuanImage is an image model"):
        apply_extrapolation(model, "riflex")


# -- RIFLEx's k and the trained grids ---------------------------------------------------------------------------

# (family, the real model's config entries its rope reads, k the project's rule derives at the trained grid)
REAL_CONFIGS = [
    ("wan-vace", {"attention_head_dim": 128}, 4),
    ("wan-animate", {"attention_head_dim": 128}, 4),
    ("skyreels-v2", {"attention_head_dim": 128}, 5),
    ("chronoedit", {"attention_head_dim": 128}, 2),
    ("sana-video", {"attention_head_dim": 112}, 4),
    ("anyflow", {"attention_head_dim": 128}, 4),
    ("anyflow-far", {"attention_head_dim": 128}, 4),
    ("hunyuan-video-1.5", {"rope_axes_dim": (16, 56, 56), "rope_theta": 256.0, "target_size": 640}, 4),
    ("motif-video", {"rope_axes_dim": (16, 56, 56), "rope_theta": 256.0}, 4),
]


@pytest.mark.parametrize("name, config, k", REAL_CONFIGS)
def test_riflex_k_is_derived_for_every_video_family_without_a_published_one(name, config, k, tiny):
    """None publishes a k (RIFLEx's authors wrote theirs for HunyuanVideo and CogVideoX): the rule takes the
    pair with the shortest period beyond the trained length; the declarations' docstrings say which."""
    family = tiny.FAMILY[name]
    assert family.published_riflex(config) is None
    dims, theta = family.rope_axes.resolve(config)
    grid = family.trained_grid(config).grid
    setup = RopeSetup(family, Extrapolation("riflex"), grid, dims, (theta,) * len(dims))
    assert family.kind.riflex_index(setup) == k
    period = 2 * math.pi / float(rope_frequencies(dims[0], theta)[0][k - 1])
    assert period > grid[0] > 2 * math.pi / float(rope_frequencies(dims[0], theta)[0][k - 2])


def _defaults(pipeline_name: str, *names: str) -> tuple:
    import diffusers

    parameters = inspect.signature(getattr(diffusers, pipeline_name).__call__).parameters
    return tuple(parameters[n].default for n in names)


def test_the_trained_grids_are_the_pipelines_defaults_where_the_source_says_so():
    """(frames - 1) / 4 + 1 latent frames; 16 px per token (VAE 8x, 2 x 2 patches) unless said otherwise."""

    def video(pipeline, frames="num_frames", per_token=16):
        f, height, width = _defaults(pipeline, frames, "height", "width")
        return (f - 1) // 4 + 1, height // per_token, width // per_token

    assert family_for_class("WanVACETransformer3DModel").trained[-1].grid == video("WanVACEPipeline")
    assert family_for_class("SkyReelsV2Transformer3DModel").trained[-1].grid == video("SkyReelsV2Pipeline")
    assert family_for_class("SanaVideoTransformer3DModel").trained[-1].grid == video("SanaVideoPipeline", "frames")
    assert family_for_class("AnyFlowTransformer3DModel").trained[-1].grid == video("AnyFlowPipeline")
    assert family_for_class("AnyFlowFARTransformer3DModel").trained[-1].grid == video("AnyFlowFARPipeline")
    assert family_for_class("MotifVideoTransformer3DModel").trained[-1].grid == video("MotifVideoPipeline")
    segment, height, width = _defaults("WanAnimatePipeline", "segment_frame_length", "height", "width")
    assert family_for_class("WanAnimateTransformer3DModel").trained[-1].grid == (
        (segment - 1) // 4 + 1 + 1,
        height // 16,
        width // 16,
    )  # the reference image's frame first
    height, width = _defaults("ChronoEditPipeline", "height", "width")
    assert family_for_class("ChronoEditTransformer3DModel").trained[-1].pipeline_default == (
        2,
        height // 16,
        width // 16,
    )  # 5 frames without temporal reasoning: 2 latent frames
    height, width = _defaults("HunyuanVideoFramepackPipeline", "height", "width")
    assert family_for_class("HunyuanVideoFramepackTransformer3DModel").trained[-1].pipeline_default == (
        height // 16,
        width // 16,
    )


def test_hunyuan_video_15_grids_are_the_buckets_its_pipeline_picks_for_its_target_size():
    from diffusers.pipelines.hunyuan_video1_5.image_processor import HunyuanVideo15ImageProcessor

    family = family_for_class("HunyuanVideo15Transformer3DModel")
    processor = HunyuanVideo15ImageProcessor(vae_scale_factor=16)  # the pipeline's without a VAE: 16x
    (frames,) = _defaults("HunyuanVideo15Pipeline", "num_frames")
    for target_size in (640, 960):
        height, width = processor.calculate_default_height_width(9, 16, target_size)  # its default 16:9
        grid = family.trained_grid({"target_size": target_size}).grid
        assert grid == ((frames - 1) // 4 + 1, height // 16, width // 16)


def test_hunyuan_image_grid_is_its_pipelines_default_size():
    from diffusers import FlowMatchEulerDiscreteScheduler, HunyuanImagePipeline

    pipe = HunyuanImagePipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=None,
        text_encoder=None,
        tokenizer=None,
        text_encoder_2=None,
        tokenizer_2=None,
        transformer=None,
    )
    side = pipe.default_sample_size * pipe.vae_scale_factor // 32  # VAE 32x, patch 1
    assert family_for_class("HunyuanImageTransformer2DModel").trained[-1].grid == (side, side)


def test_wan_animate_2_is_refused_with_the_reason_no_family_reaches_it():
    from diffusers import WanAnimate2Transformer3DModel

    model = WanAnimate2Transformer3DModel(
        in_dim=4, dim=24, ffn_dim=8, freq_dim=8, text_dim=8, out_dim=4, num_heads=2, num_layers=1, use_img_emb=False
    )
    with pytest.raises(TypeError, match="cannot reach WanAnimate2Transformer3DModel: its rope is no module"):
        apply_extrapolation(model, "pi")
