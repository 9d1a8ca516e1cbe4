"""Inflating an image DiT into a video DiT: what carries over exactly, what approximately, what is refused."""

import pytest
import torch
from einops import rearrange

from axialrope.models import DiT, create_dit
from axialrope.models.axial_dit.inflate import inflate_from_image, initialize_from, rotary_pair_sources
from axialrope.pipelines.data.procedural import ShapesDataset
from axialrope.pipelines.dit.bundled import load_dit


def video_like(image, frames=4, temporal_patch_size=2, **overrides):
    """A fresh video DiT of the image model's shape (tiny, 8x8, 3 channels, 4 classes)."""
    kwargs = dict(hidden_size=64, depth=2, num_heads=4, sample_size=8, in_channels=3, num_classes=4)
    return DiT(**{**kwargs, **overrides}, num_frames=frames, temporal_patch_size=temporal_patch_size).eval()


def test_rotary_pairs_keep_their_axis_and_nearest_frequency_and_time_takes_the_rest():
    image = [10000.0 ** -(torch.arange(8) / 8)] * 2  # (y, x): 16 channels each
    video = [10000.0 ** -(torch.arange(n) / n) for n in (4, 6, 6)]  # (t, y, x): 8, 12, 12 channels
    sources = rotary_pair_sources(image, video)
    # y pairs 0..5 have exponents 0, 1/6 .. 5/6 of the image's k/8: nearest unused are 0, 1, 3, 4, 5, 7;
    # the leftover image pairs (y2, y6, x2, x6: exponents 1/4, 3/4) go to t pairs (exponents 0, 1/4, 1/2, 3/4)
    assert sources[4:10] == [0, 1, 3, 4, 5, 7]
    assert sources[10:] == [8, 9, 11, 12, 13, 15]
    assert sources[:4] == [2, 10, 6, 14]
    assert sorted(sources) == list(range(16))


def test_rotary_pairs_need_one_more_axis_and_as_many_pairs():
    freqs = torch.ones(4)
    with pytest.raises(ValueError, match="same number of pairs"):
        rotary_pair_sources([freqs, freqs], [freqs, freqs, torch.ones(2)])
    with pytest.raises(ValueError, match="one more axis"):
        rotary_pair_sources([freqs, freqs], [freqs, freqs])


def test_a_static_clip_embeds_like_the_image_and_is_decoded_as_copies(make_model):
    image = make_model()
    video = video_like(image)
    inflate_from_image(image, video)
    frame = torch.randn(2, 3, 8, 8)
    image_tokens, _ = image.patchify(frame)
    clip_tokens, grid = video.patchify(frame.unsqueeze(2).expand(-1, -1, 4, -1, -1))
    assert grid == (2, 4, 4)  # patch 2x2x2
    for t in range(2):  # the tokens of every temporal step equal the image's tokens
        torch.testing.assert_close(clip_tokens[:, 16 * t : 16 * t + 16], image_tokens)
    c = torch.randn(2, 64)
    image_out = image.patchify.unpatchify(image.final_layer(image_tokens, c), (4, 4), 3)  # (b, 3, 8, 8)
    video_out = video.patchify.unpatchify(video.final_layer(image_tokens.repeat(1, 2, 1), c), grid, 3)
    torch.testing.assert_close(video_out, image_out.unsqueeze(2).expand(-1, -1, 4, -1, -1))


def test_queries_and_keys_keep_their_content_under_the_channel_permutation(make_model):
    image = make_model()
    video = video_like(image)
    inflate_from_image(image, video)
    # tiny: head_dim 16, image (8, 8) -> video (4, 6, 6) channels; pair j is channels (j, j + 8)
    pairs = rotary_pair_sources(
        [f for f, _ in image.rope.embedding.axis_frequencies()], [f for f, _ in video.rope.embedding.axis_frequencies()]
    )
    channels = torch.tensor(pairs + [p + 8 for p in pairs])
    x = torch.randn(5, 64)
    split = "n (three h d) -> three n h d"
    q_image, k_image, v_image = rearrange(image.blocks[0].attn.qkv(x), split, three=3, h=4)
    q_video, k_video, v_video = rearrange(video.blocks[0].attn.qkv(x), split, three=3, h=4)
    torch.testing.assert_close(q_video, q_image[..., channels])
    torch.testing.assert_close(k_video, k_image[..., channels])
    torch.testing.assert_close(v_video, v_image)
    torch.testing.assert_close(  # so every content product q . k per head is unchanged
        torch.einsum("nhd,mhd->hnm", q_video, k_video), torch.einsum("nhd,mhd->hnm", q_image, k_image)
    )


def test_inflation_leaves_the_image_model_untouched(make_model):
    image = make_model()
    before = {k: v.clone() for k, v in image.state_dict().items()}
    inflate_from_image(image, video_like(image))
    assert all(torch.equal(before[k], v) for k, v in image.state_dict().items())


@torch.no_grad()
def test_the_inflated_bundled_model_predicts_static_clips_as_the_image_model_does():
    image = load_dit("shapes-rope")
    data = ShapesDataset(4, seed=1)
    x = torch.stack([data[i]["pixel_values"] for i in range(4)])
    labels = torch.tensor([int(data[i]["class_labels"]) for i in range(4)])
    noisy, t = 0.5 * x + 0.5 * torch.randn(x.shape, generator=torch.Generator().manual_seed(0)), torch.full((4,), 500.0)
    reference = image(noisy, t, labels).sample.unsqueeze(2).expand(-1, -1, 4, -1, -1)
    errors = {}
    for match in (True, False):
        video = create_dit("mini", in_channels=3, sample_size=32, num_frames=4, patch_size=4, num_classes=6).eval()
        inflate_from_image(image, video, match_frequencies=match)
        predicted = video(noisy.unsqueeze(2).expand(-1, -1, 4, -1, -1).contiguous(), t, labels).sample
        errors[match] = float((predicted - reference).norm() / reference.norm())
    # matched channels keep each learned rotation on its axis and near its frequency
    assert errors[True] < 0.12 and errors[False] > 2 * errors[True]


def test_initialize_from_copies_a_model_of_the_same_kind_exactly(make_model):
    source, target = make_model(seed=1), make_model(seed=2)
    assert set(initialize_from(source, target).values()) == {"copied"}
    assert all(torch.equal(v, target.state_dict()[k]) for k, v in source.state_dict().items())


def test_a_deeper_model_grown_from_a_shallower_one_starts_with_the_same_output(make_model):
    source = make_model()  # tiny: 2 blocks, every weight perturbed away from its init
    grown = DiT(hidden_size=64, depth=4, num_heads=4, sample_size=8, in_channels=3, num_classes=4).eval()
    report = initialize_from(source, grown)
    assert {k for k, v in report.items() if v == "new block (identity at start)"} == {
        k for k in grown.state_dict() if k.startswith(("blocks.2.", "blocks.3."))
    }
    x, t, y = torch.randn(3, 3, 8, 8), torch.tensor([10.0, 500.0, 990.0]), torch.tensor([0, 3, 4])
    torch.testing.assert_close(grown(x, t, y).sample, source(x, t, y).sample, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="from a deeper one"):
        initialize_from(grown, make_model())


@pytest.mark.parametrize(
    "overrides, error, message",
    [
        (dict(hidden_size=96), ValueError, "differ in hidden_size"),
        (dict(num_classes=5), ValueError, "differ in num_classes"),
        (dict(position_encoding="sincos"), ValueError, "two position_encoding='rope' models"),
    ],
)
def test_incompatible_models_are_refused_by_name(make_model, overrides, error, message):
    image = make_model()
    with pytest.raises(error, match=message):
        inflate_from_image(image, video_like(image, **overrides))


def test_only_image_to_video_inflation_is_defined(make_model):
    image = make_model()
    video = video_like(image)
    with pytest.raises(ValueError, match="video DiT cannot initialise an image DiT"):
        initialize_from(video, image)
    with pytest.raises(ValueError, match="cannot copy"):
        initialize_from(image, make_model(sample_size=8, patch_size=4))
    with pytest.raises(TypeError, match="must be DiT models"):
        initialize_from(torch.nn.Linear(2, 2), image)


def test_the_report_names_what_each_tensor_got(make_model):
    image = make_model()
    report = inflate_from_image(image, video_like(image, temporal_patch_size=2))
    assert report["patchify.proj.weight"] == report["final_layer.linear.bias"] == "inflated over 2 frames"
    assert report["blocks.0.attn.qkv.weight"] == "rotary channels matched"
    assert report["patchify.proj.bias"] == report["blocks.1.mlp.0.weight"] == "copied"
    report = inflate_from_image(image, video_like(image, temporal_patch_size=1))
    assert report["patchify.proj.weight"] == "copied"  # one frame per token: the image's own patch
