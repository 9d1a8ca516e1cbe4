"""Bad input to apply_extrapolation: clear errors naming the argument, and the model untouched."""

import pytest
import torch

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation


def _state(model):
    return (
        {name: child for name, child in model.named_children()},
        dict(model._forward_pre_hooks),
        vars(model).get("_axialrope_extrapolation"),
    )


def test_an_unsupported_model_gets_a_type_error_naming_the_supported_classes():
    from diffusers import DiTTransformer2DModel

    model = DiTTransformer2DModel(
        num_attention_heads=1,
        attention_head_dim=8,
        in_channels=3,
        num_layers=1,
        sample_size=4,
        patch_size=2,
        num_embeds_ada_norm=10,
    )
    for thing in (model, torch.nn.Linear(2, 2), "black-forest-labs/FLUX.1-dev"):
        with pytest.raises(TypeError) as error:
            apply_extrapolation(thing, "pi")
        if isinstance(thing, torch.nn.Module):
            for name in (
                "FluxTransformer2DModel",
                "QwenImageTransformer2DModel",
                "WanTransformer3DModel",
                "HunyuanVideoTransformer3DModel",
                "CogVideoXTransformer3DModel",
                "LTXVideoTransformer3DModel",
            ):
                assert name in str(error.value)
    assert not hasattr(model, "_axialrope_extrapolation")


@pytest.mark.parametrize(
    "method, kwargs, error, match",
    [
        ("yarnn", {}, ValueError, "method must be one of"),
        ("dype-pi", {}, ValueError, "now called 'kappa-pi'"),
        (3, {}, TypeError, "method must be a method name"),
        ("pi", {"trained_grid": "one axis more"}, ValueError, "trained_grid must have"),
        ("pi", {"trained_grid": "a zero"}, ValueError, "trained_grid sizes must be positive integers"),
        ("pi", {"trained_grid": "a negative"}, ValueError, "trained_grid sizes must be positive integers"),
        ("pi", {"trained_grid": 64}, ValueError, "trained_grid must be"),
        ("pi", {"beta_fastt": 32}, TypeError, "unknown option 'beta_fastt'"),
        ("pi", {"cache_size": 0}, ValueError, "cache_size must be a positive integer"),
        (Extrapolation("ntk"), {"yarn_temperature": "mean"}, ValueError, "yarn_temperature must be one of"),
    ],
)
def test_bad_arguments_raise_and_leave_the_model_alone(case, method, kwargs, error, match):
    model = case.make()
    before = _state(model)
    grids = {
        "one axis more": (*case.trained, 4),
        "a zero": (0, *case.trained[1:]),
        "a negative": (*case.trained[:-1], -4),
    }
    if kwargs.get("trained_grid") in grids:
        kwargs = {"trained_grid": grids[kwargs["trained_grid"]]}
    with pytest.raises(error, match=match):
        apply_extrapolation(model, method, **kwargs)
    assert _state(model) == before


def test_riflex_on_an_image_model_is_a_value_error(tiny):
    for model in (tiny.CASES["flux"].make(), tiny.CASES["qwen-image"].make()):
        before = _state(model)
        with pytest.raises(ValueError, match="is an image model"):
            apply_extrapolation(model, "riflex")
        assert _state(model) == before


def test_family_specific_options_and_configurations(tiny):
    wan = tiny.make_wan()
    with pytest.raises(TypeError, match="for FLUX.1 only"):
        apply_extrapolation(wan, "dype-yarn", shift_cap=True)
    with pytest.raises(ValueError, match="temporal_axis must be 0"):
        apply_extrapolation(wan, "riflex", temporal_axis=1)
    with pytest.raises(ValueError, match="shift_cap=True needs the pipeline"):
        apply_extrapolation(tiny.make_flux(), "dype-yarn", shift_cap=True)
    from diffusers import CogVideoXTransformer3DModel

    absolute = CogVideoXTransformer3DModel(
        num_attention_heads=1,
        attention_head_dim=16,
        in_channels=4,
        out_channels=4,
        time_embed_dim=4,
        text_embed_dim=8,
        num_layers=1,
        sample_width=8,
        sample_height=8,
        sample_frames=9,
        max_text_seq_length=4,
    )
    with pytest.raises(ValueError, match="absolute positions"):
        apply_extrapolation(absolute, "pi")
    assert not hasattr(absolute, "_axialrope_extrapolation")
    from diffusers import QwenImageTransformer2DModel

    qwen = QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=4,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16,
        axes_dims_rope=(4, 6, 6),
    )
    qwen.pos_embed = torch.nn.Identity()  # a rope of another kind (Qwen-Image-Layered's is reached: test_qwen_kin)
    with pytest.raises(ValueError, match="only QwenEmbedRope, QwenEmbedLayer3DRope"):
        apply_extrapolation(qwen, "pi")
    assert not hasattr(qwen, "_axialrope_extrapolation")


def test_a_model_that_lost_its_module_is_not_restored_over(tiny):
    model = tiny.make_wan()
    handle = apply_extrapolation(model, "pi", trained_grid=(3, 4, 4))
    stranger = torch.nn.Identity()
    model.rope = stranger
    with pytest.raises(RuntimeError, match="was replaced since apply_extrapolation"):
        handle.remove()
    assert model.rope is stranger


def test_a_timestep_dependent_method_without_a_timestep_says_so(tiny):
    model = tiny.make_wan()
    apply_extrapolation(model, "dype-ntk", trained_grid=(3, 4, 4))
    with pytest.raises(RuntimeError, match="needs the diffusion time"):
        model.rope(torch.empty(1, 4, 6, 16, 16))
    model.rope(torch.empty(1, 4, 3, 8, 8))  # at the trained grid no time is needed
