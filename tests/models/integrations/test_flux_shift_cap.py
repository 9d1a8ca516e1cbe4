"""DyPE's pipeline caps Flux's schedule shift (max_image_seq_len = image_seq_len, so mu = max_shift);
apply_extrapolation does too, for every image beyond the trained grid."""

import pytest
import torch
from diffusers import FluxPipeline
from diffusers.pipelines.flux.pipeline_flux import calculate_shift

from axialrope.models import apply_extrapolation
from axialrope.models.integrations.ropes.flux import capped_shift


@pytest.fixture
def pipe(tiny_flux_folder):
    pipe = FluxPipeline.from_pretrained(tiny_flux_folder)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def timesteps(pipe, size, width=None):
    """The timesteps the transformer is called with for one 3-step sample of size x size (or width) px."""
    seen = []
    hook = pipe.transformer.register_forward_pre_hook(
        lambda m, a, kw: seen.append(float(kw["timestep"][0])), with_kwargs=True
    )
    try:
        pipe(
            "a cat",
            height=size,
            width=width or size,
            num_inference_steps=3,
            max_sequence_length=8,
            generator=torch.Generator().manual_seed(0),
            output_type="pt",
        )
    finally:
        hook.remove()
    return seen


def test_capped_shift_is_the_authors_mu_beyond_the_line_and_diffusers_own_before():
    config = {"base_image_seq_len": 256, "max_image_seq_len": 4096, "base_shift": 0.5, "max_shift": 1.15}
    for seq_len in (1024, 4096):  # at and below 1024 x 1024 px: diffusers' own mu
        mu = calculate_shift(seq_len)
        assert capped_shift(mu, config) == mu
    for seq_len in (16384, 65536):  # 2K and 4K: DyPE's pipeline computes mu with max_seq_len = seq_len
        assert capped_shift(calculate_shift(seq_len), config) == calculate_shift(seq_len, 256, seq_len, 0.5, 1.15)
    assert capped_shift(None, config) is None


def test_a_non_square_size_beyond_the_trained_grid_is_capped_below_the_lines_end():
    """512 x 1536 px is 32 x 96 tokens, 3072 of them, short of max_image_seq_len 4096: diffusers' mu is
    0.977, DyPE's pipeline takes max_shift, 1.15. Within the trained 64 x 64 diffusers' mu stays."""
    config = {"base_image_seq_len": 256, "max_image_seq_len": 4096, "base_shift": 0.5, "max_shift": 1.15}
    mu = calculate_shift(32 * 96)
    assert mu == pytest.approx(0.977, abs=1e-3)
    assert capped_shift(mu, config, (32, 96), (64, 64)) == pytest.approx(1.15, abs=1e-12)
    assert capped_shift(calculate_shift(48 * 64), config, (48, 64), (64, 64)) == calculate_shift(48 * 64)
    assert capped_shift(mu, config) == mu  # without the grid only a mu beyond the line's end is capped


def test_the_pipeline_caps_a_non_square_extrapolated_size(pipe):
    wide, inside = timesteps(pipe, 4, 32), timesteps(pipe, 16, 8)  # 2 x 16 tokens (32, short of the tiny 64); 8 x 4
    with apply_extrapolation(pipe, "dype-yarn", trained_grid=(8, 8)):
        capped = timesteps(pipe, 4, 32)
        assert timesteps(pipe, 16, 8) == inside  # within the trained grid: diffusers' own mu
    expected = pipe.scheduler.__class__.from_config(pipe.scheduler.config)
    expected.set_timesteps(sigmas=[1.0, 2 / 3, 1 / 3], mu=1.15)
    assert capped == pytest.approx((expected.timesteps / 1000).tolist(), rel=1e-6) and capped != wide


def test_dype_methods_cap_the_shift_by_default_and_remove_restores_it(pipe):
    trained, twice = (timesteps(pipe, size) for size in (16, 32))
    handle = apply_extrapolation(pipe, "dype-yarn", trained_grid=(8, 8))
    assert timesteps(pipe, 16) == trained  # 64 tokens: the schedule's own line, nothing capped
    capped = timesteps(pipe, 32)
    handle.remove()
    assert "set_timesteps" not in vars(pipe.scheduler)
    assert timesteps(pipe, 32) == twice
    # 256 tokens is past the tiny schedule's max_image_seq_len (64): the shift is held at max_shift
    expected = pipe.scheduler.__class__.from_config(pipe.scheduler.config)
    expected.set_timesteps(sigmas=[1.0, 2 / 3, 1 / 3], mu=calculate_shift(256, 16, 256, 0.5, 1.15))
    sigmas = (expected.timesteps / 1000).tolist()  # FluxPipeline passes the transformer timestep / 1000
    assert capped == pytest.approx(sigmas, rel=1e-6) and capped != twice


def test_the_cap_can_be_turned_off_or_on_for_any_method(pipe):
    twice = timesteps(pipe, 32)
    with apply_extrapolation(pipe, "dype-ntk", trained_grid=(8, 8), shift_cap=False):
        assert timesteps(pipe, 32) == twice  # the tables change, the schedule does not
        assert "set_timesteps" not in vars(pipe.scheduler)
    with apply_extrapolation(pipe, "none", trained_grid=(8, 8), shift_cap=True):
        assert "set_timesteps" in vars(pipe.scheduler)
        assert timesteps(pipe, 32) != twice
