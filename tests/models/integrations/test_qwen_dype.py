"""DyPE on Qwen-Image as the authors' Qwen-Image code computes it (guyyariv/DyPE,
qwen/transformer_qwenimage.py): Dy-YaRN bands per image axis over the trained 83 tokens, the
0.1 ln s + 1 gain per scaled axis, text tokens on the trained table (no gain), and their time
t = 1 - timestep / 1000 of the sigma QwenImagePipeline passes. `dype_variant="flux"` takes their
Flux code's rules instead (t = sigma, text on the method's frequencies)."""

import numpy as np
import pytest
import torch

from axialrope.models import apply_extrapolation

SIGMA = 0.7  # the timestep QwenImagePipeline passes (sigma)
GRID, TEXT = (166, 124), 7  # 2x and about 1.5x the trained 83 x 83


@pytest.fixture
def qwen():
    """Qwen-Image's own rope settings (axes 16, 56, 56; theta 10000) on a one-block model."""
    from diffusers import QwenImageTransformer2DModel

    torch.manual_seed(0)
    return QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=4,
        num_layers=1,
        attention_head_dim=128,
        num_attention_heads=1,
        joint_attention_dim=16,
    )


def tables(model, variant=None):
    options = {} if variant is None else {"dype_variant": variant}
    handle = apply_extrapolation(model, "dype-yarn", **options)
    assert handle.trained_grid == (83, 83)
    handle.time.set(torch.tensor([SIGMA]))  # what the forward pre-hook does with the timestep
    image, text = model.pos_embed([[(1, *GRID)]], device=torch.device("cpu"), max_txt_seq_len=TEXT)
    handle.remove()
    return image, text


def expected_image(authors, reference, t):
    """Their image table in float64: frame 0, centred y and x, Dy-YaRN per axis at s = n / 83."""
    yx = reference.grid_indices(GRID) - np.array([n - n // 2 for n in GRID])
    angles, gains = [np.zeros((yx.shape[0], 8))], [1.0]
    for axis, n in enumerate(GRID):
        freqs, gain = authors.dype_yarn(56, 10000.0, n / 83, 83, t)
        angles.append(yx[:, axis, None] * freqs)
        gains.append(gain)
    cos, sin = reference.interleaved(angles, gains)
    return torch.complex(cos[:, ::2], sin[:, ::2])


def test_dype_yarn_on_qwen_image_is_the_authors_qwen_code(qwen, authors, reference):
    image, text = tables(qwen)
    torch.testing.assert_close(image, expected_image(authors, reference, 1 - SIGMA / 1000), rtol=0, atol=1e-6)
    trained_text = qwen.pos_embed([[(1, *GRID)]], device=torch.device("cpu"), max_txt_seq_len=TEXT)[1]
    assert torch.equal(text, trained_text)  # QwenEmbedRope's own text table: trained, no gain


def test_the_flux_variant_takes_sigma_and_scales_the_text_too(qwen, authors, reference):
    image, text = tables(qwen, "flux")
    torch.testing.assert_close(image, expected_image(authors, reference, SIGMA), rtol=0, atol=1e-6)
    start = max(n // 2 for n in GRID)
    where = start + np.arange(TEXT, dtype=float)[:, None]
    per_axis = [(reference.base_freqs(16, 10000.0), 1.0)] + [
        authors.dype_yarn(56, 10000.0, n / 83, 83, SIGMA) for n in GRID
    ]
    cos, sin = reference.interleaved([where * f for f, _ in per_axis], [g for _, g in per_axis])
    torch.testing.assert_close(text, torch.complex(cos[:, ::2], sin[:, ::2]), rtol=0, atol=1e-6)


def test_an_unknown_variant_is_refused_and_changes_nothing(qwen):
    rope = qwen.pos_embed
    with pytest.raises(ValueError, match="dype_variant must be one of"):
        apply_extrapolation(qwen, "dype-yarn", dype_variant="sd3")
    assert qwen.pos_embed is rope and "_axialrope_extrapolation" not in vars(qwen)
