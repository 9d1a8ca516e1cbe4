"""Axial RoPE factorises over its axes (each axis a 1D RoPE on its own pairs), for 1, 2 and 3 axes and both layouts.

Every case draws a random configuration: per-axis dimensions, per-axis thetas, a few
pass-through channels, and fractional coordinates. Rotations run in float64 on float32
tables, so equalities hold to about 1e-6.
"""

import random
from dataclasses import dataclass

import pytest
import torch

from axialrope import AxialRotaryEmbedding, RotaryEmbedding, apply_rotary

TOL = dict(rtol=1e-5, atol=1e-5)
CASES = [(seed, n_axes, layout) for seed in range(4) for n_axes in (1, 2, 3) for layout in ("half", "interleaved")]


@dataclass
class Case:
    rope: AxialRotaryEmbedding
    layout: str
    head_dim: int
    generator: torch.Generator

    @property
    def n_axes(self):
        return self.rope.n_axes

    def rotate(self, x, coords):
        """x (..., seq, head_dim), coords (seq, n_axes) -> rotated x."""
        cos, sin = self.rope(coords)
        return apply_rotary(x, cos, sin, self.layout)

    def logits(self, q, k, q_coords, k_coords):
        """One logit per token pair: <R(q_coords) q, R(k_coords) k>, shape (seq,)."""
        return (self.rotate(q, q_coords) * self.rotate(k, k_coords)).sum(-1)

    def vectors(self, n):
        return torch.randn(n, self.head_dim, dtype=torch.float64, generator=self.generator)

    def coords(self, n, spread=50.0):
        return (torch.rand(n, self.n_axes, dtype=torch.float64, generator=self.generator) - 0.5) * 2 * spread

    def axis_channels(self, axis):
        """Indices of the channels that axis `axis` rotates, in that axis's own half/interleaved order."""
        dims = self.rope.axes_dims
        first_pair, pairs = sum(dims[:axis]) // 2, dims[axis] // 2
        if self.layout == "interleaved":  # one contiguous block
            return torch.arange(2 * first_pair, 2 * (first_pair + pairs))
        half = self.rope.rotary_dim // 2  # the axis's section repeats in both halves
        section = torch.arange(first_pair, first_pair + pairs)
        return torch.cat((section, section + half))


def make_case(seed, n_axes, layout) -> Case:
    rng = random.Random(seed * 10 + n_axes)
    axes_dims = [2 * rng.randint(1, 4) for _ in range(n_axes)]
    thetas = [10 ** rng.uniform(1, 4) for _ in range(n_axes)]
    head_dim = sum(axes_dims) + 2 * rng.randint(0, 2)  # some channels pass through
    rope = AxialRotaryEmbedding(axes_dims, theta=thetas, head_dim=head_dim)
    return Case(rope, layout, head_dim, torch.Generator().manual_seed(seed))


def only_axis(coords, axis):
    """The same coordinates with every axis but `axis` set to zero."""
    kept = torch.zeros_like(coords)
    kept[:, axis] = coords[:, axis]
    return kept


def rotation_matrix(case, coords):
    """The (head_dim, head_dim) matrix M with rotate(x) = M x, at one coordinate (n_axes,)."""
    basis = torch.eye(case.head_dim, dtype=torch.float64)[:, None, :]  # (head_dim, seq=1, head_dim)
    return case.rotate(basis, coords[None])[:, 0, :].T


@pytest.mark.parametrize("seed, n_axes, layout", CASES)
def test_relative_shifting_any_axis_leaves_logits_unchanged(seed, n_axes, layout):
    case = make_case(seed, n_axes, layout)
    q, k, q_coords, k_coords = case.vectors(64), case.vectors(64), case.coords(64), case.coords(64)
    before = case.logits(q, k, q_coords, k_coords)
    for axis in range(n_axes):
        shift = torch.zeros(n_axes, dtype=torch.float64)
        shift[axis] = torch.randn((), dtype=torch.float64, generator=case.generator) * 1000
        torch.testing.assert_close(case.logits(q, k, q_coords + shift, k_coords + shift), before, **TOL)
    # but moving only the keys does change them: the test can fail
    assert not torch.allclose(case.logits(q, k, q_coords, k_coords + 1.0), before, **TOL)


@pytest.mark.parametrize("seed, n_axes, layout", [c for c in CASES if c[1] > 1])
def test_separable_mixed_differences_vanish(seed, n_axes, layout):
    """logit(Δ) = Σ_a g_a(Δ_a): f(Δ+u e_a+v e_b) - f(Δ+u e_a) - f(Δ+v e_b) + f(Δ) = 0 for a != b."""
    case = make_case(seed, n_axes, layout)
    q, k, q_coords, k_coords = case.vectors(64), case.vectors(64), case.coords(64), case.coords(64)
    for a in range(n_axes):
        for b in range(a + 1, n_axes):
            u = torch.zeros(n_axes, dtype=torch.float64)
            v = torch.zeros(n_axes, dtype=torch.float64)
            u[a], v[b] = 3.7, -5.3
            f = lambda step: case.logits(q, k, q_coords, k_coords + step)  # noqa: E731
            mixed = f(u + v) - f(u) - f(v) + f(torch.zeros(n_axes, dtype=torch.float64))
            torch.testing.assert_close(mixed, torch.zeros_like(mixed), **TOL)


@pytest.mark.parametrize("seed, n_axes, layout", CASES)
def test_exp_kernel_is_a_product_of_per_axis_kernels(seed, n_axes, layout):
    """exp(logit) = exp(pass-through term) * Π_a exp(logit of axis a's channels at axis a's coordinates)."""
    case = make_case(seed, n_axes, layout)
    q, k = case.vectors(64) / 3, case.vectors(64) / 3
    q_coords, k_coords = case.coords(64), case.coords(64)
    kernel = case.logits(q, k, q_coords, k_coords).exp()
    product = (q[:, case.rope.rotary_dim :] * k[:, case.rope.rotary_dim :]).sum(-1).exp()
    for axis in range(n_axes):
        mask = torch.zeros(case.head_dim, dtype=torch.float64)
        mask[case.axis_channels(axis)] = 1
        per_axis = case.logits(q * mask, k * mask, only_axis(q_coords, axis), only_axis(k_coords, axis))
        product = product * per_axis.exp()
    torch.testing.assert_close(kernel, product, **TOL)


@pytest.mark.parametrize("seed, n_axes, layout", CASES)
def test_rotation_is_block_diagonal_orthogonal_and_a_product_of_commuting_axis_rotations(seed, n_axes, layout):
    case = make_case(seed, n_axes, layout)
    coords = case.coords(1)[0]
    matrix = rotation_matrix(case, coords)
    eye = torch.eye(case.head_dim, dtype=torch.float64)
    torch.testing.assert_close(matrix.T @ matrix, eye, **TOL)  # orthogonal

    block_of = torch.full((case.head_dim,), -1)  # -1: pass-through channel
    for axis in range(n_axes):
        block_of[case.axis_channels(axis)] = axis
    crosses_blocks = block_of[:, None] != block_of[None, :]
    assert torch.count_nonzero(matrix[crosses_blocks]) == 0  # exactly block-diagonal
    passthrough = block_of == -1
    torch.testing.assert_close(matrix[passthrough][:, passthrough], eye[passthrough][:, passthrough], rtol=0, atol=0)

    per_axis = [rotation_matrix(case, only_axis(coords[None], axis)[0]) for axis in range(n_axes)]
    product = eye
    for m in per_axis:
        product = product @ m
    torch.testing.assert_close(product, matrix, **TOL)
    for a in range(n_axes):
        for b in range(a + 1, n_axes):
            torch.testing.assert_close(per_axis[a] @ per_axis[b], per_axis[b] @ per_axis[a], **TOL)

    x = case.vectors(32)
    torch.testing.assert_close(case.rotate(x, case.coords(32)).norm(dim=-1), x.norm(dim=-1), **TOL)


@pytest.mark.parametrize("seed, n_axes, layout", CASES)
def test_reduces_to_1d_rope_on_each_axis(seed, n_axes, layout):
    """With the other coordinates fixed (at any values), axis a's channels get 1D RoPE of theirs."""
    case = make_case(seed, n_axes, layout)
    x, coords = case.vectors(40), case.coords(40)
    for axis in range(n_axes):
        coords_axis_varies = case.coords(1).expand(40, -1).clone()
        coords_axis_varies[:, axis] = coords[:, axis]
        channels = case.axis_channels(axis)
        rotated = case.rotate(x, coords_axis_varies)[:, channels]
        one_d = RotaryEmbedding(case.rope.axes_dims[axis], theta=case.rope.thetas[axis])
        cos, sin = one_d(coords[:, axis])
        torch.testing.assert_close(rotated, apply_rotary(x[:, channels], cos, sin, layout), **TOL)


@pytest.mark.parametrize("seed, n_axes", [(c[0], c[1]) for c in CASES if c[2] == "half"])
def test_half_and_interleaved_agree_after_the_channel_permutation(seed, n_axes):
    """Half channel j <-> interleaved channel 2j; half channel r/2 + j <-> interleaved 2j + 1."""
    half_case, interleaved_case = make_case(seed, n_axes, "half"), make_case(seed, n_axes, "interleaved")
    r = half_case.rope.rotary_dim
    interleaved_to_half = torch.cat((torch.arange(0, r, 2), torch.arange(1, r, 2), torch.arange(r, half_case.head_dim)))
    x, coords = half_case.vectors(32), half_case.coords(32)
    as_half = half_case.rotate(x[:, interleaved_to_half], coords)
    as_interleaved = interleaved_case.rotate(x, coords)[:, interleaved_to_half]
    torch.testing.assert_close(as_half, as_interleaved, **TOL)
    q, k, k_coords = half_case.vectors(32), half_case.vectors(32), half_case.coords(32)
    torch.testing.assert_close(
        half_case.logits(q[:, interleaved_to_half], k[:, interleaved_to_half], coords, k_coords),
        interleaved_case.logits(q, k, coords, k_coords),
        **TOL,
    )
