"""rms_norm_rotary_qk: RMSNorm then RoPE in one pass equals the two ops one after the other.

The reference is the unfused pair in float64: torch's F.rms_norm, then apply_rotary. Each
kernel (eager, inductor-compiled, Triton under its interpreter, the composite formula that
torch.compile traces) must match it forward, and its gradients must pass gradcheck.
"""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import axialrope.kernels.backends as backends
from axialrope import apply_rotary_qk, rms_norm_rotary_qk, rotary_backend
from axialrope.kernels import fused_eager, triton_rope

BACKENDS = ["eager", "composite", "few_ops", "auto"]  # "compiled" costs a compile per spec: fewer cases below


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def unfused(q, k, cos, sin, q_weight=None, k_weight=None, eps=1e-6, layout="half", across_heads=False):
    """F.rms_norm over each head (or all heads of a token) then apply_rotary_qk, in float64."""

    def norm(x, weight):
        row = tuple(x.shape[-2:]) if across_heads else (x.shape[-1],)
        weight = None if weight is None else weight.double().reshape(row)
        return F.rms_norm(x.double(), row, weight, eps)

    return apply_rotary_qk(norm(q, q_weight), norm(k, k_weight), cos.double(), sin.double(), layout)


# (q shape, k shape, table shape, across_heads): what DiTs hand over
CASES = {
    "heads first": ((2, 3, 5, 16), (2, 3, 5, 16), (5, 8), False),
    "grouped-query k, partial rotary": ((2, 4, 5, 20), (2, 2, 5, 20), (5, 6), False),
    "seq first (Flux)": ((2, 5, 3, 16), (2, 5, 3, 16), (5, 1, 8), False),
    "across heads (Wan)": ((2, 5, 3, 12), (2, 5, 3, 12), (1, 5, 1, 6), True),
    "across heads, partial": ((2, 5, 3, 12), (2, 5, 2, 12), (5, 1, 4), True),
}


def make(case, dtype=torch.float32, weights=True):
    q_shape, k_shape, table_shape, across = CASES[case]
    q, k = randn(*q_shape, dtype=dtype), randn(*k_shape, dtype=dtype, seed=1)
    angles = randn(*table_shape, dtype=torch.float64, seed=2) * 10
    cos, sin = angles.cos().float(), angles.sin().float()
    row = lambda shape: shape[-2] * shape[-1] if across else shape[-1]  # noqa: E731
    qw = 1 + 0.3 * randn(row(q_shape), seed=3) if weights else None
    kw = 1 + 0.3 * randn(row(k_shape), seed=4) if weights else None
    return q, k, cos, sin, qw, kw, across


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_rms_norm_then_rotation(backend, layout, case):
    q, k, cos, sin, qw, kw, across = make(case)
    with rotary_backend(backend):
        got = rms_norm_rotary_qk(q, k, cos, sin, qw, kw, 1e-6, layout, across_heads=across)
    expected = unfused(q, k, cos, sin, qw, kw, 1e-6, layout, across)
    for out, ref, x in zip(got, expected, (q, k), strict=True):
        assert out.dtype == x.dtype and out.shape == x.shape
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("case", ["grouped-query k, partial rotary", "across heads (Wan)"])
def test_compiled_kernel_matches_rms_norm_then_rotation(layout, case):
    q, k, cos, sin, qw, kw, across = make(case)
    with rotary_backend("compiled"):
        got = rms_norm_rotary_qk(q, k, cos, sin, qw, kw, 1e-6, layout, across_heads=across)
    for out, ref in zip(got, unfused(q, k, cos, sin, qw, kw, 1e-6, layout, across), strict=True):
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("backend", ["eager", "composite", "few_ops"])
def test_other_dtypes_round_once(dtype, backend):
    q, k, cos, sin, qw, kw, across = make("grouped-query k, partial rotary", dtype)
    with rotary_backend(backend):
        got = rms_norm_rotary_qk(q, k, cos, sin, qw, kw, layout="interleaved")
    expected = unfused(q, k, cos, sin, qw, kw, layout="interleaved")
    eps = torch.finfo(dtype).eps if dtype != torch.float64 else 1e-12
    for out, ref in zip(got, expected, strict=True):
        assert out.dtype == dtype
        # one rounding of a float32 (float64) result: within half an ulp of the exact value
        torch.testing.assert_close(out.double(), ref, rtol=eps, atol=eps * ref.abs().max().item())


def test_without_weights_and_with_another_eps():
    q, k, cos, sin, _, _, across = make("heads first", weights=False)
    got = rms_norm_rotary_qk(q * 1e-3, k, cos, sin, eps=1e-2)  # eps matters at this scale
    expected = unfused(q * 1e-3, k, cos, sin, eps=1e-2)
    for out, ref in zip(got, expected, strict=True):
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "backend, layout, case",
    [
        (backend, layout, case)
        for backend in ("eager", "few_ops")
        for layout in ("half", "interleaved")
        for case in ("grouped-query k, partial rotary", "across heads, partial")
    ]
    + [("compiled", "half", "grouped-query k, partial rotary"), ("compiled", "interleaved", "across heads, partial")],
)
def test_gradcheck(backend, layout, case):
    q, k, cos, sin, qw, kw, across = make(case, torch.float64)
    q, k, qw, kw = (t.double().requires_grad_() for t in (q, k, qw, kw))
    cos, sin = cos.double(), sin.double()

    def fn(q, k, qw, kw):
        return rms_norm_rotary_qk(q, k, cos, sin, qw, kw, 1e-6, layout, across_heads=across)

    with rotary_backend(backend):
        assert torch.autograd.gradcheck(fn, (q, k, qw, kw))


@pytest.mark.parametrize(
    "backend, layout", [("eager", "half"), ("eager", "interleaved"), ("composite", "half"), ("compiled", "interleaved")]
)
def test_gradients_equal_the_unfused_pair(backend, layout):
    q, k, cos, sin, qw, kw, across = make("across heads, partial", torch.float64)
    leaves = [t.double().requires_grad_() for t in (q, k, qw, kw)]
    upstream = (randn(*q.shape, dtype=torch.float64, seed=8), randn(*k.shape, dtype=torch.float64, seed=9))
    with rotary_backend(backend):
        got = rms_norm_rotary_qk(*leaves[:2], cos, sin, *leaves[2:], 1e-6, layout, across_heads=True)
    fused_grads = torch.autograd.grad(got, leaves, upstream)
    expected = unfused(*leaves[:2], cos, sin, *leaves[2:], 1e-6, layout, True)
    reference_grads = torch.autograd.grad(expected, leaves, upstream)
    for fused, reference in zip(fused_grads, reference_grads, strict=True):
        torch.testing.assert_close(fused, reference)


def test_only_the_gradients_asked_for_are_computed():
    q, k, cos, sin, qw, kw, _ = make("heads first")
    q.requires_grad_()
    out_q, out_k = rms_norm_rotary_qk(q, k, cos, sin, qw, kw)
    out_q.sum().backward()  # k's output unused: no gradient flows to it
    expected = torch.autograd.grad(unfused(q, k, cos, sin, qw, kw)[0].sum(), q)[0]
    torch.testing.assert_close(q.grad, expected, rtol=1e-5, atol=1e-5)


def test_tables_that_need_gradients_get_them():
    q, k, _, _, qw, kw, _ = make("heads first", torch.float64)
    angles = randn(5, 8, dtype=torch.float64, seed=5).requires_grad_()
    out = rms_norm_rotary_qk(q.double(), k.double(), angles.cos(), angles.sin(), qw, kw)
    (grad,) = torch.autograd.grad(sum(o.sum() for o in out), angles)
    reference = unfused(q, k, angles.cos(), angles.sin(), qw, kw)
    (expected,) = torch.autograd.grad(sum(o.sum() for o in reference), angles)
    torch.testing.assert_close(grad, expected)


def test_backward_keeps_no_normalised_copy():
    """Saved for backward: the tables, q, k, one scale per row and the weights, nothing x-sized besides q and k."""
    q, k, cos, sin, qw, kw, _ = make("heads first")
    q.requires_grad_()
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(tuple(t.shape)) or t, lambda t: t):
        with rotary_backend("eager"):
            rms_norm_rotary_qk(q, k, cos, sin, qw, kw)
    assert sorted(saved) == sorted(
        [tuple(cos.shape)] * 2
        + [tuple(q.shape), tuple(k.shape), (2, 3, 5, 1), (2, 3, 5, 1), tuple(qw.shape), tuple(kw.shape)]
    )


def test_compiled_kernel_keeps_the_memory_layout_of_a_projection():
    """q, k as (batch, heads, seq, dim) views of a (batch, seq, 3, heads, dim) projection."""
    qkv = randn(2, 5, 3, 4, 16)
    q, k, _ = qkv.permute(2, 0, 3, 1, 4)
    angles = randn(5, 8, dtype=torch.float64, seed=2)
    cos, sin = angles.cos().float(), angles.sin().float()
    with rotary_backend("compiled"):
        got = rms_norm_rotary_qk(q, k, cos, sin)
    with rotary_backend("eager"):
        eager = rms_norm_rotary_qk(q, k, cos, sin)
    for out, ref in zip(got, eager, strict=True):
        assert out.transpose(1, 2).is_contiguous()
        torch.testing.assert_close(out, ref)


def test_traces_into_one_graph():
    # the eager backend runs dynamo's full tracing (where graph breaks happen) without codegen
    q, k, cos, sin, qw, kw, across = make("across heads (Wan)")

    def fn(q, k):
        return rms_norm_rotary_qk(q, k, cos, sin, qw, kw, 1e-6, "interleaved", across_heads=True)

    compiled = torch.compile(fn, fullgraph=True, backend="eager")
    for got, expected in zip(compiled(q, k), fn(q, k), strict=True):
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(eps=0.0), ValueError, "eps must be a positive number"),
        (dict(eps=-1e-6), ValueError, "eps must be a positive number"),
        (dict(eps=True), ValueError, "eps must be a positive number"),
        (dict(q_weight=torch.ones(15)), ValueError, "q_weight must have one value per channel of q's head_dim 16"),
        (dict(k_weight=torch.ones(3, 16)), ValueError, "k_weight must have one value per channel"),
        (dict(q_weight=torch.ones(16, dtype=torch.long)), TypeError, "q_weight must be a floating-point tensor"),
        (dict(k_weight=[1.0] * 16), TypeError, "k_weight must be a torch.Tensor or None"),
        (dict(q=torch.ones(2, 3, 5, 16, dtype=torch.long)), TypeError, "q must be a real floating-point tensor"),
        (dict(k="keys"), TypeError, "k must be a torch.Tensor"),
        (dict(k=torch.ones(2, 3, 5, 8)), ValueError, "too wide for k"),
        (dict(layout="pairs"), ValueError, "layout must be one of"),
        (dict(across_heads=1), TypeError, "across_heads must be a bool"),
        (
            dict(
                q=torch.ones(16),
                k=torch.ones(16),
                cos=torch.ones(8),
                sin=torch.ones(8),
                q_weight=None,
                k_weight=None,
                across_heads=True,
            ),
            ValueError,
            "across_heads needs q shaped",
        ),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, match):
    q, k, cos, sin, qw, kw, _ = make("heads first")
    args = dict(q=q, k=k, cos=cos, sin=sin, q_weight=qw, k_weight=kw)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        rms_norm_rotary_qk(**args)


@pytest.mark.parametrize("case", ["heads first", "across heads (Wan)"])
def test_a_repeated_decode_call_skips_the_checks_and_keeps_gradients(case, monkeypatch):
    """One token: after the first call a signature lookup replaces the checks and the planning."""
    import axialrope.fused as fused

    q, k, cos, sin, qw, kw, across = make(case, torch.float64)
    q, k = q[..., :1, :, :] if across else q[..., :1, :], k[..., :1, :, :] if across else k[..., :1, :]
    cos, sin = (cos[..., :1, :, :], sin[..., :1, :, :]) if across else (cos[:1], sin[:1])
    leaves = [t.double().requires_grad_() for t in (q, k, qw, kw)]
    results = []
    for _ in range(2):
        out = rms_norm_rotary_qk(*leaves[:2], cos, sin, *leaves[2:], 1e-6, across_heads=across)
        results.append((out, torch.autograd.grad(sum(o.square().sum() for o in out), leaves)))
        monkeypatch.setattr(fused, "check_table", None)  # the second call must not check again
    expected = unfused(*leaves[:2], cos, sin, *leaves[2:], 1e-6, "half", across)
    expected_grads = torch.autograd.grad(sum(o.square().sum() for o in expected), leaves)
    for out, grads in results:
        for got, ref in zip((*out, *grads), (*expected, *expected_grads), strict=True):
            torch.testing.assert_close(got, ref)


def test_the_weight_of_a_norm_across_heads_may_be_flat_or_per_head():
    q, k, cos, sin, qw, kw, across = make("across heads (Wan)")
    flat = rms_norm_rotary_qk(q, k, cos, sin, qw, kw, across_heads=True)
    per_head = rms_norm_rotary_qk(q, k, cos, sin, qw.view(3, 12), kw.view(3, 12), across_heads=True)
    assert all(torch.equal(a, b) for a, b in zip(flat, per_head, strict=True))


# -- Triton -----------------------------------------------------------------------------------

TRITON_CHECK = """
import sys, torch
sys.path.insert(0, {tests!r})
from test_fused import CASES, make
from axialrope.kernels import fused_eager, triton_norm_rope

for case in CASES:
    for layout in ("half", "interleaved"):
        for dtype in (torch.float32, torch.bfloat16, torch.float64):
            for weights in (True, False):
                q, k, cos, sin, qw, kw, across = make(case, dtype, weights)
                for x, w in ((q, qw), (k, kw)):
                    w = None if w is None else w.reshape(x.shape[-2:] if across else x.shape[-1:])
                    y, rstd = triton_norm_rope.norm_rotate(x, cos, sin, w, 1e-6, layout, across)
                    ref_y, ref_rstd = fused_eager.norm_rotate_composite(x, cos, sin, w, 1e-6, layout, across)
                    tol = dict(rtol=1e-5, atol=1e-5) if dtype != torch.bfloat16 else dict(rtol=1e-2, atol=1e-2)
                    torch.testing.assert_close(y, ref_y, **tol)
                    torch.testing.assert_close(rstd, ref_rstd.to(rstd.dtype), **tol)
                    grad = torch.randn(x.shape, generator=torch.Generator().manual_seed(7)).to(dtype)
                    dx, dw = triton_norm_rope.norm_rotate_backward(grad, x, rstd, cos, sin, w, layout, across)
                    ref_dx, ref_dw = fused_eager.norm_rotate_backward_composite(grad, x, ref_rstd, cos, sin, w,
                                                                                   layout, across)
                    torch.testing.assert_close(dx, ref_dx, **tol)
                    if w is not None:
                        torch.testing.assert_close(dw, ref_dw, rtol=1e-4, atol=1e-4 if dtype != torch.bfloat16 else 0.1)
print("ok")
"""


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_the_sum_of_squares_written_for_inductor_is_the_plain_sum(layout, dtype):
    """Summed pair by pair with the table's zero term (see fused_eager._sum_of_squares), it still
    is the sum of x^2 over each row: per head, across heads, with unrotated channels."""
    cos = randn(7, 6, seed=2).cos()
    x = randn(2, 3, 7, 16, dtype=dtype)  # 12 of 16 channels rotated
    for across_heads, dims in ((False, (-1,)), (True, (-2, -1))):
        xt = x.transpose(1, 2) if across_heads else x  # (batch, seq, heads, dim) for a norm across heads
        table_t = cos[:, None] if across_heads else cos
        xf = xt.to(torch.promote_types(dtype, torch.float32))
        got = fused_eager._sum_of_squares(xt, xf, table_t, layout, across_heads)
        expected = xf.double().square().sum(dims, keepdim=True)
        torch.testing.assert_close(got.double(), expected, rtol=1e-6, atol=0)


@pytest.mark.slow
@pytest.mark.skipif(not triton_rope.available(), reason="triton is not installed")
def test_triton_kernels_indexing_in_the_interpreter(run_triton_interpreted):
    """Forward and backward Triton kernels, run on CPU tensors by Triton's interpreter (no GPU needed)."""
    run_triton_interpreted(TRITON_CHECK.format(tests=str(Path(__file__).parent)))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("case", list(CASES))
def test_cuda_default_path_matches_the_reference(dtype, layout, case):
    q, k, cos, sin, qw, kw, across = make(case, dtype)
    q, k, cos, sin, qw, kw = (t.cuda() for t in (q, k, cos, sin, qw, kw))
    expected_backend = "triton" if triton_rope.available() else "eager"
    assert backends.choose((q, k), cos, sin, layout) == expected_backend
    got = rms_norm_rotary_qk(q, k, cos, sin, qw, kw, 1e-6, layout, across_heads=across)
    expected = unfused(q, k, cos, sin, qw, kw, 1e-6, layout, across)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-2, atol=1e-2)
    for out, ref in zip(got, expected, strict=True):
        torch.testing.assert_close(out.double(), ref, **tol)
    leaves = [t.float().requires_grad_() for t in (q, k, qw, kw)]
    out = rms_norm_rotary_qk(*leaves[:2], cos, sin, *leaves[2:], 1e-6, layout, across_heads=across)
    grads = torch.autograd.grad(sum(o.square().sum() for o in out), leaves)
    ref_out = unfused(*leaves[:2], cos, sin, *leaves[2:], 1e-6, layout, across)
    ref_grads = torch.autograd.grad(sum(o.square().sum() for o in ref_out), leaves)
    for got_grad, ref_grad in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got_grad.double(), ref_grad, rtol=1e-4, atol=1e-4)
