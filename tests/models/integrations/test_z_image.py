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
    pipe = ZImageControlNetPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=None,
        text_encoder=None,
        tokenizer=None,
        transformer=transformer,
        controlnet=net,
    )
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
    assert all(
        torch.equal(tiny.run(model, small, trained, 0.5), expected)
        for (model, small), expected in zip(members, at_trained, strict=True)
    )
    handle.remove()
    assert pipe.transformer.rope_embedder is shared and pipe.controlnet.rope_embedder is shared
    assert all(not torch.equal(a, b) for a, b in zip(beyond, plain, strict=True))  # each model, not only the first
    assert all(
        torch.equal(tiny.run(model, small, grid, 0.5), expected)
        for (model, small), expected in zip(members, plain, strict=True)
    )


def test_a_controlnet_without_the_transformers_rope_is_refused_by_name():
    from diffusers import ZImageControlNetModel

    net = ZImageControlNetModel(
        all_patch_size=(2,),
        all_f_patch_size=(1,),
        dim=32,
        n_refiner_layers=1,
        n_heads=2,
        n_kv_heads=2,
        control_layers_places=[0],
        control_refiner_layers_places=[0],
        control_in_dim=4,
    )
    with pytest.raises(ValueError, match="RopeEmbedder"):
        apply_extrapolation(net, "pi")


def test_the_time_is_one_minus_the_t_argument(tiny):
    small = tiny.TINY["z-image"]
    model = small.make()
    handle = apply_extrapolation(model, "dype-ntk", trained_grid=small.trained)
    model(x=[torch.randn(4, 1, 16, 16)], t=torch.tensor([0.2]), cap_feats=[torch.randn(4, 8)])
    assert handle.time.value() == pytest.approx(0.8)
    handle.remove()


def _omni(model, grid, reference=(2, 3)):
    """Z-Image Omni's call: per sample a list of images, a reference first and the generated one last, each with
    its caption; no SigLIP features."""
    (h, w), g = grid, torch.Generator().manual_seed(0)
    x = [
        [
            torch.randn(4, 1, 2 * reference[0], 2 * reference[1], generator=g),
            torch.randn(4, 1, 2 * h, 2 * w, generator=g),
        ]
    ]
    captions = [[torch.randn(4, 8, generator=g), torch.randn(3, 8, generator=g)]]
    with torch.no_grad():
        out = model(
            x=x,
            t=torch.tensor([0.5]),
            cap_feats=captions,
            siglip_feats=[None],
            image_noise_mask=[[0, 1]],
            return_dict=False,
        )[0]
    return torch.cat([o.flatten() for o in out])


def test_omni_plans_from_the_generated_image_not_its_reference(tiny):
    small = tiny.TINY["z-image"]
    model = small.make()
    bigger = tuple(2 * n for n in small.trained)
    plain = {grid: _omni(model, grid) for grid in (small.trained, bigger)}
    for method in ("pi", "kappa-yarn"):
        with apply_extrapolation(model, method, trained_grid=small.trained):
            assert torch.equal(_omni(model, small.trained), plain[small.trained]), method
            assert not torch.equal(_omni(model, bigger), plain[bigger]), method
