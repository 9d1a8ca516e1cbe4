"""The fast rotation paths give the textbook rotation: every backend, layout, dtype, shape.

The reference below is the definition, written out in float64; each kernel (eager,
inductor-compiled, Triton, and the composite formula that torch.compile traces) must
match it to its dtype's rounding, forward and backward, out of place and in place.
"""

import warnings
from pathlib import Path

import pytest
import torch

import axialrope.kernels.backends as backends
import axialrope.kernels.compiling as compiling
import axialrope.kernels.eager as kernels
import axialrope.rotary as rotary
from axialrope import apply_rotary, apply_rotary_, apply_rotary_qk, rotary_backend
from axialrope.kernels import triton_rope

CPU_BACKENDS = ["eager", "composite", "compiled", "few_ops"]


def reference(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, inverse: bool = False):
    """Pair (a, b) -> (a cos - b sin, b cos + a sin), float64; channels past 2 * pairs unchanged."""
    x, cos, sin = x.double(), cos.double(), sin.double()
    if inverse:
        sin = -sin
    pairs = cos.shape[-1]
    if layout == "half":
        a, b = x[..., :pairs], x[..., pairs : 2 * pairs]
    else:
        a, b = x[..., 0 : 2 * pairs : 2], x[..., 1 : 2 * pairs : 2]
    new_a, new_b = a * cos - b * sin, b * cos + a * sin
    out = x.clone()
    if layout == "half":
        out[..., :pairs], out[..., pairs : 2 * pairs] = new_a, new_b
    else:
        out[..., 0 : 2 * pairs : 2], out[..., 1 : 2 * pairs : 2] = new_a, new_b
    return out


def table(*shape, seed=1):
    """cos, sin of random angles, float32, shape (..., pairs)."""
    angles = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 10
    return angles.cos().float(), angles.sin().float()


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def assert_matches_reference(out, x, cos, sin, layout, inverse=False):
    """out equals the float64 rotation of x, up to one rounding to out's dtype (plus float32 math)."""
    assert out.dtype == x.dtype and out.shape == x.shape
    expected = reference(x, cos, sin, layout, inverse)
    eps = max(torch.finfo(x.dtype).eps, torch.finfo(torch.float32).eps) if x.dtype != torch.float64 else 1e-15
    scale = x.double().abs().max().item() + 1
    torch.testing.assert_close(out.double(), expected, rtol=eps, atol=4 * eps * scale)


# the shapes a DiT and a text model hand to the kernel, with their tables
SHAPES = {
    "4d, (seq, pairs) table": ((2, 3, 7, 16), (7, 8)),
    "partial rotary": ((2, 3, 7, 20), (7, 6)),
    "odd channel count": ((2, 3, 7, 21), (7, 8)),
    "per-batch table": ((2, 3, 7, 16), (2, 1, 7, 8)),
    "one angle per pair": ((3, 5, 16), (8,)),
    "2d x": ((7, 16), (7, 8)),
}


@pytest.mark.parametrize("backend", ["eager", "composite", "few_ops"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_path_matches_the_reference(backend, dtype, layout, shape):
    x_shape, table_shape = SHAPES[shape]
    x, (cos, sin) = randn(*x_shape, dtype=dtype), table(*table_shape)
    with rotary_backend(backend):
        out = apply_rotary(x, cos, sin, layout)
        in_place = apply_rotary_(x.clone(), cos, sin, layout)
    assert_matches_reference(out, x, cos, sin, layout)
    assert torch.equal(in_place, out)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_strided_inputs_need_no_copy(layout):
    """q of a (batch, seq, heads, dim) projection seen as (batch, heads, seq, dim); odd offsets too."""
    cos, sin = table(7, 8)
    transposed = randn(2, 7, 3, 16).transpose(1, 2)
    shifted = randn(2, 3, 7, 17)[..., 1:]  # odd storage offset: no complex view possible
    for x in (transposed, shifted):
        with rotary_backend("eager"):
            assert_matches_reference(apply_rotary(x, cos, sin, layout), x, cos, sin, layout)


def test_large_inputs_are_rotated_in_pieces_like_small_ones(monkeypatch):
    """In place and half precision go through a scratch buffer piece by piece: same result."""
    x, (cos, sin) = randn(2, 2, 300, 32, dtype=torch.bfloat16), table(300, 16)
    whole = apply_rotary(x, cos, sin)
    monkeypatch.setattr(kernels, "CHUNK_NUMEL", 1000)
    assert len(kernels._chunks(x, x, cos, sin)) > 1
    assert torch.equal(apply_rotary(x, cos, sin), whole)
    assert torch.equal(apply_rotary_(x.float(), cos, sin), apply_rotary(x.float(), cos, sin))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_compiled_kernel_matches_the_reference(layout, monkeypatch):
    x, (cos, sin) = randn(2, 3, 7, 20), table(7, 6)
    with rotary_backend("compiled"):
        out = apply_rotary(x, cos, sin, layout)
        monkeypatch.setattr(kernels, "CHUNK_NUMEL", 100)  # in place goes piece by piece
        in_place = apply_rotary_(x.clone(), cos, sin, layout)
    assert_matches_reference(out, x, cos, sin, layout)
    assert_matches_reference(in_place, x, cos, sin, layout)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_compiled_kernel_in_other_dtypes(dtype, layout):
    x, (cos, sin) = randn(2, 3, 7, 20, dtype=dtype), table(2, 1, 7, 6)
    with rotary_backend("compiled"):
        out = apply_rotary(x, cos, sin, layout)
    assert_matches_reference(out, x, cos, sin, layout)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_backward_is_the_inverse_rotation(backend, layout):
    x, (cos, sin) = randn(2, 3, 7, 20, dtype=torch.float64).requires_grad_(), table(7, 6)
    upstream = randn(2, 3, 7, 20, dtype=torch.float64, seed=5)
    with rotary_backend(backend):
        apply_rotary(x, cos, sin, layout).backward(upstream)
    # y = R x with R orthogonal: dL/dx = R^T g = R(-angle) g
    torch.testing.assert_close(x.grad, reference(upstream, cos, sin, layout, inverse=True), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_gradcheck_and_gradgradcheck(layout):
    x = randn(1, 2, 5, 12, dtype=torch.float64).requires_grad_()
    cos, sin = (t.double() for t in table(5, 4))
    with rotary_backend("eager"):
        fn = lambda t: apply_rotary(t, cos, sin, layout)  # noqa: E731
        assert torch.autograd.gradcheck(fn, (x,))
        assert torch.autograd.gradgradcheck(fn, (x,))


def test_backward_saves_only_the_table():
    """No activation is kept for backward: only cos and sin (the composite formula keeps x-sized tensors)."""
    x, (cos, sin) = randn(2, 3, 7, 16).requires_grad_(), table(7, 8)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.shape) or t, lambda t: t):
        with rotary_backend("eager"):
            apply_rotary(x, cos, sin)
    assert saved == [cos.shape, sin.shape]


def test_gradients_reach_the_table_when_it_requires_them():
    """A learnable table takes the composite path, whose autograd covers cos and sin too."""
    x = randn(2, 3, 7, 16, dtype=torch.float64)
    angles = randn(7, 8, dtype=torch.float64).requires_grad_()
    apply_rotary(x, angles.cos(), angles.sin()).sum().backward()
    expected = torch.autograd.grad(reference(x, angles.cos(), angles.sin(), "half").sum(), angles)[0]
    torch.testing.assert_close(angles.grad, expected)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_qk_in_one_call_equals_two_calls(layout):
    """Grouped-query shapes too: k has fewer heads than q."""
    q, k, (cos, sin) = randn(2, 8, 7, 16), randn(2, 2, 7, 16, seed=3), table(7, 8)
    q_rot, k_rot = apply_rotary_qk(q, k, cos, sin, layout)
    assert torch.equal(q_rot, apply_rotary(q, cos, sin, layout))
    assert torch.equal(k_rot, apply_rotary(k, cos, sin, layout))
    q_in, k_in = q.clone(), k.clone()
    out = apply_rotary_qk(q_in, k_in, cos, sin, layout, inplace=True)
    assert out[0] is q_in and out[1] is k_in
    assert torch.equal(q_in, q_rot) and torch.equal(k_in, k_rot)


def test_qk_gradients_when_only_one_needs_them():
    q, k, (cos, sin) = randn(2, 3, 7, 16).requires_grad_(), randn(2, 3, 7, 16, seed=3), table(7, 8)
    q_rot, k_rot = apply_rotary_qk(q, k, cos, sin)
    assert not k_rot.requires_grad
    q_rot.sum().backward()
    torch.testing.assert_close(q.grad, reference(torch.ones_like(q), cos, sin, "half", inverse=True).float())


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_in_place_keeps_the_memory_and_is_differentiable(layout):
    x, (cos, sin) = randn(2, 3, 7, 20, dtype=torch.float64).requires_grad_(), table(7, 6)
    hidden = x * 1.0  # a non-leaf, like q after its projection
    pointer = hidden.data_ptr()
    out = apply_rotary_(hidden, cos, sin, layout)
    assert out is hidden and out.data_ptr() == pointer
    assert_matches_reference(out.detach(), x.detach(), cos, sin, layout)
    upstream = randn(2, 3, 7, 20, dtype=torch.float64, seed=5)
    out.backward(upstream)
    torch.testing.assert_close(x.grad, reference(upstream, cos, sin, layout, inverse=True))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: apply_rotary_(torch.randn(7, 16), *table(3, 7, 8)), "without enlarging it"),
        (lambda: apply_rotary_(torch.randn(1, 7, 16).expand(2, 7, 16), *table(7, 8)), "expanded"),
        (lambda: apply_rotary_qk(torch.randn(7, 16), torch.randn(7, 8), *table(7, 8)), "too wide for k"),
        (lambda: apply_rotary_qk(*(2 * [torch.randn(7, 16)]), *table(7, 8), inplace=True), "different tensors"),
        (lambda: apply_rotary(torch.randn(7, 16), *table(7, 8), layout="pairs"), "layout must be one of"),
        (lambda: apply_rotary(torch.tensor(1.0), *table(7, 8)), "x must have a last"),
    ],
)
def test_bad_input_names_the_problem(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        with rotary_backend("cuda"):
            pass


@pytest.fixture
def fresh_compile_state():
    """An empty compile cache and budget, so a test sees auto's choices from the start; emptied
    again after it, so no failure or cheap backend of the test outlives it."""
    compiling.reset()
    yield
    compiling.reset()


# Each test below is one row of docs/performance.md's table "Which kernel runs" (its name in the
# test's name), checked through `backends.choose`.

SPEC = lambda: ("a spec",)  # noqa: E731


def test_row_traced_inside_torch_compile_runs_the_formula():
    x, (cos, sin) = randn(2, 4, 16, 16), table(16, 8)
    seen = []

    @torch.compile(backend="eager", fullgraph=True)
    def traced(x):
        seen.append(backends.choose((x,), cos, sin, "half", spec=SPEC))
        return x

    traced(x)
    assert seen == ["composite"]


def test_row_unusual_table_runs_the_formula():
    x, (cos, sin) = randn(2, 4, 16, 16), table(16, 8)
    assert backends.choose((x,), cos.double(), sin, "half", spec=SPEC) == "composite"  # dtypes differ
    assert backends.choose((x,), cos.half(), sin.half(), "half", spec=SPEC) != "composite"
    wide_cos, wide_sin = table(32, 8)  # more positions than x: the formula's broadcast enlarges x
    assert backends.choose((x,), wide_cos, wide_sin, "half", spec=SPEC) == "composite"


def test_row_table_gradients_runs_the_formula():
    x, (cos, sin) = randn(2, 4, 16, 16), table(16, 8)
    with torch.enable_grad():
        assert backends.choose((x,), cos.requires_grad_(), sin, "half", spec=SPEC) == "composite"
    with torch.no_grad():
        assert backends.choose((x,), cos, sin, "half", spec=SPEC) == "few_ops"


def test_row_forced_runs_the_named_kernel():
    x, (cos, sin) = randn(2, 4, 16, 16), table(16, 8)
    for name in ("eager", "compiled", "composite", "few_ops"):
        with rotary_backend(name):
            assert backends.choose((x,), cos, sin, "half", spec=SPEC) == name
    with rotary_backend("few_ops"):
        assert backends.choose((x,), cos, sin, "half", inplace=True, spec=SPEC) == "eager"
    if not (x.is_cuda and triton_rope.available()):
        with rotary_backend("triton"), pytest.raises(RuntimeError, match="needs CUDA"):
            backends.choose((x,), cos, sin, "half", spec=SPEC)


def test_row_tiny_runs_a_few_ops_out_of_place(monkeypatch):
    x, (cos, sin) = randn(2, 4, 16, 16), table(16, 8)
    assert backends.choose((x, x), cos, sin, "half", spec=SPEC) == "few_ops"  # dispatch is the cost
    assert backends.choose((x,), cos, sin, "interleaved", spec=SPEC) == "few_ops"
    assert backends.choose((x,), cos, sin, "half", inplace=True, spec=SPEC) == "eager"
    monkeypatch.setattr(backends, "FEW_OPS_MAX_NUMEL", 2 * x.numel() - 1)  # q and k count together
    assert backends.choose((x, x), cos, sin, "half", spec=SPEC) == "eager"


def test_row_large_cpu_compiles_once_compiling_pays(monkeypatch, fresh_compile_state):
    x, (cos, sin) = randn(2, 4, 16, 16), table(16, 8)
    monkeypatch.setattr(backends, "FEW_OPS_MAX_NUMEL", 0)
    monkeypatch.setattr(backends, "COMPILE_MIN_NUMEL", x.numel())
    monkeypatch.setattr(compiling, "COMPILE_AFTER_NUMEL", 3 * x.numel())
    # compiled only once the eager kernel has done the budget's work for this spec
    assert [backends.choose((x,), cos, sin, "half", spec=SPEC) for _ in range(3)] == ["eager", "eager", "compiled"]
    assert backends.choose((x,), cos, sin, "half", spec=lambda: ("another spec",)) == "eager"
    with compiling.warm_up():
        assert backends.choose((x,), cos, sin, "half", spec=lambda: ("a third spec",)) == "compiled"
        assert backends.choose((x,), cos, sin, "half", inplace=True, spec=SPEC) == "compiled"  # piece by piece
        assert backends.choose((x.bfloat16(),), cos, sin, "half", spec=SPEC) == "compiled"


def test_row_otherwise_runs_the_eager_kernel(monkeypatch, fresh_compile_state):
    x, (cos, sin) = randn(2, 4, 16, 16), table(16, 8)
    monkeypatch.setattr(backends, "FEW_OPS_MAX_NUMEL", 0)
    assert backends.choose((x,), cos, sin, "half", spec=SPEC) == "eager"  # small: not worth a compile
    monkeypatch.setattr(backends, "COMPILE_MIN_NUMEL", x.numel())
    with compiling.warm_up():
        # interleaved pairs: the eager complex multiply beats inductor's stride-2 (scalar) loops
        for dtype in (torch.float32, torch.bfloat16):
            assert backends.choose((x.to(dtype),), cos, sin, "interleaved", spec=SPEC) == "eager"
        assert backends.choose((x,), cos, sin, "half", spec=None) == "eager"  # no spec: not compilable


def test_few_ops_kernel_equals_the_eager_kernel_bit_for_bit():
    """The tiny-input kernel runs the eager kernel's arithmetic: same bits, forward and inverse."""
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        for layout in ("half", "interleaved"):
            for x_shape, table_shape in SHAPES.values():
                x, (cos, sin) = randn(*x_shape, dtype=dtype), table(*table_shape)
                for inverse in (False, True):
                    eager = kernels.rotate_into(x, cos, sin, layout, torch.empty_like(x), inverse)
                    (few,) = kernels.rotate_few_ops((x,), cos, sin, layout, inverse)
                    assert torch.equal(few, eager), (dtype, layout, x_shape, inverse)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_a_repeated_decode_call_skips_the_checks_and_gives_the_same_result(layout, monkeypatch):
    """One token, q and k in one call: after the first call a signature lookup replaces the checks."""
    q, k, (cos, sin) = randn(2, 8, 1, 16), randn(2, 2, 1, 16, seed=3), table(1, 8)
    first = apply_rotary_qk(q, k, cos, sin, layout)
    assert backends.remembered(backends.rotation_signature(q, cos, sin, layout, k)) is not None
    monkeypatch.setattr(rotary, "check_table", None)  # the checks must not run again
    again = apply_rotary_qk(q, k, cos, sin, layout)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    with rotary_backend("eager"):  # another signature: checked (and here failing on the stubs)
        with pytest.raises(TypeError):
            apply_rotary_qk(q, k, cos, sin, layout)
    assert_matches_reference(again[0], q, cos, sin, layout)
    assert_matches_reference(again[1], k, cos, sin, layout)


def test_the_decode_fast_path_keeps_gradients():
    q, k, (cos, sin) = randn(2, 4, 1, 16, dtype=torch.float64).requires_grad_(), randn(2, 4, 1, 16), table(1, 8)
    for _ in range(2):  # the first call is checked, the second remembered
        q.grad = None
        q_rot, k_rot = apply_rotary_qk(q, k, cos, sin)
        assert not k_rot.requires_grad
        q_rot.backward(torch.ones_like(q_rot))
        torch.testing.assert_close(q.grad, reference(torch.ones_like(q), cos, sin, "half", inverse=True))


def test_compile_failure_falls_back_to_eager(monkeypatch, fresh_compile_state):
    def broken(graph, example_inputs):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(compiling, "BACKEND", broken)
    x, (cos, sin) = randn(2, 3, 7, 16), table(7, 8)
    with rotary_backend("compiled"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = apply_rotary(x, cos, sin), apply_rotary(x, cos, sin)
    assert len([w for w in caught if "torch.compile" in str(w.message)]) == 1  # once, then eager
    assert not compiling.compile_available()  # nothing ever compiled: auto stops trying
    assert_matches_reference(first, x, cos, sin, "half")
    assert torch.equal(first, second)


def test_compiled_cache_is_per_spec_and_ignores_autograd_state():
    """Gradient mode and requires_grad do not cost recompiles; each spec has its own cache."""
    x, (cos, sin) = randn(2, 3, 7, 16), table(7, 8)
    with rotary_backend("compiled"):
        apply_rotary(x, cos, sin)
        spec = kernels.compiled_spec((x,), cos, "half")
        compiled = compiling.compiled(spec)
        assert compiled is not None
        apply_rotary(x.requires_grad_(), cos, sin).sum().backward()  # forward and backward
        with torch.no_grad():
            apply_rotary(randn(3, 2, 11, 16), *table(11, 8))  # other sizes
        assert compiling.compiled(spec) is compiled
        assert kernels.compiled_spec((x.double(),), cos, "half") != spec


def test_more_specs_of_one_formula_than_dynamos_recompile_limit_all_compile(monkeypatch, fresh_compile_state):
    """Each spec is a torch.compile of its own with its own recompile count: the 9th to 12th ranks of
    one formula still compile (sharing the formula's count they would hit dynamo's limit of 8)."""
    monkeypatch.setattr(compiling, "BACKEND", "eager")  # dynamo's tracing and guards, no C++ build
    limit = torch._dynamo.config.recompile_limit
    assert limit == 8

    def double(x):
        return x * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn
        for rank in range(1, limit + 5):
            x = torch.ones((2,) * rank)
            out = compiling.run(("rank", rank), double, x)
            assert out is not None and torch.equal(out, x * 2), rank
    assert all(compiling.compiled(("rank", rank)) is not None for rank in range(1, limit + 5))


def test_rotation_and_norm_rotation_keep_their_plans_in_one_cache(monkeypatch):
    """apply_rotary_qk and rms_norm_rotary_qk remember their few-ops plans in `backends`' one cache,
    under signatures that never meet; the cache starts over once it holds MAX_REMEMBERED."""
    from axialrope import rms_norm_rotary_qk

    q, k, (cos, sin) = randn(2, 8, 1, 16), randn(2, 2, 1, 16, seed=3), table(1, 8)
    apply_rotary_qk(q, k, cos, sin)
    rms_norm_rotary_qk(q, k, cos, sin, eps=1e-6)
    rotation = backends.rotation_signature(q, cos, sin, "half", k)
    norm_rotation = backends.norm_rotation_signature(q, k, cos, sin, None, None, 1e-6, "half", False)
    assert rotation != norm_rotation
    assert backends.remembered(rotation) is not None and backends.remembered(norm_rotation) is not None
    assert backends.remembered(None) is None
    monkeypatch.setattr(backends, "MAX_REMEMBERED", 1)
    backends.remember(("another",), lambda *args: None)
    assert backends.remembered(rotation) is None and backends.remembered(("another",)) is not None


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_compiled_qk_in_one_call_keep_their_memory_layout(layout):
    """q and k of a (batch, seq, 3, heads, dim) projection: rotated in that memory order, in one call."""
    qkv = randn(2, 7, 3, 4, 20).bfloat16()
    q, k, _ = qkv.permute(2, 0, 3, 1, 4)  # (batch, heads, seq, dim) views
    cos, sin = table(7, 6)
    with rotary_backend("compiled"):
        q_rot, k_rot = apply_rotary_qk(q, k, cos, sin, layout)
    assert_matches_reference(q_rot, q, cos, sin, layout)
    assert_matches_reference(k_rot, k, cos, sin, layout)
    assert q_rot.transpose(1, 2).is_contiguous()  # (batch, seq, heads, dim) in memory, like q
    with rotary_backend("eager"):
        assert torch.equal(apply_rotary(k, cos, sin, layout), k_rot)


def test_compiled_qk_with_grouped_query_k_keep_their_memory_layout():
    """k with fewer heads than q, both views of projections: one table view serves both."""
    q = randn(2, 7, 4, 20).transpose(1, 2)  # (batch, heads, seq, dim) view of (batch, seq, heads, dim)
    k = randn(2, 7, 2, 20, seed=1).transpose(1, 2)
    cos, sin = table(7, 8)  # partial rotary: 16 of 20 channels
    with rotary_backend("compiled"):
        q_rot, k_rot = apply_rotary_qk(q, k, cos, sin)
    assert_matches_reference(q_rot, q, cos, sin, "half")
    assert_matches_reference(k_rot, k, cos, sin, "half")
    assert q_rot.transpose(1, 2).is_contiguous() and k_rot.transpose(1, 2).is_contiguous()


def test_tables_in_order_give_one_broadcasting_view_per_rank_and_order():
    cos, sin = table(7, 8)
    tables = kernels.TablesInOrder(cos, sin)
    assert tables(4, None) == (cos, sin)
    view_cos, view_sin = tables(4, (0, 2, 1, 3))
    assert tables(4, (0, 2, 1, 3))[0] is view_cos  # the same object for q and for k
    assert view_cos.shape == (1, 7, 1, 8) and view_cos.data_ptr() == cos.data_ptr()  # a view, no copy
    assert torch.equal(view_sin[0, :, 0], sin)


def test_a_tensor_passed_twice_is_one_input_of_the_compiled_graph(monkeypatch, fresh_compile_state):
    """A table shared by q and k reaches inductor once, so it can fuse their loops."""
    inputs = []

    def counting_backend(graph, example_inputs):
        inputs.append(len(example_inputs))
        return graph.forward

    monkeypatch.setattr(compiling, "BACKEND", counting_backend)
    x, t = randn(3, 8), randn(3, 8, seed=1)
    add_both = lambda a, b, c: (a + b, a + c)  # noqa: E731
    shared = compiling.run(("shared table",), add_both, x, t, t)
    separate = compiling.run(("separate tables",), add_both, x, t, t.clone())
    assert torch.equal(shared[1], separate[1])
    assert inputs[0] == inputs[1] - 1


def test_split_and_join_pairs_are_inverse():
    for layout in ("half", "interleaved"):
        for dim, pairs in ((16, 8), (20, 8)):
            x = randn(2, 3, dim)
            first, second, rest = kernels.split_pairs(x, pairs, layout)
            assert first.shape == second.shape == (2, 3, pairs)
            assert (rest is None) == (dim == 2 * pairs)
            assert torch.equal(kernels.join_pairs(layout, first, second, rest), x)
            assert torch.equal(first[..., 0], x[..., 0]) and torch.equal(
                second[..., 0], x[..., pairs if layout == "half" else 1]
            )


# -- Triton -----------------------------------------------------------------------------------

TRITON_CHECK = """
import sys, torch
sys.path.insert(0, {tests!r})
from test_rotary_kernels import assert_matches_reference, randn, table
from axialrope.kernels import triton_rope

for layout in ("half", "interleaved"):
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        for x_shape, table_shape in (((2, 3, 5, 20), (5, 6)), ((3, 21), (3, 8)), ((2, 2, 2, 5, 16), (2, 1, 5, 8))):
            x, (cos, sin) = randn(*x_shape, dtype=dtype), table(*table_shape)
            out = triton_rope.rotate(x, cos, sin, layout, torch.empty_like(x))
            assert_matches_reference(out, x, cos, sin, layout)
            back = triton_rope.rotate(x, cos, sin, layout, torch.empty_like(x), inverse=True)
            assert_matches_reference(back, x, cos, sin, layout, inverse=True)
            in_place = x.clone()
            triton_rope.rotate(in_place, cos, sin, layout, in_place)
            assert torch.equal(in_place, out)
    strided = randn(2, 5, 3, 16).transpose(1, 2)
    cos, sin = table(5, 8)
    assert_matches_reference(triton_rope.rotate(strided, cos, sin, layout, torch.empty_like(strided)),
                             strided, cos, sin, layout)
print("ok")
"""


@pytest.mark.slow
@pytest.mark.skipif(not triton_rope.available(), reason="triton is not installed")
def test_triton_kernel_indexing_in_the_interpreter(run_triton_interpreted):
    """The Triton kernel's indexing, run on CPU tensors by Triton's interpreter (no GPU needed)."""
    run_triton_interpreted(TRITON_CHECK.format(tests=str(Path(__file__).parent)))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_row_cuda_runs_triton_and_matches_the_reference(dtype, layout):
    x, (cos, sin) = randn(2, 3, 7, 20, dtype=dtype).cuda(), table(7, 6)
    cos, sin = cos.cuda(), sin.cuda()
    expected_backend = "triton" if triton_rope.available() else "few_ops"
    assert backends.choose((x,), cos, sin, layout) == expected_backend
    out = apply_rotary(x, cos, sin, layout)
    assert_matches_reference(out.cpu(), x.cpu(), cos.cpu(), sin.cpu(), layout)
    q = x.float().requires_grad_()
    apply_rotary(q, cos, sin, layout).backward(torch.ones_like(q))
    torch.testing.assert_close(
        q.grad.cpu().double(),
        reference(torch.ones_like(q).cpu(), cos.cpu(), sin.cpu(), layout, inverse=True),
        rtol=1e-5,
        atol=1e-5,
    )
    in_place = apply_rotary_(x.clone(), cos, sin, layout)
    assert torch.equal(in_place, out)
