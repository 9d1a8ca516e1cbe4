"""spa on QwenEmbedRope's kind (Qwen-Image, its ControlNet, NucleusMoE-Image): the generated image's y and x
bundled by the port's rules (centred positions, bundled from the first token), references and text as they are;
each joint attention call the mean of the family's processor over the variants' (image, text) tables."""

import numpy as np
import torch

from axialrope.models import apply_extrapolation


def _table(positions, dims, theta=10000.0):
    """complex64 (seq, sum(dims) // 2) of Qwen's rope at (seq, 3) float64 positions, angles in float64."""
    parts = [positions[:, [a]] * theta ** -(np.arange(0, d, 2) / d) for a, d in enumerate(dims)]
    angles = torch.from_numpy(np.concatenate(parts, axis=1))
    return torch.polar(torch.ones_like(angles), angles).to(torch.complex64)


def _centred(n):
    return np.arange(n) - (n - n // 2)


def test_joint_attention_is_the_mean_over_the_ports_variants(tiny, spa_port):
    """The processor's output (image and text streams) is the mean over the variants, written out here from the
    port's bundles, of the family's own processor with (image table, text table)."""
    model = tiny.make_qwen()
    handle = apply_extrapolation(model, "spa", trained_grid=(4, 4))
    attn = model.transformer_blocks[0].attn
    captured = {}
    remove = attn.register_forward_hook(
        lambda m, a, kw, out: captured.update(kwargs=dict(kw), out=out), with_kwargs=True
    )
    h, w = 8, 6
    with torch.no_grad():
        model(**tiny.families.qwen_inputs(model, (h, w), 0.5))
    remove.remove()

    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    ids = np.stack([np.zeros(h * w), ys.ravel(), xs.ravel()], axis=1)
    variants = spa_port.variants(ids, trained_extent=4, largest_index=3)
    assert len(variants) == 2 * handle.rope.plan((h, w)).bundle_size - 1 > 1
    start = max(h // 2, w // 2)  # the text's positions: as QwenEmbedRope places them for this image
    text = _table(np.repeat(start + np.arange(5.0)[:, None], 3, axis=1), (4, 6, 6))
    inner, kwargs = attn.processor.processor, captured["kwargs"]
    outs = []
    for variant in variants:
        placed = variant.copy()
        placed[:, 1] += _centred(h)[0]
        placed[:, 2] += _centred(w)[0]
        with torch.no_grad():
            outs.append(inner(attn, **{**kwargs, "image_rotary_emb": (_table(placed, (4, 6, 6)), text)}))
    for got, *each in zip(captured["out"], *outs, strict=True):
        torch.testing.assert_close(got, torch.stack(each).mean(0), rtol=1e-5, atol=1e-6)
    handle.remove()


def test_reference_images_and_text_keep_their_positions(tiny):
    """Qwen-Image-Edit's layout: the reference (frame 1) keeps the pipeline's positions under any `reference`
    rule, the text its trained positions; the generated image alone is bundled, and the plan is its grid's."""
    for rule in ("cover", "keep"):
        model = tiny.make_qwen()
        handle = apply_extrapolation(model, "spa", trained_grid=(4, 4), reference=rule)
        shapes = [[(1, 8, 8), (1, 10, 4)]]
        plain_image, plain_text = handle.rope.original(shapes, device="cpu", max_txt_seq_len=5)
        assert handle.rope.grid(handle.rope.shapes_of(shapes)) == (8, 8)
        image, text = handle.rope(shapes, device="cpu", max_txt_seq_len=5)
        torch.testing.assert_close(image[64:], plain_image[64:], rtol=0, atol=1e-6)
        torch.testing.assert_close(text, plain_text, rtol=0, atol=1e-6)
        assert not torch.allclose(image[:64], plain_image[:64])
        handle.remove()


def test_qwen_image_layered_bundles_its_layers_and_keeps_the_condition_image(tiny, spa_port):
    """Qwen-Image-Layered: every generated layer (frames 0, 1, ...) bundled by the port's rules, the condition
    image (the last, at frame -1) and the text as QwenEmbedLayer3DRope places them (the first variant's tables)."""
    small = tiny.TINY["qwen-image-layered"]
    model = small.make()
    handle = apply_extrapolation(model, "spa", trained_grid=small.trained)
    h, w, layers = 8, 8, 3
    shapes = [[(1, h, w)] * (layers + 1)]
    plain_image, plain_text = handle.rope.original(shapes, device="cpu", max_txt_seq_len=4)
    image, text = handle.rope(shapes, device="cpu", max_txt_seq_len=4)
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    ids = np.concatenate(
        [np.stack([np.full(h * w, float(layer)), ys.ravel(), xs.ravel()], axis=1) for layer in range(layers)]
    )
    placed = spa_port.variants(ids, trained_extent=4, largest_index=3)[0]
    placed[:, 1] += _centred(h)[0]
    placed[:, 2] += _centred(w)[0]
    dims = tuple(model.config.axes_dims_rope)
    torch.testing.assert_close(image[: layers * h * w], _table(placed, dims), rtol=0, atol=1e-6)
    torch.testing.assert_close(image[layers * h * w :], plain_image[layers * h * w :], rtol=0, atol=1e-6)
    torch.testing.assert_close(text, plain_text, rtol=0, atol=1e-6)
    handle.remove()
