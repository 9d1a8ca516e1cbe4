"""Cosmos: the config picks the trained grid, and each axis has its own theta from rope_scale."""

import pytest

from axialrope.models.integrations.registry import family_for_class
from axialrope.models.integrations.ropes.cosmos import cosmos_thetas


def test_the_config_picks_cosmos_trained_grid():
    cosmos = family_for_class("CosmosTransformer3DModel")
    assert cosmos.trained_grid({"extra_pos_embed_type": "learnable", "in_channels": 16}).grid == (16, 44, 80)
    assert cosmos.trained_grid({"extra_pos_embed_type": None, "in_channels": 16}).grid == (1, 48, 85)
    assert cosmos.trained_grid({"extra_pos_embed_type": None, "in_channels": 17}).grid == (24, 44, 80)


def test_each_axis_has_the_theta_its_rope_scale_gives(tiny):
    rope = tiny.TINY["cosmos"].make().rope
    thetas = cosmos_thetas({"attention_head_dim": 12, "rope_scale": (2.0, 1.5, 1.0)})
    ntk = (rope.t_ntk_factor, rope.h_ntk_factor, rope.w_ntk_factor)  # the module's own factors
    assert thetas == pytest.approx(tuple(10000.0 * f for f in ntk), rel=1e-12)
    assert len(set(thetas)) == 3


def test_a_transfer_pipeline_extrapolates_its_controlnet_with_the_transformer(tiny):
    """Cosmos2_5_TransferPipeline's constructor needs a VAE and cosmos_guardrail: a DiffusionPipeline holding the
    same two models stands in for it (apply_extrapolation reads `transformer` and `controlnet`)."""
    import torch
    from diffusers import DiffusionPipeline

    from axialrope.models import apply_extrapolation

    members = [tiny.TINY["cosmos"], tiny.TINY["cosmos-controlnet"]]
    pipe = DiffusionPipeline()
    pipe.register_modules(transformer=members[0].make(), controlnet=members[1].make())
    models = [pipe.transformer, pipe.controlnet]
    grid, trained = (6, 8, 8), members[0].trained
    plain = [tiny.run(model, small, grid, 0.5) for model, small in zip(models, members, strict=True)]
    handle = apply_extrapolation(pipe, "ntk", trained_grid=trained)
    assert [patch.transformer for patch in handle.patches] == models
    beyond = [tiny.run(model, small, grid, 0.5) for model, small in zip(models, members, strict=True)]
    handle.remove()
    assert all(not torch.equal(a, b) for a, b in zip(beyond, plain, strict=True))
    again = [tiny.run(model, small, grid, 0.5) for model, small in zip(models, members, strict=True)]
    assert all(torch.equal(a, b) for a, b in zip(again, plain, strict=True))
