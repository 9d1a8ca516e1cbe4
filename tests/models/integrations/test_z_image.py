"""Z-Image's RopeEmbedder, a plain object its ControlNet shares: swapped as a plain attribute on each model,
both models patched when a pipeline is passed, the shared object itself never changed; the ControlNet's
dims and theta read from that object; its `t` argument is 1 - sigma."""

import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler, ZImageControlNetPipeline

from axialrope.models import apply_extrapolation


def _pipeline(tiny):
    """A ZImageControlNetPipeline whose ControlNet shares its transformer's modules (from_transformer)."""
    net = tiny.TINY["z-image-controlnet"].make()
    transformer = tiny.TINY["z-image"].make()
    net = type(net).from_transformer(net, transformer)
    pipe = ZImageControlNetPipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=None, text_encoder=None,
                                    tokenizer=None, transformer=transformer, controlnet=net)
    return pipe, [(transformer, tiny.TINY["z-image"]), (net, tiny.TINY["z-image-controlnet"])]


def test_a_pipeline_patches_the_transformer_and_its_controlnet_sharing_one_rope(tiny):
    pipe, members = _pipeline(tiny)
    shared = pipe.transformer.rope_embedder
    assert pipe.controlnet.rope_embedder is shared and not isinstance(shared, torch.nn.Module)
    trained = members[0][1].trained
    grid = tuple(2 * n for n in trained)
    plain = [tiny.run(model, small, grid, 0.5) for model, small in members]
    at_trained = [tiny.run(model, small, trained, 0.5) for model, small in members]
    handle = apply_extrapolation(pipe, "ntk", trained_grid=trained)
    assert [patch.transformer for patch in handle.patches] == [pipe.transformer, pipe.controlnet]
    assert "rope_embedder" not in pipe.transformer._modules  # a plain attribute, as the original
    beyond = [tiny.run(model, small, grid, 0.5) for model, small in members]
    assert all(torch.equal(tiny.run(model, small, trained, 0.5), expected)
               for (model, small), expected in zip(members, at_trained, strict=True))
    handle.remove()
    assert pipe.transformer.rope_embedder is shared and pipe.controlnet.rope_embedder is shared
    assert all(not torch.equal(a, b) for a, b in zip(beyond, plain, strict=True))  # each model, not only the first
    assert all(torch.equal(tiny.run(model, small, grid, 0.5), expected)
               for (model, small), expected in zip(members, plain, strict=True))


def test_a_controlnet_without_the_transformers_rope_is_refused_by_name():
    from diffusers import ZImageControlNetModel

    net = ZImageControlNetModel(all_patch_size=(2,), all_f_patch_size=(1,), dim=32, n_refiner_layers=1, n_heads=2,
                                n_kv_heads=2, control_layers_places=[0], control_refiner_layers_places=[0],
                                control_in_dim=4)
    with pytest.raises(ValueError, match="RopeEmbedder"):
        apply_extrapolation(net, "pi")


def test_the_time_is_one_minus_the_t_argument(tiny):
    small = tiny.TINY["z-image"]
    model = small.make()
    handle = apply_extrapolation(model, "dype-ntk", trained_grid=small.trained)
    model(x=[torch.randn(4, 1, 16, 16)], t=torch.tensor([0.2]), cap_feats=[torch.randn(4, 8)])
    assert handle.time.value() == pytest.approx(0.8)
    handle.remove()
