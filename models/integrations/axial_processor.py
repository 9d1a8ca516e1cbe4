"""Axial RoPE inside diffusers' own DiT-style models (`DiTTransformer2DModel` and kin).

    model = DiTTransformer2DModel(...)            # or .from_pretrained(...)
    rope = use_axial_rope(model, theta=10000.0)   # absolute sin-cos removed, RoPE in every self-attention
    model(latents_of_any_size, timestep=t, class_labels=y)
    rope.config = replace(rope.config, scaling={"rope_type": "ntk", "factor": 2.0})   # swap at sampling time

The model's forward carries no grid to its attention modules, so a forward pre-hook
reads the grid from `hidden_states` (h // patch, w // patch), builds the (cached) table
once, and the processors of all blocks read it. The change lives on the instance:
after `from_pretrained`, call `use_axial_rope` again.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from diffusers.models.attention_processor import Attention
from einops import rearrange

from axialrope import apply_rotary

from ..axial_dit.position_encoding import GridRope, RopeConfig, split_axes


class AxialRopeAttnProcessor:
    """A diffusers attention processor: self-attention with axial RoPE on q and k.

    Reads the table for the current forward from `grid_rope.current` (set by the hook that
    `use_axial_rope` installs). q/k norms of the `Attention` (if any) run before RoPE;
    `rope_config.attention_scale` multiplies the logits on top of the module's own scale.
    """

    def __init__(self, grid_rope: GridRope):
        self.grid_rope = grid_rope

    def project(self, attn: Attention, hidden_states: torch.Tensor):
        """hidden_states (b, seq, dim) -> q, k, v (b, heads, seq, head_dim), q and k rotated."""
        q, k, v = (
            rearrange(proj(hidden_states), "b n (h d) -> b h n d", h=attn.heads)
            for proj in (attn.to_q, attn.to_k, attn.to_v)
        )
        if attn.norm_q is not None:
            q = attn.norm_q(q)
        if attn.norm_k is not None:
            k = attn.norm_k(k)
        table = getattr(self.grid_rope, "current", None)
        if table is None:
            raise RuntimeError("no RoPE table: call the model itself (its forward hook builds the table)")
        cos, sin = table
        if cos.shape[0] != hidden_states.shape[1]:
            raise ValueError(f"the RoPE table has {cos.shape[0]} rows for {hidden_states.shape[1]} tokens")
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v

    def __call__(
        self,
        attn: Attention,
        hidden_states: torch.Tensor,
        encoder_hidden_states=None,
        attention_mask=None,
        temb=None,
        *args,
        **kwargs,
    ) -> torch.Tensor:
        if encoder_hidden_states is not None:
            raise ValueError("AxialRopeAttnProcessor handles self-attention only (got encoder_hidden_states)")
        if hidden_states.ndim != 3:
            raise ValueError(f"hidden_states must be (batch, seq, dim), got shape {tuple(hidden_states.shape)}")
        batch, seq, _ = hidden_states.shape
        residual = hidden_states
        if attention_mask is not None:
            attention_mask = attn.prepare_attention_mask(attention_mask, seq, batch)
            attention_mask = attention_mask.view(batch, attn.heads, -1, attention_mask.shape[-1])
        q, k, v = self.project(attn, hidden_states)
        scale = attn.scale * self.grid_rope.config.attention_scale
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, scale=scale)
        out = attn.to_out[1](attn.to_out[0](rearrange(out, "b h n d -> b n (h d)").to(q.dtype)))  # linear, dropout
        if attn.residual_connection:
            out = out + residual
        return out / attn.rescale_output_factor


def use_axial_rope(
    model: torch.nn.Module,
    axes_dims: Sequence[int] | None = None,
    theta: float | Sequence[float] = 10000.0,
    scaling=None,
) -> GridRope:
    """Switches a diffusers DiT-style model from absolute sin-cos positions to 2D axial RoPE.

    Args:
        model: a diffusers model with a `PatchEmbed` named `pos_embed` and `config.patch_size`
            (`DiTTransformer2DModel`, `PixArtTransformer2DModel`, ...).
        axes_dims: rotary channels per axis (y, x) of a head; default `split_axes(head_dim, 2)`.
        theta, scaling: per-axis RoPE base and scaling (see `RopeConfig`).

    Returns:
        The model's `GridRope` (also `model.axial_rope`): assign `.config` to swap settings.

    Every self-attention `Attention` gets an `AxialRopeAttnProcessor`; cross-attention is
    left alone. The absolute embedding is dropped (`pos_embed.pos_embed = None`), so the
    model runs at any grid; diffusers' `DiTTransformer2DModel` itself still unpatchifies
    square grids only.
    """
    pos_embed = getattr(model, "pos_embed", None)
    patch_size = getattr(getattr(model, "config", None), "patch_size", None)
    if pos_embed is None or not hasattr(pos_embed, "pos_embed") or not isinstance(patch_size, int):
        raise TypeError(
            f"use_axial_rope needs a DiT-style diffusers model with a PatchEmbed `pos_embed` and "
            f"config.patch_size, got {type(model).__name__}"
        )
    if hasattr(model, "axial_rope"):
        raise ValueError("use_axial_rope was already applied to this model")
    attentions = [m for m in model.modules() if isinstance(m, Attention) and not m.is_cross_attention]
    if not attentions:
        raise ValueError(f"{type(model).__name__} has no diffusers self-attention modules to patch")
    for attn in attentions:
        if attn.spatial_norm is not None or attn.group_norm is not None:
            raise ValueError("use_axial_rope supports Attention modules without spatial_norm or group_norm")
    head_dims = {attn.inner_dim // attn.heads for attn in attentions}
    if len(head_dims) != 1:
        raise ValueError(f"attention modules disagree on head_dim: {sorted(head_dims)}")
    (head_dim,) = head_dims
    axes_dims = split_axes(head_dim, 2) if axes_dims is None else tuple(axes_dims)
    grid_rope = GridRope(axes_dims, RopeConfig(theta=theta, scaling=scaling), head_dim=head_dim)
    grid_rope.current = None

    def build_table(module, args, kwargs):
        hidden_states = args[0] if args else kwargs["hidden_states"]
        grid = (hidden_states.shape[-2] // patch_size, hidden_states.shape[-1] // patch_size)
        grid_rope.current = grid_rope.table(grid, device=hidden_states.device)

    pos_embed.pos_embed = None  # PatchEmbed then adds no absolute position
    processor = AxialRopeAttnProcessor(grid_rope)
    for attn in attentions:
        attn.set_processor(processor)
    model.axial_rope = grid_rope
    model.register_forward_pre_hook(build_table, with_kwargs=True)
    return grid_rope


__all__ = ["AxialRopeAttnProcessor", "use_axial_rope"]
