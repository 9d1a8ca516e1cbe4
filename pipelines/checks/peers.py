"""Peers' rotary embeddings as `rotate(x, coords)`, so `axialrope.testing` checks them all alike.

Each adapter computes the peer's table with the peer's own code and applies it with the
function the peer's attention uses, on x (batch, heads, seq, head_dim) (transposed to
(batch, seq, heads, head_dim) where the peer applies it that way). Peers whose tables
come from grid sizes (CogVideoX, Wan, HunyuanVideo, rotary-embedding-torch) are evaluated
on the smallest grid that holds the coordinates, and each token takes its row: such
peers only see non-negative integer coordinates (`integer_grid`).

diffusers and rotary-embedding-torch are imported when an adapter is built, so the
core package never imports them and `axialrope check --impl axialrope-half` needs neither.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from dataclasses import dataclass

import torch
from einops import rearrange

from axialrope import AxialRotaryEmbedding
from axialrope.testing import RotaryUnderTest

# the largest grid a grid adapter builds (tokens): 2^16 + 16 rows of a 128-channel table is ~70 MB
MAX_GRID_TOKENS = 2**18

AXIALROPE_AXES_DIMS = {1: (32,), 2: (24, 24), 3: (16, 24, 24)}  # plus 8 pass-through channels
FLUX_AXES_DIMS = {1: (128,), 2: (64, 64), 3: (16, 56, 56)}  # 3 axes: FLUX.1's (text/frame, y, x)
HUNYUAN_AXES_DIMS = (16, 56, 56)  # HunyuanVideo's rope_axes_dim, theta 256
WAN_HEAD_DIM = 128  # Wan 2.1: t gets 44 channels, y and x 42 each
COGVIDEOX_HEAD_DIM = 64  # CogVideoX: t gets head_dim / 4, y and x 3/8 each
LUCIDRAINS_AXIS_DIM = 16  # rotary-embedding-torch: each axis rotates `dim` channels


@dataclass(frozen=True)
class Implementation:
    """A rotary embedding `axialrope check` knows how to adapt.

    build(n_axes) returns the `RotaryUnderTest`; axes lists the numbers of axes it
    supports, default_axes those checked when --axes is not given.
    """

    name: str
    build: Callable[[int], RotaryUnderTest]
    axes: tuple[int, ...]
    default_axes: tuple[int, ...]
    summary: str


def grid_rotation(
    table: Callable, apply: Callable, *, offsets: bool = False, max_tokens: int = MAX_GRID_TOKENS
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """rotate(x, coords) for a peer whose tables are built for whole grids.

    Args:
        table: table(sizes, origin) -> one tensor or a tuple of tensors, each
            (prod(sizes), width) with rows in row-major grid order; origin is the grid's
            first coordinate per axis when `offsets`, else None (the grid starts at 0).
        apply: apply(x, *rows) -> rotated x, rows being each table at x's tokens (seq, width).
        offsets: place the grid at the per-axis minimum of the coordinates (peers that take
            offsets) instead of at 0.
        max_tokens: refuse grids larger than this.

    coords must be integers (non-negative unless `offsets`).
    """

    def rotate(x: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        whole = coords.round()
        if not torch.equal(whole, coords) or (not offsets and bool((coords < 0).any())):
            raise ValueError("this peer builds its tables from grid sizes: coords must be non-negative integers")
        whole = whole.long()
        origin = whole.amin(dim=0) if offsets else torch.zeros_like(whole[0])
        local = whole - origin  # (seq, n_axes) cell indices in the grid
        sizes = (local.amax(dim=0) + 1).tolist()
        if math.prod(sizes) > max_tokens:
            raise ValueError(f"a grid of sizes {sizes} exceeds max_tokens={max_tokens}")
        strides = torch.tensor([math.prod(sizes[a + 1 :]) for a in range(len(sizes))], device=local.device)
        rows = (local * strides).sum(dim=-1)  # row-major flat index, as einops '(t h w)'
        tables = table(tuple(sizes), tuple(origin.tolist()) if offsets else None)
        tables = tables if isinstance(tables, tuple) else (tables,)
        return apply(x, *(t[rows] for t in tables))

    return rotate


def _sequence_second(apply: Callable) -> Callable:
    """Runs apply on x (batch, seq, heads, dim) for peers whose attention lays x out that way."""

    def rotate(x, *tables):
        return rearrange(apply(rearrange(x, "b h s d -> b s h d"), *tables), "b s h d -> b h s d")

    return rotate


# -- axialrope ----------------------------------------------------------------------------


def _axialrope(layout: str) -> Callable[[int], RotaryUnderTest]:
    def build(n_axes: int) -> RotaryUnderTest:
        axes_dims = AXIALROPE_AXES_DIMS[n_axes]
        return RotaryUnderTest.from_embedding(
            AxialRotaryEmbedding(axes_dims), layout, dim=sum(axes_dims) + 8, name=f"axialrope-{layout}"
        )

    return build


# -- diffusers ----------------------------------------------------------------------------


def _diffusers_apply(x_layout: str) -> Callable:
    """diffusers' apply_rotary_emb on (cos, sin) rows (seq, head_dim), x (b, h, s, d) or (b, s, h, d)."""
    from diffusers.models.embeddings import apply_rotary_emb  # heavy: keeps --help fast

    if x_layout == "bhsd":  # CogVideoXAttnProcessor2_0
        return lambda x, cos, sin: apply_rotary_emb(x, (cos, sin))
    # Flux and HunyuanVideo processors: apply_rotary_emb(query, image_rotary_emb, sequence_dim=1)
    return _sequence_second(lambda x, cos, sin: apply_rotary_emb(x, (cos, sin), sequence_dim=1))


def _flux(n_axes: int) -> RotaryUnderTest:
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed  # heavy: keeps --help fast

    axes_dims = FLUX_AXES_DIMS[n_axes]
    pos_embed = FluxPosEmbed(theta=10000, axes_dim=list(axes_dims))
    apply = _diffusers_apply("bshd")

    def rotate(x, coords):
        cos, sin = pos_embed(coords)  # ids (seq, n_axes) -> (seq, head_dim) each
        return apply(x, cos, sin)

    return RotaryUnderTest(
        rotate,
        n_axes,
        sum(axes_dims),
        name="flux",
        axes_dims=axes_dims,
        layout="interleaved",
        thetas=(10000.0,) * n_axes,
    )


def _cogvideox(n_axes: int) -> RotaryUnderTest:
    from diffusers.models.embeddings import get_3d_rotary_pos_embed  # heavy: keeps --help fast

    def table(sizes, _origin):
        frames, height, width = sizes
        # crops_coords = the whole grid: the pipeline's choice when the grid is the base size
        # (CogVideoX 1.5's "slice" grids give the same positions); positions are cell indices
        return get_3d_rotary_pos_embed(
            COGVIDEOX_HEAD_DIM, ((0, 0), (height, width)), (height, width), frames, theta=10000, use_real=True
        )

    d = COGVIDEOX_HEAD_DIM
    axes_dims = (d // 4, d // 8 * 3, d // 8 * 3)
    return RotaryUnderTest(
        grid_rotation(table, _diffusers_apply("bhsd")),
        3,
        d,
        name="cogvideox",
        integer_grid=True,
        axes_dims=axes_dims,
        layout="interleaved",
        thetas=(10000.0,) * 3,
    )


def _wan_inline_rotation() -> Callable:
    """The rotation WanAttnProcessor applies. diffusers defines it inside __call__, so it is
    rebuilt from the code object there: the peer's own code, not a copy."""
    from diffusers.models.transformers import transformer_wan  # heavy: keeps --help fast

    code = next(
        (
            c
            for c in transformer_wan.WanAttnProcessor.__call__.__code__.co_consts
            if getattr(c, "co_name", None) == "apply_rotary_emb"
        ),
        None,
    )
    if code is None or code.co_freevars:
        raise RuntimeError("diffusers' WanAttnProcessor no longer defines apply_rotary_emb inline; update this adapter")
    return types.FunctionType(code, vars(transformer_wan))


def _wan(n_axes: int) -> RotaryUnderTest:
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed  # heavy: keeps --help fast

    rotation = _wan_inline_rotation()
    modules: dict[int, WanRotaryPosEmbed] = {}

    def table(sizes, _origin):
        # Wan precomputes max_seq_len rows per axis (1024 in the model); grow it when a check needs more
        longest = max(1024, *sizes)
        if longest not in modules:
            modules.clear()
            modules[longest] = WanRotaryPosEmbed(WAN_HEAD_DIM, (1, 1, 1), max_seq_len=longest)
        cos, sin = modules[longest](torch.empty(1, 0, *sizes))  # only the shape is read
        return rearrange(cos, "1 s 1 d -> s d"), rearrange(sin, "1 s 1 d -> s d")

    def apply(x, cos, sin):  # x (b, s, h, d); Wan's rotation takes tables (1, s, 1, d)
        return rotation(x, rearrange(cos, "s d -> 1 s 1 d"), rearrange(sin, "s d -> 1 s 1 d"))

    h_dim = 2 * (WAN_HEAD_DIM // 6)
    axes_dims = (WAN_HEAD_DIM - 2 * h_dim, h_dim, h_dim)
    return RotaryUnderTest(
        grid_rotation(table, _sequence_second(apply)),
        3,
        WAN_HEAD_DIM,
        name="wan",
        integer_grid=True,
        axes_dims=axes_dims,
        layout="interleaved",
        thetas=(10000.0,) * 3,
    )


def _hunyuan(n_axes: int) -> RotaryUnderTest:
    from diffusers.models.transformers.transformer_hunyuan_video import (  # heavy: keeps --help fast
        HunyuanVideoRotaryPosEmbed,
    )

    rope = HunyuanVideoRotaryPosEmbed(patch_size=1, patch_size_t=1, rope_dim=list(HUNYUAN_AXES_DIMS), theta=256.0)
    table = lambda sizes, _origin: tuple(rope(torch.empty(1, 0, *sizes)))  # noqa: E731  (only the shape is read)
    return RotaryUnderTest(
        grid_rotation(table, _diffusers_apply("bshd")),
        3,
        sum(HUNYUAN_AXES_DIMS),
        name="hunyuanvideo",
        integer_grid=True,
        axes_dims=HUNYUAN_AXES_DIMS,
        layout="interleaved",
        thetas=(256.0,) * 3,
    )


# -- rotary-embedding-torch ---------------------------------------------------------------


def _lucidrains(offsets: bool, cache: bool = True) -> Callable[[int], RotaryUnderTest]:
    def build(n_axes: int) -> RotaryUnderTest:
        from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb  # optional: absent unless installed

        rope = RotaryEmbedding(dim=LUCIDRAINS_AXIS_DIM, cache_if_possible=cache)

        def table(sizes, origin):
            freqs = rope.get_axial_freqs(*sizes, offsets=origin)  # (*sizes, n_axes * dim) angles
            return rearrange(freqs, "... d -> (...) d")

        apply = lambda x, freqs: apply_rotary_emb(freqs, x)  # noqa: E731
        name = "rotary-embedding-torch" + ("-offsets" if offsets else "") + ("" if cache else "-nocache")
        return RotaryUnderTest(
            grid_rotation(table, apply, offsets=offsets),
            n_axes,
            LUCIDRAINS_AXIS_DIM * n_axes,
            name=name,
            integer_grid=True,
            axes_dims=(LUCIDRAINS_AXIS_DIM,) * n_axes,
            layout="interleaved",
            thetas=(10000.0,) * n_axes,
        )

    return build


IMPLEMENTATIONS: dict[str, Implementation] = {
    impl.name: impl
    for impl in (
        Implementation(
            "axialrope-half",
            _axialrope("half"),
            (1, 2, 3),
            (1, 2, 3),
            "AxialRotaryEmbedding + apply_rotary, half layout, 8 pass-through channels",
        ),
        Implementation(
            "axialrope-interleaved",
            _axialrope("interleaved"),
            (1, 2, 3),
            (1, 2, 3),
            "AxialRotaryEmbedding + apply_rotary, interleaved layout, 8 pass-through channels",
        ),
        Implementation(
            "flux",
            _flux,
            (1, 2, 3),
            (3,),
            "diffusers FluxPosEmbed(theta=10000, axes_dim=(16, 56, 56)) + apply_rotary_emb",
        ),
        Implementation(
            "cogvideox",
            _cogvideox,
            (3,),
            (3,),
            "diffusers get_3d_rotary_pos_embed(head_dim 64, crop = whole grid) + apply_rotary_emb",
        ),
        Implementation(
            "wan", _wan, (3,), (3,), "diffusers WanRotaryPosEmbed(head_dim 128) + WanAttnProcessor's inline rotation"
        ),
        Implementation(
            "hunyuanvideo",
            _hunyuan,
            (3,),
            (3,),
            "diffusers HunyuanVideoRotaryPosEmbed(rope_dim (16, 56, 56), theta 256) + apply_rotary_emb",
        ),
        Implementation(
            "rotary-embedding-torch",
            _lucidrains(offsets=False),
            (1, 2, 3),
            (2, 3),
            "RotaryEmbedding(dim=16).get_axial_freqs(*sizes) + apply_rotary_emb",
        ),
        Implementation(
            "rotary-embedding-torch-offsets",
            _lucidrains(offsets=True),
            (1, 2, 3),
            (2, 3),
            "get_axial_freqs(*sizes, offsets=grid origin), default cache",
        ),
        Implementation(
            "rotary-embedding-torch-offsets-nocache",
            _lucidrains(offsets=True, cache=False),
            (1, 2, 3),
            (2, 3),
            "get_axial_freqs(*sizes, offsets=grid origin), cache_if_possible=False",
        ),
    )
}
