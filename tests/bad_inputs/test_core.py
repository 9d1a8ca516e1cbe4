"""Bad inputs of the core (axialrope/): each fails early with an error that names the argument."""

import math

import pytest
import torch

from axialrope import (
    AxialRotaryEmbedding,
    Extrapolation,
    KVCache,
    RoPEAttention,
    RopeScaling,
    RotaryEmbedding,
    apply_rotary,
    apply_rotary_,
    apply_rotary_qk,
    grid_coords,
    rope_frequencies,
)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: rope_frequencies(63), ValueError, "dim must be a positive even"),
        (lambda: rope_frequencies(64.0), TypeError, "dim must be an int"),
        (lambda: RotaryEmbedding(63), ValueError, "dim must be a positive even"),
        (lambda: AxialRotaryEmbedding((16, 23, 24)), ValueError, r"axes_dims\[1\] must be a positive even"),
        (lambda: AxialRotaryEmbedding((16, 0, 24)), ValueError, r"axes_dims\[1\]"),
        (lambda: AxialRotaryEmbedding((-2, 24)), ValueError, r"axes_dims\[0\]"),
        (lambda: AxialRotaryEmbedding(64), TypeError, "axes_dims must be a non-empty sequence"),
        (lambda: AxialRotaryEmbedding((16, 24, 24), head_dim=32), ValueError, "more than head_dim=32"),
        (lambda: AxialRotaryEmbedding((16, 24), theta=(1e4, 1e4, 1e4)), ValueError, "theta must be"),
        (lambda: AxialRotaryEmbedding((16, 24), theta=0.5), ValueError, r"theta\[0\] must be a finite number > 1"),
        (
            lambda: AxialRotaryEmbedding((16, 24), scaling=[None]),
            ValueError,
            "scaling must be one config or a list of 2",
        ),
        (
            lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factor": 0.5}),
            ValueError,
            "factor must be >= 1",
        ),
        (
            lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factor": math.nan}),
            ValueError,
            "factor must be finite",
        ),
        (
            lambda: rope_frequencies(64, scaling={"rope_type": "longrope", "factor": 2.0}),
            ValueError,
            "unknown rope_type 'longrope'",
        ),
        (
            lambda: rope_frequencies(64, scaling={"rope_type": "yarn", "factor": 2.0}),
            ValueError,
            "needs original_max_position_embeddings",
        ),
        (
            lambda: rope_frequencies(64, scaling={"rope_type": "dynamic", "factor": 2.0}),
            ValueError,
            "needs original_max_position_embeddings",
        ),
        (
            lambda: rope_frequencies(
                64, scaling={"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8}
            ),
            ValueError,
            "needs high_freq_factor, low_freq_factor",
        ),
        (lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factr": 2.0}), ValueError, r"keys \['factr'\]"),
        (
            lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factor": "2"}),
            TypeError,
            "factor must be a real number",
        ),
        (
            lambda: rope_frequencies(64, 1e4, {"rope_type": "linear", "factor": 2.0, "rope_theta": 5e5}),
            ValueError,
            "rope_theta",
        ),
        (lambda: rope_frequencies(64, scaling="yarn"), TypeError, "scaling must be None, a dict or a RopeScaling"),
        (lambda: rope_frequencies(2, scaling={"rope_type": "ntk", "factor": 2.0}), ValueError, "dim must be > 2"),
        (lambda: RopeScaling("yarn", 4.0, 64, beta_fast=1.0, beta_slow=32.0), ValueError, "beta_fast > beta_slow"),
        (lambda: RoPEAttention(64, 8, 3), ValueError, "num_heads=8 must be divisible by num_kv_heads=3"),
        (lambda: RoPEAttention(60, 8), ValueError, "dim=60 must be divisible by num_heads=8"),
        (lambda: grid_coords(4, 0), ValueError, "grid sizes must be positive integers"),
        (lambda: grid_coords(4, 4, offset=(1, 2, 3)), ValueError, "offset must be a number or have one entry per axis"),
    ],
)
def test_construction_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_coords_with_the_wrong_number_of_axes():
    with pytest.raises(ValueError, match=r"coords must have shape \(\.\.\., seq, n_axes\) with n_axes=3"):
        AxialRotaryEmbedding((16, 24, 24))(grid_coords(4, 4))


def test_non_finite_positions():
    with pytest.raises(ValueError, match="must be finite"):
        RotaryEmbedding(16)(torch.tensor([0.0, math.inf]))
    with pytest.raises(ValueError, match="must be finite"):
        AxialRotaryEmbedding((8, 8))(torch.tensor([[0.0, math.nan]]))


def test_positions_must_be_tensors():
    with pytest.raises(TypeError, match="positions must be a torch.Tensor"):
        RotaryEmbedding(16)([0, 1, 2])


def test_tables_wider_than_x():
    cos, sin = RotaryEmbedding(64)(torch.arange(4))
    with pytest.raises(ValueError, match="cos/sin are too wide for x: they rotate 64 channels"):
        apply_rotary(torch.randn(1, 4, 32), cos, sin)


def test_tables_that_do_not_broadcast():
    cos, sin = RotaryEmbedding(16)(torch.arange(5))
    with pytest.raises(ValueError, match="do not broadcast against x"):
        apply_rotary(torch.randn(1, 2, 4, 16), cos, sin)


def test_unknown_layout():
    cos, sin = RotaryEmbedding(16)(torch.arange(4))
    with pytest.raises(ValueError, match="layout must be one of"):
        apply_rotary(torch.randn(4, 16), cos, sin, layout="neox")


def test_attention_input_width():
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq, 64\)"):
        RoPEAttention(64, 8)(torch.randn(2, 5, 32))


def test_riflex_index_out_of_range():
    with pytest.raises(ValueError, match="riflex_index=9 is out of range for 8 pairs"):
        rope_frequencies(
            16,
            scaling={"rope_type": "riflex", "factor": 2.0, "original_max_position_embeddings": 16, "riflex_index": 9},
        )


# -- the catalogue: (id, make(kit) -> the call, error type, a word of the message) -----------------


def table(*shape):
    return torch.ones(*shape), torch.zeros(*shape)


def rope5():
    """cos, sin (5, 8) of positions 0 .. 4."""
    return RotaryEmbedding(16)(torch.arange(5))


def attention():
    return RoPEAttention(32, 4, 2)  # head_dim 8, 2 key/value heads


def kv(batch=1, heads=2, length=3, head_dim=8, value_length=None, dtype=torch.float32):
    return KVCache(
        torch.zeros(batch, heads, length, head_dim, dtype=dtype),
        torch.zeros(batch, heads, value_length or length, head_dim, dtype=dtype),
    )


def cache(**kwargs):
    """A KVCache that bypasses its own checks, to reach the attention's."""
    made = kv()
    for name, value in kwargs.items():
        object.__setattr__(made, name, value)
    return made


CASES = [
    # core: context scaling
    (
        "linear-without-factor",
        lambda k: lambda: rope_frequencies(64, scaling={"rope_type": "linear"}),
        ValueError,
        "factor",
    ),
    ("ntk-without-factor", lambda k: lambda: rope_frequencies(64, scaling={"rope_type": "ntk"}), ValueError, "factor"),
    (
        "linear-factor-none",
        lambda k: lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factor": None}),
        ValueError,
        "factor",
    ),
    (
        "ntk-factor-none",
        lambda k: lambda: rope_frequencies(64, scaling={"type": "ntk", "factor": None}),
        ValueError,
        "factor",
    ),
    (
        "dynamic-without-factor",
        lambda k: lambda: rope_frequencies(64, scaling={"rope_type": "dynamic", "original_max_position_embeddings": 8}),
        ValueError,
        "factor",
    ),
    ("typed-linear-without-factor", lambda k: lambda: RopeScaling("linear"), ValueError, "needs factor"),
    (
        "ntk-factor-1e300",
        lambda k: lambda: rope_frequencies(64, scaling={"rope_type": "ntk", "factor": 1e300}),
        ValueError,
        "overflows",
    ),
    (
        "dynamic-factor-1e300-long",
        lambda k: (
            lambda: rope_frequencies(
                64, scaling={"rope_type": "dynamic", "factor": 1e300, "original_max_position_embeddings": 8}, seq_len=16
            )
        ),
        ValueError,
        "overflows",
    ),
    (
        "ntk-factor-1e300-in-a-table",
        lambda k: lambda: AxialRotaryEmbedding((16, 16), scaling={"rope_type": "ntk", "factor": 1e300}),
        ValueError,
        "overflows",
    ),
    (
        "yarn-attention-factor-0",
        lambda k: lambda: RopeScaling("yarn", 2.0, 8, attention_factor=0.0),
        ValueError,
        "attention_factor",
    ),
    (
        "yarn-attention-factor-negative",
        lambda k: (
            lambda: rope_frequencies(
                64,
                scaling={
                    "rope_type": "yarn",
                    "factor": 2.0,
                    "original_max_position_embeddings": 8,
                    "attention_factor": -1.0,
                },
            )
        ),
        ValueError,
        "attention_factor",
    ),
    (
        "yarn-attention-factor-nan",
        lambda k: lambda: RopeScaling("yarn", 2.0, 8, attention_factor=math.nan),
        ValueError,
        "finite",
    ),
    ("yarn-negative-mscale", lambda k: lambda: RopeScaling("yarn", 2.0, 8, mscale=-1.0), ValueError, "mscale"),
    (
        "yarn-negative-mscale-all-dim",
        lambda k: lambda: RopeScaling("yarn", 2.0, 8, mscale=1.0, mscale_all_dim=-0.5),
        ValueError,
        "mscale_all_dim",
    ),
    (
        "llama3-bands-reversed",
        lambda k: lambda: RopeScaling("llama3", 8.0, 64, low_freq_factor=4.0, high_freq_factor=1.0),
        ValueError,
        "high_freq_factor",
    ),
    (
        "ntk-on-a-2-channel-axis",
        lambda k: lambda: AxialRotaryEmbedding((2, 8), scaling={"rope_type": "ntk", "factor": 2.0}),
        ValueError,
        "dim must be > 2",
    ),
    ("extrapolation-unknown-method", lambda k: lambda: Extrapolation("bogus"), ValueError, "method"),
    (
        "extrapolation-unknown-name-with-entropy",
        lambda k: lambda: Extrapolation.from_name("yarnn+entropy"),
        ValueError,
        "method",
    ),
    ("extrapolation-name-not-a-string", lambda k: lambda: Extrapolation.from_name(2), TypeError, "method"),
    ("extrapolation-negative-beta", lambda k: lambda: Extrapolation("yarn", beta_fast=-1.0), ValueError, "beta_fast"),
    (
        "riflex-temporal-axis-a-name",
        lambda k: lambda: Extrapolation("riflex", temporal_axis="t"),
        TypeError,
        "temporal_axis must be an int",
    ),
    (
        "riflex-temporal-axis-negative",
        lambda k: lambda: Extrapolation("riflex", temporal_axis=-1),
        ValueError,
        "temporal_axis must be >= 0",
    ),
    (
        "dype-lambda-s-1e300",
        lambda k: lambda: Extrapolation("dype-ntk", dype_lambda_s=1e300),
        ValueError,
        "dype_lambda_s",
    ),
    (
        "dype-scale-overflows-at-a-size",
        lambda k: lambda: Extrapolation("dype-ntk", dype_lambda_s=100.0).plan((8, 8), (8000, 8000), timestep=1.0),
        ValueError,
        "overflows",
    ),
    (
        "kappa-scale-overflows-at-a-size",
        lambda k: lambda: Extrapolation("kappa-pi", dype_lambda_s=100.0).plan((1, 1), (1 << 40, 1), timestep=1.0),
        ValueError,
        "overflows",
    ),
    (
        "pi-beta-fast-never-read",
        lambda k: lambda: Extrapolation("pi", beta_fast=16.0),
        ValueError,
        "not read by method 'pi'",
    ),
    (
        "ntk-riflex-index-never-read",
        lambda k: lambda: Extrapolation("ntk", riflex_index=2),
        ValueError,
        "not read by method 'ntk'",
    ),
    (
        "yarn-dype-gamma-never-read",
        lambda k: lambda: Extrapolation("yarn", dype_gamma=(8.0, 1.0)),
        ValueError,
        "dype_gamma",
    ),
    (
        "yarn-beta-fast-1e308-beta-slow-1e-308",
        lambda k: lambda: Extrapolation("yarn", beta_fast=1e308, beta_slow=1e-308),
        ValueError,
        "beta_fast",
    ),
    (
        "kappa-yarn-beta-fast-1e308",
        lambda k: lambda: Extrapolation("kappa-yarn", beta_fast=1e308),
        ValueError,
        "beta_fast",
    ),
    (
        "scaling-yarn-beta-fast-1e308",
        lambda k: lambda: RopeScaling("yarn", 2.0, 8, beta_fast=1e308, beta_slow=1e-308),
        ValueError,
        "beta_fast",
    ),
    (
        "dype-beta-infinite",
        lambda k: lambda: Extrapolation("dype-yarn", dype_beta=(math.inf, 0.5)),
        ValueError,
        "dype_beta",
    ),
    (
        "dype-gamma-1e308",
        lambda k: lambda: Extrapolation("dype-yarn", dype_gamma=(1e308, 2.0)),
        ValueError,
        "dype_gamma",
    ),
    (
        "riflex-index-beyond-the-time-axis",
        lambda k: lambda: Extrapolation("riflex", riflex_index=1000).check_axes((8, 12, 12)),
        ValueError,
        "riflex_index=1000",
    ),
    ("grid-negative-size", lambda k: lambda: grid_coords(4, -1), ValueError, "grid sizes"),
    # core: tables and their cache
    ("cache-size-negative", lambda k: lambda: AxialRotaryEmbedding((8, 8), cache_size=-1), ValueError, "cache_size"),
    ("cache-size-negative-1d", lambda k: lambda: RotaryEmbedding(16, cache_size=-1), ValueError, "cache_size"),
    ("cache-size-float", lambda k: lambda: RotaryEmbedding(16, cache_size=1.5), ValueError, "cache_size"),
    ("cache-size-bool", lambda k: lambda: RotaryEmbedding(16, cache_size=True), ValueError, "cache_size"),
    ("cache-size-set-negative", lambda k: k.set_attr(RotaryEmbedding(16), "cache_size", -1), ValueError, "cache_size"),
    (
        "set-frequencies-bad-scaling",
        lambda k: lambda: AxialRotaryEmbedding((8, 8)).set_frequencies(500.0, {"rope_type": "bogus"}),
        ValueError,
        "rope_type",
    ),
    (
        "set-frequencies-theta-count",
        lambda k: lambda: AxialRotaryEmbedding((8, 8)).set_frequencies((1e4, 1e4, 1e4)),
        ValueError,
        "theta",
    ),
    ("set-frequencies-theta-below-1", lambda k: lambda: RotaryEmbedding(16).set_frequencies(0.5), ValueError, "theta"),
    (
        "coords-complex",
        lambda k: lambda: AxialRotaryEmbedding((8, 8))(torch.zeros(4, 2, dtype=torch.complex64)),
        TypeError,
        "real",
    ),
    ("positions-nan", lambda k: lambda: RotaryEmbedding(8)(torch.tensor([0.0, math.nan])), ValueError, "finite"),
    (
        "table-for-a-grid-of-10^12-positions",  # 16 TB asked of the allocator: refused with the size first
        lambda k: lambda: AxialRotaryEmbedding((8, 8)).for_grid(10**6, 10**6),
        ValueError,
        "1e+12 positions",
    ),
    (
        "table-for-a-grid-beyond-a-float",
        lambda k: lambda: AxialRotaryEmbedding((8, 8)).for_grid(10**400, 2),
        ValueError,
        "positions",
    ),
    # core: applying a table
    (
        "apply-int64-x",
        lambda k: lambda: apply_rotary(torch.ones(4, 16, dtype=torch.int64), *table(4, 8)),
        TypeError,
        "floating-point",
    ),
    (
        "apply-int32-x",
        lambda k: lambda: apply_rotary(torch.ones(4, 16, dtype=torch.int32), *table(4, 8)),
        TypeError,
        "floating-point",
    ),
    (
        "apply-complex-x",
        lambda k: lambda: apply_rotary(torch.ones(4, 16, dtype=torch.complex64), *table(4, 8)),
        TypeError,
        "floating-point",
    ),
    (
        "apply-bool-x",
        lambda k: lambda: apply_rotary(torch.ones(4, 16, dtype=torch.bool), *table(4, 8)),
        TypeError,
        "floating-point",
    ),
    (
        "apply-int-cos",
        lambda k: lambda: apply_rotary(torch.ones(4, 16), torch.ones(4, 8, dtype=torch.long), torch.zeros(4, 8)),
        TypeError,
        "cos",
    ),
    (
        "apply-table-more-rows-than-x",
        lambda k: lambda: apply_rotary(torch.ones(4, 16), *table(9, 4, 8)),
        ValueError,
        "enlarge",
    ),
    (
        "apply-table-longer-than-x",
        lambda k: lambda: apply_rotary(torch.ones(2, 1, 16), *table(7, 8)),
        ValueError,
        "enlarge",
    ),
    (
        "apply-qk-int64-k",
        lambda k: lambda: apply_rotary_qk(torch.ones(4, 16), torch.ones(4, 16, dtype=torch.int64), *table(4, 8)),
        TypeError,
        "k must be",
    ),
    (
        "apply-qk-table-enlarges-k",
        lambda k: lambda: apply_rotary_qk(torch.ones(2, 4, 16), torch.ones(1, 4, 16), *table(2, 4, 8)),
        ValueError,
        "enlarge",
    ),
    ("apply-not-a-tensor", lambda k: lambda: apply_rotary([1.0, 2.0], *table(1, 1)), TypeError, "torch.Tensor"),
    (
        "apply-table-on-another-device",  # the meta device stands for a GPU on any machine
        lambda k: lambda: apply_rotary(torch.ones(4, 16), *(t.to("meta") for t in table(4, 8))),
        ValueError,
        "cos is on meta but x is on cpu",
    ),
    (
        "apply-qk-k-on-another-device",
        lambda k: lambda: apply_rotary_qk(torch.ones(4, 16), torch.ones(4, 16, device="meta"), *table(4, 8)),
        ValueError,
        "k is on meta",
    ),
    (
        "apply-in-place-on-overlapping-rows",  # rows 4 apart of 16 channels: torch's own in-place ops let it by
        lambda k: lambda: apply_rotary_(torch.randn(64).as_strided((3, 16), (4, 1)), *table(3, 8)),
        ValueError,
        "overlap in memory",
    ),
    (
        "apply-in-place-on-rows-of-one-stride",
        lambda k: lambda: apply_rotary_(torch.randn(32).as_strided((2, 2, 16), (1, 1, 1)), *table(2, 2, 8)),
        ValueError,
        "overlap in memory",
    ),
    (
        "apply-qk-in-place-q-and-k-overlapping",  # q: positions 0-3 of a buffer, k: positions 1-4 of it
        lambda k: (
            buffer := torch.randn(1, 2, 5, 16),
            lambda: apply_rotary_qk(buffer[:, :, 0:4], buffer[:, :, 1:5], *table(4, 8), inplace=True),
        )[-1],
        ValueError,
        "q and k overlap",
    ),
    # core: attention and its KV cache
    ("kv-values-shorter-than-keys", lambda k: lambda: kv(length=5, value_length=3), ValueError, "values"),
    ("kv-keys-not-4d", lambda k: lambda: KVCache(torch.zeros(2, 3, 8), torch.zeros(2, 3, 8)), TypeError, "keys"),
    ("kv-values-not-tensor", lambda k: lambda: KVCache(torch.zeros(1, 2, 3, 8), [0.0]), TypeError, "values"),
    (
        "attention-tuple-cache",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32), (torch.zeros(1, 2, 3, 8),) * 2),
        TypeError,
        "KVCache",
    ),
    (
        "attention-cache-wrong-head-dim",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32), kv(head_dim=16)),
        ValueError,
        "head_dim",
    ),
    (
        "attention-cache-wrong-kv-heads",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32), kv(heads=4)),
        ValueError,
        "num_kv_heads",
    ),
    (
        "attention-cache-wrong-batch",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32), kv(batch=3)),
        ValueError,
        "batch",
    ),
    (
        "attention-cache-values-bypassed",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32), cache(values=torch.zeros(1, 2, 1, 8))),
        ValueError,
        "values",
    ),
    ("attention-width", lambda k: lambda: attention()(torch.zeros(1, 2, 16)), ValueError, "x must have shape"),
    (
        "attention-int64-x",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32, dtype=torch.int64)),
        TypeError,
        "torch.int64",
    ),
    (
        "attention-float64-x-float32-weights",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32, dtype=torch.float64)),
        TypeError,
        "torch.float64",
    ),
    (
        "attention-x-on-another-device",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32, device="meta")),
        ValueError,
        "x is on meta",
    ),
    (
        "attention-float64-cache-float32-x",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32), kv(dtype=torch.float64)),
        TypeError,
        "torch.float64",
    ),
    (
        "kv-cache-of-int64",
        lambda k: (
            lambda: KVCache(torch.zeros(1, 2, 3, 8, dtype=torch.int64), torch.zeros(1, 2, 3, 8, dtype=torch.int64))
        ),
        TypeError,
        "torch.int64",
    ),
    (
        "kv-cache-keys-and-values-of-two-dtypes",
        lambda k: lambda: KVCache(torch.zeros(1, 2, 3, 8), torch.zeros(1, 2, 3, 8, dtype=torch.float64)),
        ValueError,
        "one dtype",
    ),
    (
        "attention-cache-on-another-device",
        lambda k: lambda: attention()(torch.zeros(1, 2, 32), cache(keys=torch.zeros(1, 2, 3, 8, device="meta"))),
        ValueError,
        "cache keys and values are on meta",
    ),
]


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)


# (id, make(kit) -> the call, holds(its result))
HANDLED = [
    (
        "extrapolation-named-with-entropy",
        lambda k: lambda: Extrapolation.from_name("yarn+entropy", beta_fast=16.0),
        lambda made: made == Extrapolation("yarn", entropy_scaling=True, beta_fast=16.0),
    ),
    (
        "extrapolation-named-without-entropy",
        lambda k: lambda: Extrapolation.from_name("kappa-pi"),
        lambda made: made == Extrapolation("kappa-pi"),
    ),
    (
        "apply-qk-in-place-on-a-fused-qkv-buffer",  # q and k interleave in one buffer without sharing an element
        lambda k: (
            buffer := torch.randn(2, 5, 3, 2, 16),  # (batch, seq, q/k/v, heads, head_dim)
            expected := apply_rotary_qk(buffer[:, :, 0].transpose(1, 2), buffer[:, :, 1].transpose(1, 2), *rope5()),
            lambda: (
                apply_rotary_qk(
                    buffer[:, :, 0].transpose(1, 2), buffer[:, :, 1].transpose(1, 2), *rope5(), inplace=True
                ),
                expected,
            ),
        )[-1],
        lambda done: all(torch.equal(a, b) for a, b in zip(*done, strict=True)),
    ),
    (
        "apply-in-place-on-a-transposed-view",  # strided, but no two elements share memory
        lambda k: (
            x := torch.randn(16, 5),
            expected := apply_rotary(x.t(), *rope5()),
            lambda: (apply_rotary_(x.t(), *rope5()), expected),
        )[-1],
        lambda done: torch.equal(*done),
    ),
]


@pytest.mark.parametrize("make, holds", [pytest.param(*case[1:], id=case[0]) for case in HANDLED])
def test_an_input_that_must_be_taken_is_taken_right_and_writes_nothing(expect_handled, make, holds):
    expect_handled(make, holds)
