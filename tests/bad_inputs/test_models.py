"""Bad inputs of the models (axialrope.models): DiT calls, RoPE configs, the text LM."""

import math

import pytest
import torch

from axialrope import Extrapolation, RopeScaling
from axialrope.models import TextLMConfig, TinyCausalLM, create_dit
from axialrope.models.axial_dit.position_encoding import GridRope, RopeConfig


def dit_call(model, timestep):
    return lambda: model(torch.zeros(1, 3, 8, 8), timestep, class_labels=torch.tensor([0]))


def flux_with(method: str):
    """The call: `apply_extrapolation` on a tiny Flux transformer with `method`; returns the handle's method."""
    from diffusers import FluxTransformer2DModel

    from axialrope.models import apply_extrapolation

    torch.manual_seed(0)
    model = FluxTransformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=8,
        pooled_projection_dim=8,
        axes_dims_rope=(4, 6, 6),
    )

    def call():
        handle = apply_extrapolation(model, method, trained_grid=(8, 8))
        handle.remove()
        return handle.extrapolation

    return call


def wan_with(method: str, **options):
    """The call: `apply_extrapolation` on a tiny Wan transformer (head_dim 12: 4 time, 4 and 4 space channels)."""
    from diffusers import WanTransformer3DModel

    from axialrope.models import apply_extrapolation

    torch.manual_seed(0)
    model = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=4,
        out_channels=4,
        text_dim=8,
        freq_dim=8,
        ffn_dim=8,
        num_layers=1,
        rope_max_seq_len=64,
    )
    return lambda: apply_extrapolation(model, method, trained_grid=(4, 8, 8), **options)


def video_pipe(k):
    """A tiny video DiT's pipeline: 4 frames of 8x8, its time axis 4 channels (2 frequency pairs)."""
    from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

    pipe = AxialDiTPipeline.from_model(k.dit(num_frames=4, rope_axes_dims=(4, 6, 6)))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def lm():
    torch.manual_seed(0)
    return TinyCausalLM(TextLMConfig(vocab_size=8, dim=16, depth=1, num_heads=2, num_kv_heads=1))


# (id, make(kit) -> the call, error type, a word of the message)
CASES = [
    ("dit-nan-timestep-tensor", lambda k: dit_call(k.dit(), torch.tensor([math.nan])), ValueError, "timestep"),
    ("dit-inf-timestep-tensor", lambda k: dit_call(k.dit(), torch.tensor(math.inf)), ValueError, "finite"),
    ("dit-nan-timestep-number", lambda k: dit_call(k.dit(), math.nan), ValueError, "finite"),
    ("dit-complex-timestep", lambda k: dit_call(k.dit(), torch.tensor([1j])), TypeError, "timestep"),
    ("dit-timestep-string", lambda k: dit_call(k.dit(), "500"), TypeError, "timestep"),
    (
        "dit-rope-config-not-a-config",
        lambda k: k.set_attr(k.dit(), "rope_config", {"theta": 500}),
        TypeError,
        "RopeConfig",
    ),
    (
        "dit-rope-config-three-thetas",
        lambda k: k.set_attr(k.dit(), "rope_config", RopeConfig(theta=(1e4, 1e4, 1e4))),
        ValueError,
        "theta",
    ),
    (
        "dit-rope-config-riflex-out-of-range",
        lambda k: k.set_attr(
            k.dit(), "rope_config", RopeConfig(theta=500.0, scaling=RopeScaling("riflex", 2.0, 8, riflex_index=99))
        ),
        ValueError,
        "riflex_index",
    ),
    (
        "dit-rope-config-offsets",
        lambda k: k.set_attr(k.dit(), "rope_config", RopeConfig(offset=(1.0, 2.0, 3.0))),
        ValueError,
        "offset",
    ),
    (
        "sincos-rope-config-scaling",
        lambda k: k.set_attr(
            k.dit(position_encoding="sincos"), "rope_config", RopeConfig(scaling=RopeScaling("linear", 2.0))
        ),
        ValueError,
        "sincos",
    ),
    ("rope-config-offset-nan", lambda k: lambda: RopeConfig(offset=math.nan), ValueError, "offset must be finite"),
    (
        "rope-config-offset-inf-on-an-axis",
        lambda k: lambda: RopeConfig(offset=(0.0, math.inf)),
        ValueError,
        "offset must be finite",
    ),
    ("rope-config-scale-0", lambda k: lambda: RopeConfig(scale=0), ValueError, "scale must be non-zero"),
    (
        "rope-config-scale-0-on-an-axis",
        lambda k: lambda: RopeConfig(scale=(1.0, 0.0)),
        ValueError,
        "scale must be non-zero",
    ),
    ("rope-config-scale-nan", lambda k: lambda: RopeConfig(scale=math.nan), ValueError, "scale must be finite"),
    (
        "grid-rope-config-scale",
        lambda k: k.set_attr(GridRope((8, 8)), "config", RopeConfig(scale=(1.0, 1.0, 1.0))),
        ValueError,
        "scale",
    ),
    (
        "lm-scaling-without-factor",
        lambda k: lambda: lm().set_rope_scaling({"rope_type": "linear"}),
        ValueError,
        "factor",
    ),
    ("lm-theta-below-1", lambda k: lambda: lm().set_rope_scaling(None, theta=0.5), ValueError, "theta"),
    (
        "lm-tuple-cache",
        lambda k: lambda: lm()(torch.zeros(1, 2, dtype=torch.long), [(torch.zeros(1, 1, 2, 8),) * 2]),
        TypeError,
        "KVCache",
    ),
    ("dit-unknown-size", lambda k: lambda: create_dit("huge"), ValueError, "size"),
    (
        "apply-extrapolation-riflex-index-1000",  # refused when applied, not at the first forward beyond the grid
        lambda k: wan_with("riflex", riflex_index=1000),
        ValueError,
        "riflex_index=1000",
    ),
    (
        "apply-extrapolation-beta-fast-1e308",
        lambda k: wan_with("yarn", beta_fast=1e308, beta_slow=1e-308),
        ValueError,
        "beta_fast",
    ),
    (
        "apply-extrapolation-dype-beta-infinite",
        lambda k: wan_with("dype-yarn", dype_beta=(math.inf, 0.5)),
        ValueError,
        "dype_beta",
    ),
    (
        "pipeline-riflex-index-1000",
        lambda k: (
            lambda: video_pipe(k)(
                class_labels=[0],
                num_frames=32,
                num_inference_steps=1,
                extrapolation=Extrapolation("riflex", riflex_index=1000),
            )
        ),
        ValueError,
        "riflex_index=1000",
    ),
]


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)


# (id, make(kit) -> the call, holds(its result))
HANDLED = [
    (
        "apply-extrapolation-with-entropy",  # the names the CLI takes, for a diffusers model too
        lambda k: flux_with("yarn+entropy"),
        lambda method: method == Extrapolation("yarn", entropy_scaling=True),
    ),
]


@pytest.mark.parametrize("make, holds", [pytest.param(*case[1:], id=case[0]) for case in HANDLED])
def test_an_input_that_must_be_taken_is_taken_right_and_writes_nothing(expect_handled, make, holds):
    expect_handled(make, holds)
