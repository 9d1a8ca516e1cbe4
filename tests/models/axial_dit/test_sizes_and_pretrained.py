"""Model sizes, and the diffusers round trip: save_pretrained then from_pretrained."""

import pytest
import torch

from axialrope.models import DIT_SIZES, DiT, RopeConfig, create_dit


@pytest.mark.parametrize(
    "size, width, depth, heads",
    [("tiny", 64, 2, 4), ("S", 384, 12, 6), ("B", 768, 12, 12), ("XL", 1152, 28, 16)],
)
def test_sizes_have_dit_shapes(size, width, depth, heads):
    with torch.device("meta"):  # shapes only: XL has 675M parameters
        model = create_dit(size, patch_size=2)
    assert (model.config.hidden_size, model.config.depth, model.config.num_heads) == (width, depth, heads)
    assert len(model.blocks) == depth
    assert sum(model.rope.embedding.axes_dims) == width // heads  # every channel of a head rotates


def test_xl_video_splits_its_72_channel_heads_over_three_axes():
    with torch.device("meta"):
        model = create_dit("XL", num_frames=16, temporal_patch_size=2)
    assert model.rope.embedding.axes_dims == (20, 26, 26)
    assert model.base_grid == (8, 16, 16)


def test_unknown_size_is_rejected():
    with pytest.raises(
        ValueError,
        match=r"unknown model size 'M'; "
        r"choose one of \['B', 'S', 'XL', 'mini', 'mini-deep', 'tiny'\]",
    ):
        create_dit("M")
    assert set(DIT_SIZES) == {"tiny", "mini", "mini-deep", "S", "B", "XL"}


def _plain(config):
    """A config as JSON holds it: tuples become lists, private keys dropped."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items() if not k.startswith("_")}


@pytest.mark.parametrize(
    "overrides",
    [
        {"rope_theta": (100.0, 1000.0), "qk_norm": True, "text_dim": 6},
        {"num_frames": 4, "temporal_patch_size": 2, "sample_size": (8, 12)},
        {"position_encoding": "sincos", "interpolation_scale": 2.0},
    ],
)
def test_save_then_load_gives_bit_identical_outputs(make_model, tmp_path, overrides):
    model = make_model(**overrides)
    model.save_pretrained(tmp_path)
    assert (tmp_path / "diffusion_pytorch_model.safetensors").exists()
    loaded = DiT.from_pretrained(tmp_path).eval()
    assert _plain(loaded.config) == _plain(model.config)
    video = "num_frames" in overrides
    x = torch.randn((2, 3, 4, 8, 12) if video else (2, 3, 8, 10))
    text = torch.randn(2, 3, 6) if "text_dim" in overrides else None
    args = (x, torch.tensor([5.0, 600.0]), torch.tensor([1, 4]))
    expected = model(*args, encoder_hidden_states=text).sample
    assert expected.abs().sum() > 0  # perturbed weights, so equality is not the zero init
    assert torch.equal(loaded(*args, encoder_hidden_states=text).sample, expected)
    assert loaded.rope_config == model.rope_config


def test_the_rope_config_is_a_sampling_setting_not_saved(make_model, tmp_path):
    model = make_model()
    model.rope_config = RopeConfig(scaling={"rope_type": "linear", "factor": 2.0})
    model.save_pretrained(tmp_path)
    assert DiT.from_pretrained(tmp_path).rope_config == RopeConfig(theta=model.config.rope_theta)
