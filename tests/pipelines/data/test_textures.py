"""The procedural textures: an endless plane at a fixed pixel scale, deterministic, four families."""

import math

import pytest
import torch

from axialrope.pipelines.data.textures import TEXTURE_KINDS, hash_uniform, render_textures, sample_textures


def test_a_texture_is_the_same_alone_and_in_a_batch():
    alone = render_textures(sample_textures(7, [5]), 24, 24)
    in_batch = render_textures(sample_textures(7, [3, 5, 9]), 24, 24)[1:2]
    assert torch.equal(alone, in_batch)


def test_other_seeds_and_indices_give_other_textures():
    a = render_textures(sample_textures(0, range(8)), 16, 16)
    b = render_textures(sample_textures(1, range(8)), 16, 16)
    assert (a - b).abs().mean() > 0.05
    assert (a[0] - a[1]).abs().mean() > 0.02


def test_a_larger_window_extends_a_smaller_one_at_the_same_pixel_scale():
    textures = sample_textures(3, range(40))
    small = render_textures(textures, 32, 32)
    large = render_textures(textures, 96, 64)
    assert torch.equal(large[:, :, :32, :32], small)  # the same plane, not a zoom: ground truth at every size


def test_every_family_is_drawn_in_range_with_its_own_statistics():
    textures = sample_textures(0, range(400))
    images = render_textures(textures, 32, 32)
    assert images.shape == (400, 3, 32, 32) and images.min() >= 0 and images.max() <= 1
    counts = torch.bincount(textures.labels, minlength=len(TEXTURE_KINDS))
    assert (counts > 60).all()  # about 100 each
    # clouds are smooth (low-frequency), the edged families are not: mean squared neighbour difference
    roughness = ((images[..., 1:] - images[..., :-1]) ** 2).mean(dim=(1, 2, 3))
    mean = {name: roughness[textures.labels == k].mean().item() for k, name in enumerate(TEXTURE_KINDS)}
    assert mean["clouds"] < 0.5 * min(mean["bricks"], mean["stones"], mean["grass"])


def test_grass_strokes_are_oriented_and_bricks_are_periodic():
    textures = sample_textures(0, range(400))
    images = render_textures(textures, 64, 64).mean(1)  # grey
    spectra = torch.fft.rfft2(images - images.mean(dim=(-2, -1), keepdim=True)).abs() ** 2
    ky = torch.fft.fftfreq(64)[:, None]
    kx = torch.fft.rfftfreq(64)[None, :]
    angle = torch.atan2(ky, kx)

    def anisotropy(k: int) -> float:
        """1: all spectral energy along one direction; 0: spread evenly over angles."""
        rows = spectra[textures.labels == k]
        vector = (rows * torch.exp(2j * angle)).sum(dim=(-2, -1)).abs() / rows.sum(dim=(-2, -1))
        return vector.mean().item()

    kinds = {name: k for k, name in enumerate(TEXTURE_KINDS)}
    assert anisotropy(kinds["grass"]) > 0.5 > 0.3 > anisotropy(kinds["stones"])
    # bricks repeat: the strongest non-zero frequency holds a large share of the energy (a few sharp peaks)
    bricks = spectra[textures.labels == kinds["bricks"]].flatten(1)
    stones = spectra[textures.labels == kinds["stones"]].flatten(1)
    peak_share = lambda s: (s.topk(4).values.sum(1) / s.sum(1)).mean().item()  # noqa: E731
    assert peak_share(bricks) > 1.5 * peak_share(stones)


def test_the_cell_hash_is_deterministic_and_uniform():
    cells = torch.arange(-500, 500)
    values = hash_uniform(cells[:, None], cells[None, :], torch.tensor(12345), 0)
    assert torch.equal(values, hash_uniform(cells[:, None], cells[None, :], torch.tensor(12345), 0))
    assert values.min() >= 0 and values.max() < 1
    assert abs(values.mean().item() - 0.5) < 0.01 and abs(values.var().item() - 1 / 12) < 0.005
    other = hash_uniform(cells[:, None], cells[None, :], torch.tensor(12345), 1)
    assert abs(torch.corrcoef(torch.stack([values.flatten(), other.flatten()]))[0, 1].item()) < 0.01
    assert not math.isclose(values[0, 0].item(), values[0, 1].item())


def test_bad_requests():
    with pytest.raises(ValueError, match="seed"):
        sample_textures(-1, [0])
    with pytest.raises(ValueError, match="indices"):
        sample_textures(0, [])
    with pytest.raises(ValueError, match="height"):
        render_textures(sample_textures(0, [0]), 0, 8)
