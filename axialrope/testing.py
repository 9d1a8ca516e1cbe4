"""Property checks for any rotary position embedding: does it factorize like axial RoPE?

The subject is a function `rotate(x, coords) -> rotated x` with x (batch, heads, seq, dim) and
coords (seq, n_axes) float64, described by a `RotaryUnderTest`. Each check compares the function
with itself (and, where the per-axis layout is known, with the core's 1D RoPE), so it works on any
DiT's or library's RoPE without knowing its internals:

    relative     shifting every token along one axis leaves every q.k logit unchanged
    separable    mixed differences of logits across two axes vanish (per-axis kernels)
    orthogonal   inner products (hence norms) of vectors at one position are preserved
    reduction    each axis moves only its own channels, as a one-parameter rotation group;
                 with the layout known, each axis equals 1D RoPE on its channels
    batch        a sequence's result depends on nothing else of the batch
    precision    logits at a large coordinate in float32 or bfloat16 against float64 near 0

Errors are relative (logit errors over |q||k|, vector errors over |x|); a check that cannot
apply is "n/a". docs/checks.md describes each check in full.

    assert_rope_properties(my_rotate, n_axes=3, dim=64)     # in a pytest test
    for result in run_checks(RotaryUnderTest(my_rotate, 3, 64)):
        print(result)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from einops import einsum

from .rotary import apply_rotary, check_layout
from .tables import AxialRotaryEmbedding, RotaryEmbedding
from .validation import is_int

# A relative logit error of 1e-4 is far below anything a structural bug produces (order 0.1)
# and far above float32 rounding of tables and rotations (order 1e-7).
STRUCTURE_TOLERANCE = 1e-4
BATCH_TOLERANCE = 1e-5
# float32 with exact angles: float32 tables and a few float32 roundings of each rotated q and
# k keep the relative logit error below ~6e-7 (Cauchy-Schwarz); float32 angles at 2^16 are
# off by up to ~4e-3 rad. bfloat16: rounding the rotated q and k to 2^-9 each moves the
# logit by at most 2 * 2^-9 ~ 4e-3.
PRECISION_TOLERANCE = {torch.float32: 2e-6, torch.bfloat16: 1e-2}
LARGE_COORDINATE = 65536.0
CHECK_NAMES = (
    "relative",
    "separable",
    "orthogonal",
    "reduction",
    "batch",
    "precision_float32",
    "precision_bfloat16",
)

_SEQ = 12  # tokens per check sequence
_SPAN = 8  # coordinates drawn from [0, _SPAN)


@dataclass(frozen=True)
class CheckResult:
    """One property of one rotary function.

    passed: True, False, or None when the property does not apply (see explanation).
    worst_error: the largest relative error measured (nan when not applicable).
    """

    name: str
    passed: bool | None
    worst_error: float
    tolerance: float
    explanation: str

    @property
    def status(self) -> str:
        return "n/a" if self.passed is None else "pass" if self.passed else "fail"

    def __str__(self) -> str:
        return (
            f"{self.name}: {self.status} (worst error {self.worst_error:.1e}, "
            f"tolerance {self.tolerance:.0e}): {self.explanation}"
        )


@dataclass(frozen=True)
class RotaryUnderTest:
    """A rotary function and what the checks may assume about it.

    Args:
        rotate: (x, coords) -> rotated x; x (batch, heads, seq, dim) float32, float64 or
            bfloat16; coords (seq, n_axes) float64; returns a tensor shaped like x.
        n_axes: number of coordinate axes.
        dim: channels per head (rotated plus pass-through).
        name: shown in results.
        integer_grid: the function only takes non-negative integer coordinates (peers whose
            tables are built from grid sizes); coordinates and shifts are then integers.
        axes_dims, layout, thetas: the per-axis layout, when the function exposes it
            (rotary channels per axis, "half" or "interleaved", base per axis); enables the
            comparison with 1D RoPE in `check_reduction`.
        device: where x and coords are created.
    """

    rotate: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    n_axes: int
    dim: int
    name: str = "rotate"
    integer_grid: bool = False
    axes_dims: tuple[int, ...] | None = None
    layout: str | None = None
    thetas: tuple[float, ...] | None = None
    device: str | torch.device = "cpu"

    def __post_init__(self) -> None:
        if not callable(self.rotate):
            raise TypeError(f"rotate must be callable as rotate(x, coords), got {type(self.rotate).__name__}")
        for field, value in (("n_axes", self.n_axes), ("dim", self.dim)):
            if not is_int(value) or value <= 0:
                raise ValueError(f"{field} must be a positive int, got {value!r}")
        if self.axes_dims is None:
            if self.layout is not None or self.thetas is not None:
                raise ValueError("layout and thetas describe axes_dims: give axes_dims too")
            return
        axes_dims = tuple(self.axes_dims)
        if len(axes_dims) != self.n_axes or sum(axes_dims) > self.dim:
            raise ValueError(
                f"axes_dims must have one entry per axis ({self.n_axes}) summing to at most dim={self.dim}, "
                f"got {axes_dims}"
            )
        check_layout(self.layout)
        thetas = (10000.0,) * self.n_axes if self.thetas is None else tuple(self.thetas)
        if len(thetas) != self.n_axes:
            raise ValueError(f"thetas must have one entry per axis ({self.n_axes}), got {thetas}")
        object.__setattr__(self, "axes_dims", axes_dims)
        object.__setattr__(self, "thetas", thetas)

    @classmethod
    def from_embedding(
        cls, embedding: AxialRotaryEmbedding, layout: str = "half", dim: int | None = None, name: str | None = None
    ) -> RotaryUnderTest:
        """axialrope's own rotation: `apply_rotary(x, *embedding(coords), layout)`.

        dim: channels per head (default: the rotary dimension, no pass-through).
        """
        check_layout(layout)

        def rotate(x: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
            cos, sin = embedding(coords)
            return apply_rotary(x, cos, sin, layout)

        return cls(
            rotate,
            embedding.n_axes,
            embedding.rotary_dim if dim is None else dim,
            name=name or f"axialrope-{layout}",
            axes_dims=embedding.axes_dims,
            layout=layout,
            thetas=embedding.thetas,
        )


def axis_channels(axes_dims: Sequence[int], layout: str) -> list[torch.Tensor]:
    """Per axis, the indices of the channels it rotates, in that axis's own 1D layout order.

    interleaved: each axis is one contiguous block. half: pair j is channels (j, j + r/2),
    so each axis's section of pairs appears once in each half (the layouts of `axialrope.rotary`).
    """
    check_layout(layout)
    half_width = sum(axes_dims) // 2
    channels, first_pair = [], 0
    for dim in axes_dims:
        pairs = torch.arange(first_pair, first_pair + dim // 2)
        if layout == "interleaved":
            channels.append(torch.arange(2 * first_pair, 2 * first_pair + dim))
        else:
            channels.append(torch.cat((pairs, pairs + half_width)))
        first_pair += dim // 2
    return channels


# -- helpers -----------------------------------------------------------------------------


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _vectors(subject: RotaryUnderTest, gen, batch: int, seq: int = _SEQ, dtype=torch.float32) -> torch.Tensor:
    """(batch, 2 heads, seq, dim) standard normal vectors."""
    x = torch.randn(batch, 2, seq, subject.dim, generator=gen, dtype=torch.float64)
    return x.to(device=subject.device, dtype=dtype)


def _coords(subject: RotaryUnderTest, gen, seq: int = _SEQ) -> torch.Tensor:
    """(seq, n_axes) float64 coordinates in [0, _SPAN): fractional, or integers on a grid."""
    shape = (seq, subject.n_axes)
    if subject.integer_grid:
        coords = torch.randint(0, _SPAN, shape, generator=gen).double()
    else:
        coords = torch.rand(shape, generator=gen, dtype=torch.float64) * _SPAN
    return coords.to(subject.device)


def _shift(subject: RotaryUnderTest, gen) -> float:
    """A shift of 3 .. _SPAN + 3, fractional unless the function takes integer grids only."""
    if subject.integer_grid:
        return float(torch.randint(3, _SPAN + 3, (), generator=gen))
    return 3.0 + float(torch.rand((), generator=gen, dtype=torch.float64)) * _SPAN


def _along(coords: torch.Tensor, axis: int, amount: float) -> torch.Tensor:
    """(seq, n_axes) zeros with `amount` on `axis` (a displacement to add to coords)."""
    step = torch.zeros_like(coords)
    step[:, axis] = amount
    return step


def _rotate(subject: RotaryUnderTest, x: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
    out = subject.rotate(x, coords)
    if not isinstance(out, torch.Tensor) or out.shape != x.shape:
        raise ValueError(
            f"{subject.name}: rotate(x, coords) must return a tensor shaped like x {tuple(x.shape)}, "
            f"got {getattr(out, 'shape', type(out).__name__)}"
        )
    return out


def _logits(subject, q, k, q_coords, k_coords) -> torch.Tensor:
    """<R(q_coords) q_i, R(k_coords) k_j> / (|q_i| |k_j|) in float64: (batch, heads, seq_q, seq_k)."""
    rq = _rotate(subject, q, q_coords).double()
    rk = _rotate(subject, k, k_coords).double()
    logits = einsum(rq, rk, "b h i d, b h j d -> b h i j")
    norms = einsum(q.double().norm(dim=-1), k.double().norm(dim=-1), "b h i, b h j -> b h i j")
    return logits / norms


def _worst(errors: torch.Tensor) -> float:
    """max |errors|, with NaN counted as infinitely wrong (a NaN must never pass)."""
    return float(errors.abs().nan_to_num(nan=math.inf).max())


def _vector_error(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> float:
    """max |a - b| per token, relative to |x| of that token."""
    return _worst((a.double() - b.double()).norm(dim=-1) / x.double().norm(dim=-1))


def _result(name, error, tolerance, passed_text, failed_text) -> CheckResult:
    passed = bool(error <= tolerance)  # nan fails
    return CheckResult(name, passed, float(error), tolerance, passed_text if passed else failed_text)


# -- the checks --------------------------------------------------------------------------


def check_relative(subject: RotaryUnderTest, *, tolerance: float = STRUCTURE_TOLERANCE, seed: int = 0) -> CheckResult:
    """Logits <R(c_i) q_i, R(c_j) k_j> unchanged when every c moves by s along one axis."""
    gen = _generator(seed)
    q, k, coords = _vectors(subject, gen, 2), _vectors(subject, gen, 2), _coords(subject, gen)
    before = _logits(subject, q, k, coords, coords)
    worst, worst_axis, worst_shift = 0.0, 0, 0.0
    for axis in range(subject.n_axes):
        shift = _shift(subject, gen)
        moved = coords + _along(coords, axis, shift)
        error = _worst(_logits(subject, q, k, moved, moved) - before)
        if error >= worst:
            worst, worst_axis, worst_shift = error, axis, shift
    return _result(
        "relative",
        worst,
        tolerance,
        "logits unchanged when all tokens shift along any one axis",
        f"shifting all tokens by {worst_shift:g} along axis {worst_axis} changes logits by {worst:.1e}: "
        "the rotation is not relative (absolute angles?)",
    )


def check_separable(subject: RotaryUnderTest, *, tolerance: float = STRUCTURE_TOLERANCE, seed: int = 0) -> CheckResult:
    """Mixed differences f(c+u e_a+v e_b) - f(c+u e_a) - f(c+v e_b) + f(c) of logits vanish for a != b.

    Here f moves the keys only. Equivalently exp(logit) is a product of per-axis kernels:
    K(u+v) K(0) / (K(u) K(v)) = exp(mixed difference) = 1; both errors are measured.
    """
    if subject.n_axes < 2:
        return CheckResult("separable", None, math.nan, tolerance, "one axis: there is nothing to separate")
    gen = _generator(seed)
    q, k = _vectors(subject, gen, 2), _vectors(subject, gen, 2)
    q_coords, k_coords = _coords(subject, gen), _coords(subject, gen)
    f = lambda step: _logits(subject, q, k, q_coords, k_coords + step)  # noqa: E731
    base = f(torch.zeros_like(k_coords))
    worst, pair = 0.0, (0, 1)
    for a in range(subject.n_axes):
        for b in range(a + 1, subject.n_axes):
            u = _along(k_coords, a, _shift(subject, gen))
            v = _along(k_coords, b, _shift(subject, gen))
            mixed = f(u + v) - f(u) - f(v) + base
            kernel_ratio_error = _worst(mixed.expm1())  # K(u+v)K(0)/(K(u)K(v)) - 1
            error = max(_worst(mixed), kernel_ratio_error)
            if error >= worst:
                worst, pair = error, (a, b)
    return _result(
        "separable",
        worst,
        tolerance,
        "mixed differences across axes vanish: exp(logit) is a product of per-axis kernels",
        f"mixed difference across axes {pair[0]} and {pair[1]} is {worst:.1e}: the axes interact",
    )


def check_orthogonal(subject: RotaryUnderTest, *, tolerance: float = STRUCTURE_TOLERANCE, seed: int = 0) -> CheckResult:
    """<R(c) u, R(c) v> = <u, v> for vectors u, v at the same coordinates (so norms are kept)."""
    gen = _generator(seed)
    x, coords = _vectors(subject, gen, 4), _coords(subject, gen)
    rotated = _rotate(subject, x, coords).double()
    x = x.double()
    gram = lambda t: einsum(t, t, "b h s d, c h s d -> h s b c")  # noqa: E731
    norms = x.norm(dim=-1)
    scale = einsum(norms, norms, "b h s, c h s -> h s b c")
    worst = _worst((gram(rotated) - gram(x)) / scale)
    return _result(
        "orthogonal",
        worst,
        tolerance,
        "inner products and norms preserved",
        f"inner products change by {worst:.1e} of |u||v|: not a rotation (a gain such as YaRN's "
        "attention factor also does this)",
    )


def _axis_moves(subject, x, coords, base, axis, gen) -> tuple[torch.Tensor, float]:
    """Per channel, the largest change when only `axis` moves (relative to |x|), and the
    largest error of the group law R(c + s e_a) = R(s e_a) R(c)."""
    norm = x.double().norm(dim=-1, keepdim=True)
    moves, composition = torch.zeros(subject.dim, dtype=torch.float64, device=x.device), 0.0
    for _ in range(2):
        step = _along(coords, axis, _shift(subject, gen))
        moved = _rotate(subject, x, coords + step).double()
        change = ((moved - base).abs() / norm).nan_to_num(nan=math.inf).flatten(0, -2).amax(dim=0)
        moves = torch.maximum(moves, change)
        composed = _rotate(subject, _rotate(subject, x, coords), step)
        composition = max(composition, _vector_error(composed, moved, x))
    return moves, composition


def _layout_error(subject, x, coords, rotated) -> tuple[float, int]:
    """Largest difference between each axis's channels and 1D RoPE of that axis (pass-through
    channels must be unchanged); returns (error, worst axis or -1 for pass-through)."""
    errors = []
    for axis, channels in enumerate(axis_channels(subject.axes_dims, subject.layout)):
        cos, sin = RotaryEmbedding(subject.axes_dims[axis], theta=subject.thetas[axis])(coords[:, axis])
        expected = apply_rotary(x[..., channels].double(), cos, sin, subject.layout)
        errors.append((_vector_error(rotated[..., channels], expected, x), axis))
    passthrough = slice(sum(subject.axes_dims), subject.dim)
    if subject.dim > sum(subject.axes_dims):
        errors.append((_vector_error(rotated[..., passthrough], x[..., passthrough], x), -1))
    return max(errors)


def check_reduction(subject: RotaryUnderTest, *, tolerance: float = STRUCTURE_TOLERANCE, seed: int = 0) -> CheckResult:
    """With the other coordinates fixed, moving axis a acts as 1D RoPE on axis a's channels.

    Black-box: every axis moves some channels, no channel is moved by two axes, and each
    axis acts as a one-parameter group, R(c + s e_a) = R(s e_a) R(c). With `axes_dims`,
    `layout` and `thetas` known, axis a's channels must equal `apply_rotary` with
    `RotaryEmbedding(d_a, theta_a)` at coordinate c_a, and pass-through channels x.
    """
    gen = _generator(seed)
    x, coords = _vectors(subject, gen, 2), _coords(subject, gen)
    base = _rotate(subject, x, coords).double()
    moves, compositions = zip(
        *(_axis_moves(subject, x, coords, base, a, gen) for a in range(subject.n_axes)), strict=True
    )
    dead = [a for a, m in enumerate(moves) if float(m.max()) <= tolerance]
    if dead:
        explanation = f"axis {dead[0]} rotates no channel: the function ignores that coordinate (or stale tables)"
        return CheckResult("reduction", False, math.inf, tolerance, explanation)
    overlap, pair, channel = 0.0, (0, 1), 0
    for a in range(subject.n_axes):
        for b in range(a + 1, subject.n_axes):
            both = torch.minimum(moves[a], moves[b])  # how much both axes move each channel
            if float(both.max()) >= overlap:
                overlap, pair, channel = float(both.max()), (a, b), int(both.argmax())
    composition = max(compositions)
    layout, layout_axis = _layout_error(subject, x, coords, base) if subject.axes_dims else (0.0, 0)
    worst = max(overlap, composition, layout)
    if worst <= tolerance:
        explanation = "each axis rotates its own channels as a one-parameter group"
        if subject.axes_dims:
            explanation += f", equal to 1D RoPE ({subject.layout} layout) on them"
        return CheckResult("reduction", True, worst, tolerance, explanation)
    if overlap > tolerance:
        explanation = (
            f"axes {pair[0]} and {pair[1]} both move channel {channel} (by {overlap:.1e}): rotations mix the axes"
        )
    elif composition > tolerance:
        axis = max(range(subject.n_axes), key=lambda a: compositions[a])
        explanation = (
            f"R(c + s e_{axis}) differs from R(s e_{axis}) R(c) by {composition:.1e}: "
            "not a rotation linear in the coordinate (absolute angles, a gain, or stale tables)"
        )
    elif layout_axis < 0:
        explanation = f"pass-through channels change by {layout:.1e}"
    else:
        explanation = (
            f"axis {layout_axis}'s channels differ from 1D RoPE (apply_rotary + RotaryEmbedding, "
            f"{subject.layout} layout) by {layout:.1e}"
        )
    return CheckResult("reduction", False, worst, tolerance, explanation)


def check_batch(subject: RotaryUnderTest, *, tolerance: float = BATCH_TOLERANCE, seed: int = 0) -> CheckResult:
    """Rotating a sequence alone, inside a batch, in reversed batch order, or only a subset
    of its tokens (in shuffled order) gives the same vectors."""
    gen = _generator(seed)
    x, coords = _vectors(subject, gen, 3), _coords(subject, gen)
    full = _rotate(subject, x, coords)
    errors = {
        "alone": max(
            _vector_error(_rotate(subject, x[b : b + 1], coords), full[b : b + 1], x[b : b + 1])
            for b in range(x.shape[0])
        )
    }
    errors["in reversed batch order"] = _vector_error(_rotate(subject, x.flip(0), coords).flip(0), full, x)
    subset = torch.randperm(coords.shape[0], generator=gen)[: coords.shape[0] // 2].to(coords.device)
    errors["as a subset of its tokens"] = _vector_error(
        _rotate(subject, x[..., subset, :], coords[subset]), full[..., subset, :], x[..., subset, :]
    )
    how, worst = max(errors.items(), key=lambda item: item[1])
    return _result(
        "batch",
        worst,
        tolerance,
        "results independent of the batch, its order, and which tokens are rotated together",
        f"a sequence rotated {how} differs by {worst:.1e}: the result depends on what else is rotated",
    )


def check_precision(
    subject: RotaryUnderTest,
    dtype: torch.dtype = torch.float32,
    *,
    large: float = LARGE_COORDINATE,
    tolerance: float | None = None,
    seed: int = 0,
) -> CheckResult:
    """Logits of token pairs at coordinate `large` + (0 .. 16) on one axis, x in `dtype`,
    against the same pairs at 0 .. 16 evaluated with x in float64.

    For an exact relative RoPE the two are equal, and near the origin any implementation is
    exact to its table's rounding, so the difference is what `dtype`, the positions and the
    angle arithmetic lose at large coordinates. The other axes stay at 0. Coordinates are
    integers, and also fractional unless the function takes integer grids only; the worst
    of the two counts. The reference falls back to float32 when the function rejects
    float64; the check is n/a when the function rejects `dtype` or the large coordinate.
    """
    name = f"precision_{str(dtype).removeprefix('torch.')}"
    tolerance = PRECISION_TOLERANCE.get(dtype, 1e-2) if tolerance is None else tolerance
    gen = _generator(seed)
    q64, k64 = _vectors(subject, gen, 2, dtype=torch.float64), _vectors(subject, gen, 2, dtype=torch.float64)
    q, k = q64.to(dtype), k64.to(dtype)  # the reference sees the same rounded inputs
    kinds = ("integer",) if subject.integer_grid else ("integer", "fractional")
    errors, reference_dtype = {}, torch.float64  # (kind, axis) -> error
    for kind in kinds:
        for axis in range(subject.n_axes):
            offsets = torch.randint(0, 16, (_SEQ,), generator=gen).double()
            if kind == "fractional":
                offsets = offsets + torch.rand(_SEQ, generator=gen, dtype=torch.float64)
            near = torch.zeros(_SEQ, subject.n_axes, dtype=torch.float64)
            near[:, axis] = offsets
            near = near.to(subject.device)
            far = near + _along(near, axis, large)
            try:
                measured = _logits(subject, q, k, far, far)
            except (TypeError, ValueError, RuntimeError, NotImplementedError) as error:
                reason = f"rotate fails on {dtype} at coordinate {large:g}: {error}".splitlines()[0]
                return CheckResult(name, None, math.nan, tolerance, reason)
            try:
                reference = _logits(subject, q.to(reference_dtype), k.to(reference_dtype), near, near)
            except (TypeError, RuntimeError, NotImplementedError):
                reference_dtype = torch.float32
                reference = _logits(subject, q.float(), k.float(), near, near)
            errors[kind, axis] = _worst(measured - reference)
    (kind, axis), worst = max(errors.items(), key=lambda item: item[1])
    against = "float64" if reference_dtype == torch.float64 else "float32 (float64 rejected)"
    by_kind = ", ".join(f"{k} {max(e for (k2, _), e in errors.items() if k2 == k):.1e}" for k in kinds)
    return _result(
        name,
        worst,
        tolerance,
        f"logits at coordinate {large:g} match a {against} evaluation near the origin",
        f"logits at {kind} coordinates near {large:g} on axis {axis} differ from a {against} evaluation near "
        f"the origin ({by_kind}): angles or positions lose precision (or the rotation is not relative)",
    )


CHECKS: dict[str, Callable[..., CheckResult]] = {
    "relative": check_relative,
    "separable": check_separable,
    "orthogonal": check_orthogonal,
    "reduction": check_reduction,
    "batch": check_batch,
    "precision_float32": lambda subject, **kw: check_precision(subject, torch.float32, **kw),
    "precision_bfloat16": lambda subject, **kw: check_precision(subject, torch.bfloat16, **kw),
}


def run_checks(
    subject: RotaryUnderTest,
    checks: Sequence[str] | None = None,
    *,
    seed: int = 0,
    large: float = LARGE_COORDINATE,
) -> list[CheckResult]:
    """Runs the named checks (default: all, in the order of CHECK_NAMES) on one function."""
    names = CHECK_NAMES if checks is None else tuple(checks)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown checks {unknown}; choose from {list(CHECK_NAMES)}")
    results = []
    for name in names:
        options = {"seed": seed, "large": large} if name.startswith("precision") else {"seed": seed}
        results.append(CHECKS[name](subject, **options))
    return results


def assert_rope_properties(
    rotate: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | RotaryUnderTest,
    n_axes: int | None = None,
    dim: int | None = None,
    *,
    checks: Sequence[str] | None = None,
    seed: int = 0,
    large: float = LARGE_COORDINATE,
    **options: object,
) -> list[CheckResult]:
    """Runs the checks and raises AssertionError listing every failure (n/a does not fail).

    rotate: a function (then n_axes, dim and any `RotaryUnderTest` option are given here)
    or a `RotaryUnderTest`. Returns the results.
    """
    if isinstance(rotate, RotaryUnderTest):
        if n_axes is not None or dim is not None or options:
            raise TypeError("pass either a RotaryUnderTest or rotate with n_axes, dim and options, not both")
        subject = rotate
    else:
        if n_axes is None or dim is None:
            raise TypeError("assert_rope_properties(rotate, n_axes, dim) needs n_axes and dim")
        subject = RotaryUnderTest(rotate, n_axes, dim, **options)
    results = run_checks(subject, checks, seed=seed, large=large)
    failures = [r for r in results if r.passed is False]
    if failures:
        raise AssertionError(
            f"{subject.name} fails {len(failures)} RoPE properties:\n" + "\n".join(f"  {r}" for r in failures)
        )
    return results
