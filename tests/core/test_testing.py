"""axialrope.testing: every check passes on axialrope and fails on a rotation broken its way.

The broken rotations are built like axial RoPE (per-axis frequencies from the core,
`apply_rotary` on interleaved pairs) with one thing wrong each, so a check that passed
them all would be vacuous.
"""

import math

import pytest
import torch

from axialrope import AxialRotaryEmbedding, apply_rotary, rope_frequencies
from axialrope.testing import (
    CHECK_NAMES,
    RotaryUnderTest,
    assert_rope_properties,
    axis_channels,
    check_precision,
    check_separable,
    run_checks,
)

AXES_DIMS = (8, 12, 12)


def _angles(coords, dtype=torch.float64):
    """(seq, n_axes) -> (seq, pairs) in `dtype`: pair p turns by its axis's coordinate times its frequency."""
    inv_freq = torch.cat([rope_frequencies(d)[0] for d in AXES_DIMS]).to(dtype)
    pair_axis = torch.repeat_interleave(torch.arange(len(AXES_DIMS)), torch.tensor(AXES_DIMS) // 2)
    return coords.to(dtype)[:, pair_axis] * inv_freq


def _rotation(angles_of=_angles, gain=1.0):
    """rotate(x, coords) with the given angle function and a gain on cos and sin."""

    def rotate(x, coords):
        angles = angles_of(coords)
        return apply_rotary(x, (angles.cos() * gain).float(), (angles.sin() * gain).float(), "interleaved")

    return rotate


def _ignores_axis(coords):
    return _angles(coords * torch.tensor([1.0, 1.0, 0.0], dtype=coords.dtype))


def _absolute(coords):
    return _angles(coords**2 / 16)  # angle grows with the square of the position


def _mixes_axes(coords):
    mixed = coords.clone()
    mixed[:, 2] = coords[:, 2] + 0.5 * coords[:, 1]  # axis 2's channels also turn with axis 1
    return _angles(mixed)


def _float32_angles(coords):
    return _angles(coords, torch.float32).double()  # coordinate * frequency formed in float32


def _bfloat16_positions(coords):
    return _angles(coords.bfloat16().double())  # positions rounded to 8 significant bits


def _batch_coupled(x, coords):
    rotated = _rotation()(x, coords)
    return rotated + 0.05 * rotated.mean(dim=0, keepdim=True)  # leaks the rest of the batch in


BROKEN = {
    "ignores an axis": _rotation(_ignores_axis),
    "absolute angles": _rotation(_absolute),
    "mixes two axes": _rotation(_mixes_axes),
    "not orthogonal": _rotation(gain=1.1),
    "float32 angles": _rotation(_float32_angles),
    "bfloat16 positions": _rotation(_bfloat16_positions),
    "couples the batch": _batch_coupled,
}

# which broken rotation each check must catch
MUST_FAIL = {
    "relative": ["absolute angles"],
    "separable": ["mixes two axes"],
    "orthogonal": ["not orthogonal", "couples the batch"],
    "reduction": ["ignores an axis", "absolute angles", "mixes two axes", "not orthogonal"],
    "batch": ["couples the batch"],
    "precision_float32": ["float32 angles", "bfloat16 positions", "absolute angles"],
    "precision_bfloat16": ["bfloat16 positions"],
}


def _subject(rotate, **options):
    return RotaryUnderTest(rotate, n_axes=len(AXES_DIMS), dim=sum(AXES_DIMS) + 4, **options)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("axes_dims", [(16,), (8, 12), (8, 12, 12)])
def test_every_check_passes_on_axialrope(layout, axes_dims):
    subject = RotaryUnderTest.from_embedding(
        AxialRotaryEmbedding(axes_dims, theta=500.0), layout, dim=sum(axes_dims) + 4
    )
    results = run_checks(subject)
    assert [r.name for r in results] == list(CHECK_NAMES)
    for result in results:
        if result.name == "separable" and len(axes_dims) == 1:
            assert result.status == "n/a"
        else:
            assert result.passed, str(result)
            assert result.worst_error <= result.tolerance


def test_the_hand_built_reference_rotation_passes_everything():
    """The broken rotations differ from this one in one place each."""
    assert_rope_properties(_rotation(), len(AXES_DIMS), sum(AXES_DIMS) + 4, axes_dims=AXES_DIMS, layout="interleaved")


def test_every_check_has_a_broken_rotation_it_must_catch():
    assert set(MUST_FAIL) == set(CHECK_NAMES)
    assert {name for names in MUST_FAIL.values() for name in names} == set(BROKEN)


@pytest.mark.parametrize("check, broken", [(c, b) for c, names in MUST_FAIL.items() for b in names])
def test_check_fails_on_broken_rotation(check, broken):
    (result,) = run_checks(_subject(BROKEN[broken]), [check])
    assert result.status == "fail", str(result)
    assert not result.worst_error <= result.tolerance
    assert result.explanation


def test_reduction_compares_with_1d_rope_when_the_layout_is_known():
    """Claiming the wrong layout or theta for a correct rotation is caught."""
    rotate = _rotation()
    right = run_checks(_subject(rotate, axes_dims=AXES_DIMS, layout="interleaved"), ["reduction"])[0]
    wrong_layout = run_checks(_subject(rotate, axes_dims=AXES_DIMS, layout="half"), ["reduction"])[0]
    wrong_theta = run_checks(
        _subject(rotate, axes_dims=AXES_DIMS, layout="interleaved", thetas=(10000.0, 10000.0, 100.0)), ["reduction"]
    )[0]
    assert right.passed and "1D RoPE" in right.explanation
    assert not wrong_layout.passed and not wrong_theta.passed
    assert "axis 2" in wrong_theta.explanation


def test_a_rotation_mixing_axes_is_still_relative_and_orthogonal():
    """Checks are specific: only separability and reduction see the mixing."""
    results = {r.name: r for r in run_checks(_subject(BROKEN["mixes two axes"]))}
    assert results["relative"].passed and results["orthogonal"].passed
    assert not results["separable"].passed and "axes 1 and 2" in results["separable"].explanation


def test_an_ignored_axis_is_named():
    (result,) = run_checks(_subject(BROKEN["ignores an axis"]), ["reduction"])
    assert result.worst_error == math.inf and "axis 2 rotates no channel" in result.explanation


def test_float32_angles_pass_at_small_coordinates_and_in_bfloat16():
    """The precision failure grows with the coordinate; in bfloat16 it drowns in rounding."""
    subject = _subject(BROKEN["float32 angles"])
    assert check_precision(subject, torch.float32, large=64.0).passed
    assert check_precision(subject, torch.bfloat16).passed
    assert not check_precision(subject, torch.float32).passed


def test_positions_rounded_to_float32_fail_only_at_fractional_coordinates():
    """Like Flux's FluxPosEmbed (ids.float(), then float64 angles): exact for integer ids."""
    rounds_positions = _rotation(lambda coords: _angles(coords.float().double()))
    assert check_precision(_subject(rounds_positions, integer_grid=True), torch.float32).passed  # integers only
    result = check_precision(_subject(rounds_positions), torch.float32)
    assert not result.passed and "at fractional coordinates" in result.explanation


def test_nan_never_passes():
    results = run_checks(_subject(lambda x, coords: x * math.nan))
    assert [r.status for r in results] == ["fail"] * len(CHECK_NAMES)


def test_separability_is_not_applicable_to_one_axis():
    result = check_separable(RotaryUnderTest(_rotation(), 1, 8))
    assert result.status == "n/a" and result.passed is None and math.isnan(result.worst_error)


def test_a_dtype_the_function_rejects_is_not_applicable():
    def float_only(x, coords):
        if x.dtype == torch.bfloat16:
            raise TypeError("bfloat16 is not supported")
        return _rotation()(x, coords)

    result = check_precision(_subject(float_only), torch.bfloat16)
    assert result.status == "n/a" and "bfloat16 is not supported" in result.explanation


def test_a_coordinate_the_function_rejects_is_not_applicable():
    def short_table(x, coords):
        if coords.max() >= 1024:
            raise ValueError("positions beyond 1023 are not in the table")
        return _rotation()(x, coords)

    result = check_precision(_subject(short_table), torch.float32)
    assert result.status == "n/a" and "beyond 1023" in result.explanation
    assert check_precision(_subject(short_table), torch.float32, large=1000.0).passed


def test_integer_grid_functions_only_see_non_negative_integer_coordinates():
    seen = []

    def grid_only(x, coords):
        seen.append(coords)
        return _rotation()(x, coords)

    assert_rope_properties(grid_only, len(AXES_DIMS), sum(AXES_DIMS), integer_grid=True)
    coords = torch.cat(seen)
    assert (coords >= 0).all() and (coords == coords.round()).all()


def test_assert_helper_lists_every_failure():
    with pytest.raises(AssertionError) as failure:
        assert_rope_properties(_subject(BROKEN["mixes two axes"], name="mixer"))
    message = str(failure.value)
    assert "mixer fails 2 RoPE properties" in message
    assert "separable: fail" in message and "reduction: fail" in message


def test_axis_channels_follow_the_layouts():
    half = axis_channels((4, 2), "half")
    assert [c.tolist() for c in half] == [[0, 1, 3, 4], [2, 5]]
    interleaved = axis_channels((4, 2), "interleaved")
    assert [c.tolist() for c in interleaved] == [[0, 1, 2, 3], [4, 5]]


def test_bad_descriptions_are_rejected():
    with pytest.raises(ValueError, match="n_axes"):
        RotaryUnderTest(_rotation(), 0, 8)
    with pytest.raises(ValueError, match="axes_dims"):
        RotaryUnderTest(_rotation(), 2, 8, axes_dims=(8, 8), layout="half")
    with pytest.raises(ValueError, match="layout"):
        RotaryUnderTest(_rotation(), 1, 8, axes_dims=(8,), layout="pairs")
    with pytest.raises(TypeError, match="callable"):
        RotaryUnderTest("rotate", 1, 8)
    with pytest.raises(ValueError, match="unknown checks"):
        run_checks(_subject(_rotation()), ["relativity"])


def test_a_function_returning_the_wrong_shape_is_reported():
    with pytest.raises(ValueError, match="shaped like x"):
        run_checks(_subject(lambda x, coords: x[..., :4]), ["orthogonal"])
