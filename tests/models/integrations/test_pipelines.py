"""A pipeline passed to apply_extrapolation gets every model that carries a rope: Wan 2.2 A14B's
`transformer_2` (its low-noise expert) and the ControlNets of Flux and Qwen-Image (one or several)."""

import pytest
import torch
from diffusers import (
    FlowMatchEulerDiscreteScheduler,
    FluxControlNetPipeline,
    FluxMultiControlNetModel,
    QwenImageControlNetPipeline,
    WanPipeline,
)

from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import family_of


def _outputs(models_and_tinies, grid, timestep, run):
    return [run(model, small, grid, timestep) for model, small in models_and_tinies]


def _pipeline_cases(tiny):
    """(pipeline, [(model, its tiny config)], trained grid) for each kind of pipeline with several models."""
    wan, flux, qwen = tiny.TINY["wan"], tiny.TINY["flux"], tiny.TINY["qwen-image"]
    flux_net, qwen_net = tiny.TINY["flux-controlnet"], tiny.TINY["qwen-image-controlnet"]
    scheduler = FlowMatchEulerDiscreteScheduler()
    experts = [wan.make(), wan.make()]
    a14b = WanPipeline(
        tokenizer=None,
        text_encoder=None,
        transformer=experts[0],
        vae=None,
        scheduler=scheduler,
        transformer_2=experts[1],
        boundary_ratio=0.875,
    )
    nets = [flux_net.make(), flux_net.make()]
    flux_pipe = FluxControlNetPipeline(
        scheduler=scheduler,
        vae=None,
        text_encoder=None,
        tokenizer=None,
        text_encoder_2=None,
        tokenizer_2=None,
        transformer=flux.make(),
        controlnet=FluxMultiControlNetModel(nets),
    )
    qwen_pipe = QwenImageControlNetPipeline(
        scheduler=scheduler,
        vae=None,
        text_encoder=None,
        tokenizer=None,
        transformer=qwen.make(),
        controlnet=qwen_net.make(),
    )
    return {
        "wan-2.2-a14b": (a14b, [(experts[0], wan), (experts[1], wan)], wan.trained),
        "flux-multi-controlnet": (
            flux_pipe,
            [(flux_pipe.transformer, flux), (nets[0], flux_net), (nets[1], flux_net)],
            flux.trained,
        ),
        "qwen-image-controlnet": (
            qwen_pipe,
            [(qwen_pipe.transformer, qwen), (qwen_pipe.controlnet, qwen_net)],
            qwen.trained,
        ),
    }


@pytest.mark.parametrize("name", ["wan-2.2-a14b", "flux-multi-controlnet", "qwen-image-controlnet"])
def test_every_model_of_a_pipeline_is_extrapolated_and_restored(name, tiny):
    pipe, members, trained = _pipeline_cases(tiny)[name]
    grid = tuple(2 * n for n in trained)
    timestep = 0.5 * family_of(members[0][0]).time.at_noise
    at_trained = _outputs(members, trained, timestep, tiny.run)
    plain = _outputs(members, grid, timestep, tiny.run)
    handle = apply_extrapolation(pipe, "ntk", trained_grid=trained)
    assert [patch.transformer for patch in handle.patches] == [model for model, _ in members]
    beyond = _outputs(members, grid, timestep, tiny.run)
    still = _outputs(members, trained, timestep, tiny.run)
    assert all(torch.equal(a, b) for a, b in zip(still, at_trained, strict=True))
    handle.remove()
    assert all(not torch.equal(a, b) for a, b in zip(beyond, plain, strict=True))  # each model, not only the first
    assert all(torch.equal(a, b) for a, b in zip(_outputs(members, grid, timestep, tiny.run), plain, strict=True))
    assert all("_axialrope_extrapolation" not in vars(model) for model, _ in members)


def test_a_failure_on_a_later_model_leaves_every_model_untouched(tiny):
    pipe, members, trained = _pipeline_cases(tiny)["wan-2.2-a14b"]
    first, second = (model for model, _ in members)
    rope = second.rope
    apply_extrapolation(second, "pi", trained_grid=trained)  # the second expert is already extrapolated
    with pytest.raises(ValueError, match="already applied"):
        apply_extrapolation(pipe, "pi", trained_grid=trained)
    assert "_axialrope_extrapolation" not in vars(first) and type(first.rope).__name__ == "WanRotaryPosEmbed"
    second._axialrope_extrapolation.remove()
    assert second.rope is rope
