"""The extrapolated rope modules are still RoPE: `axialrope check`'s factorization checks pass on them.

Each family's table for one fixed grid beyond the trained one (so the method's plan is fixed) is
applied with diffusers' `apply_rotary_emb` (interleaved pairs, as every family's processor
rotates) to tokens at integer coordinates of that grid. A method's gain (YaRN's temperature,
DyPE-YaRN's 0.1 ln s + 1) scales q and k, not a rotation, so the checks see the table divided
by it. Qwen-Image centres its positions and LTX-Video maps them to [-1, 1), so grid index 0
is not position 0: the phase every token shares cancels in each logit and is divided out too.
The precision checks need coordinates near 65536, a grid far larger than a table here; the core's
float64 angles are checked for that in tests/core.
"""

import pytest
import torch
from diffusers.models.embeddings import apply_rotary_emb

from axialrope import EXTRAPOLATION_METHODS
from axialrope.models import apply_extrapolation
from axialrope.testing import RotaryUnderTest, run_checks

SIDE = 32  # coordinates of the checks stay below 8 + 2 shifts of at most 11
FACTORIZATION = ("relative", "separable", "orthogonal", "reduction", "batch")


def unit_pairs(case, table) -> torch.Tensor:
    """The family's table of the grid as unit complex numbers, (rows, pairs), in channel-pair order."""
    if case.name == "qwen-image":
        z = table[0]
    else:
        cos, sin = table
        if case.name == "flux":
            cos, sin = cos[3:], sin[3:]  # the three text rows come first
        cos, sin = (t.reshape(-1, t.shape[-1]) for t in (cos, sin))  # Wan (1, s, 1, d), LTX (1, s, d)
        z = torch.complex(cos[:, 0::2].double(), sin[:, 1::2].double())
    z = z.to(torch.complex128)
    z = z / z.abs()
    if case.name in ("ltx-video", "qwen-image"):
        z = z * z[0].conj()  # grid index 0 is not position 0 there: remove the phase every token shares
    return z


def rotation_of(case, z, grid):
    strides = torch.tensor([grid[1] * grid[2], grid[2], 1] if len(grid) == 3 else [grid[1], 1])

    def rotate(x, coords):
        rows = (coords.round().long() * strides).sum(-1)
        pairs = z[rows]
        cos = pairs.real.repeat_interleave(2, -1).to(x.dtype)
        sin = pairs.imag.repeat_interleave(2, -1).to(x.dtype)
        return apply_rotary_emb(x, (cos, sin))  # x (batch, heads, seq, dim), as CogVideoX's processor

    return rotate


@pytest.mark.parametrize("method", [m for m in EXTRAPOLATION_METHODS if m != "none"])
def test_extrapolated_tables_pass_the_factorization_checks(case, method):
    if method == "riflex" and not case.video:
        pytest.skip("riflex is for video")
    if method == "spa":
        pytest.skip("spa's tables are of bundled positions, a step function of the coordinate (test_spa.py)")
    model = case.make()
    grid = (SIDE,) * len(case.trained)
    handle = apply_extrapolation(model, method, trained_grid=case.trained)
    handle.time.set(torch.tensor([0.6 * case.timestep_scale]))  # as the transformer's pre-hook would
    table = case.rope_table(model, grid)
    handle.remove()
    z = unit_pairs(case, table)
    subject = RotaryUnderTest(
        rotation_of(case, z, grid), len(grid), 2 * z.shape[-1], name=f"{case.name} {method}", integer_grid=True
    )
    results = run_checks(subject, FACTORIZATION)
    failures = [str(r) for r in results if not r.passed]
    assert not failures, failures
