"""Positions fitted into a fixed extent (ropes/fitted.py): HunyuanDiT's pipeline fits every grid
into its 512 px box, so beyond the trained grid PI at the trained spacing is the pipeline's own fitting
on a square grid, while the other methods differ; a HunyuanDiT ControlNet pipeline gets both models."""

import pytest
import torch
from diffusers import DDPMScheduler, HunyuanDiTControlNetPipeline

from axialrope.models import apply_extrapolation


def test_pi_at_the_trained_spacing_is_the_pipelines_own_fitting_on_a_square_grid(tiny):
    family, small = tiny.FAMILY["hunyuan-dit"], tiny.TINY["hunyuan-dit"]
    model = small.make()
    grid = (8, 8)
    own = tiny.rope_table(model, family, small, grid, 500.0)
    tables = {}
    for method in ("pi", "ntk"):
        with apply_extrapolation(model, method, trained_grid=small.trained):
            tables[method] = tiny.rope_table(model, family, small, grid, 500.0)
    torch.testing.assert_close(tables["pi"], own, rtol=0, atol=1e-6)
    assert (tables["ntk"][0] - own[0]).abs().max() > 0.1


def test_a_hunyuan_dit_controlnet_pipeline_gets_the_transformer_and_the_controlnet(tiny):
    net_tiny, dit_tiny = tiny.TINY["hunyuan-dit-controlnet"], tiny.TINY["hunyuan-dit"]
    pipe = HunyuanDiTControlNetPipeline(
        vae=None,
        text_encoder=None,
        tokenizer=None,
        transformer=dit_tiny.make(),
        scheduler=DDPMScheduler(),
        safety_checker=None,
        feature_extractor=None,
        controlnet=net_tiny.make(),
        requires_safety_checker=False,
    )
    members = [(pipe.transformer, dit_tiny), (pipe.controlnet, net_tiny)]
    grid = (8, 8)
    plain = [tiny.run(model, small, grid, 500.0) for model, small in members]
    handle = apply_extrapolation(pipe, "ntk", trained_grid=dit_tiny.trained)
    assert [patch.transformer for patch in handle.patches] == [pipe.transformer, pipe.controlnet]
    beyond = [tiny.run(model, small, grid, 500.0) for model, small in members]
    handle.remove()
    assert all(not torch.equal(a, b) for a, b in zip(beyond, plain, strict=True))
    assert all(
        torch.equal(tiny.run(model, small, grid, 500.0), b) for (model, small), b in zip(members, plain, strict=True)
    )


def test_a_pipeline_table_that_does_not_fit_the_latent_is_refused_by_name(tiny):
    small = tiny.TINY["hunyuan-dit"]
    model = small.make()
    inputs = small.inputs(model, (8, 8), 500.0)
    inputs["image_rotary_emb"] = small.inputs(model, (8, 6), 500.0)["image_rotary_emb"]
    with (
        apply_extrapolation(model, "ntk", trained_grid=small.trained),
        pytest.raises(ValueError, match="image_rotary_emb has 48 rows for a grid of"),
    ):
        model(**inputs)
