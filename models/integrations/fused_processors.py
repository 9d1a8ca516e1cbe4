"""diffusers' Flux and Wan attention with q/k RMSNorm and RoPE fused into one pass.

    model = FluxTransformer2DModel.from_pretrained(...)   # or WanTransformer3DModel
    use_fused_qk_norm_rope(model)                         # every stock processor swapped
    model(...)                                            # the same outputs, up to float rounding

Both families normalise q and k with RMSNorm right before rotating them. The processors here
are diffusers' own (`FluxAttnProcessor`, `WanAttnProcessor`, subclassed so attention backends
and parallel configs keep working) with those two steps replaced by
`axialrope.rms_norm_rotary_qk`. Their tables are the family's own, full width and
interleaved ((seq, head_dim) for Flux, (1, seq, 1, head_dim) for Wan); every other pair of
entries is the half-width table the core takes. Where a call is not the plain case (no
rotary table, a norm with a bias, Wan's image-to-video extra keys), the stock processor runs.
"""

from __future__ import annotations

import torch
from diffusers.models.attention_dispatch import dispatch_attention_fn
from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm
from diffusers.models.transformers import transformer_flux, transformer_wan
from diffusers.models.transformers.transformer_flux import FluxAttnProcessor
from diffusers.models.transformers.transformer_wan import WanAttnProcessor

from axialrope import rms_norm_rotary_qk


def _norm_parts(norm: torch.nn.Module, x: torch.Tensor):
    """(weight, eps) of an RMSNorm without bias (torch's or diffusers'), or None for anything else."""
    if isinstance(norm, torch.nn.RMSNorm):
        eps = norm.eps if norm.eps is not None else torch.finfo(x.dtype).eps  # torch's default
        return norm.weight, eps
    if isinstance(norm, DiffusersRMSNorm) and norm.bias is None:
        return norm.weight, norm.eps
    return None


def _half_width(cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A full-width interleaved table (..., head_dim), each value twice, -> the core's (..., head_dim // 2)."""
    return cos[..., 0::2], sin[..., 1::2]


class FusedFluxAttnProcessor(FluxAttnProcessor):
    """`FluxAttnProcessor` with each stream's q/k RMSNorm and the rotation as one pass.

    Joint blocks normalise text and image tokens with different weights, so each stream is
    normalised and rotated by its rows of the table (text first, as Flux joins them) and the
    two are joined after.
    """

    def __call__(
        self,
        attn,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        image_rotary_emb=None,
    ) -> torch.Tensor:
        parts = (_norm_parts(attn.norm_q, hidden_states), _norm_parts(attn.norm_k, hidden_states))
        joint = attn.added_kv_proj_dim is not None and encoder_hidden_states is not None
        if joint:
            parts += (_norm_parts(attn.norm_added_q, hidden_states), _norm_parts(attn.norm_added_k, hidden_states))
        if image_rotary_emb is None or any(p is None for p in parts):
            return super().__call__(attn, hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb)

        query, key, value, encoder_query, encoder_key, encoder_value = transformer_flux._get_qkv_projections(
            attn, hidden_states, encoder_hidden_states
        )
        # (b, seq, heads, head_dim), as diffusers' processor lays them out
        query, key, value = (t.unflatten(-1, (-1, attn.head_dim)) for t in (query, key, value))
        cos, sin = _half_width(*image_rotary_emb)  # (seq, head_dim // 2)
        cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)  # (seq, 1, pairs): one row per token, all heads
        (wq, eps_q), (wk, _) = parts[:2]
        if joint:
            encoder_query, encoder_key, encoder_value = (
                t.unflatten(-1, (-1, attn.head_dim)) for t in (encoder_query, encoder_key, encoder_value)
            )
            text = encoder_query.shape[1]
            (wq_text, eps_text), (wk_text, _) = parts[2:]
            encoder_query, encoder_key = rms_norm_rotary_qk(
                encoder_query, encoder_key, cos[:text], sin[:text], wq_text, wk_text, eps_text, "interleaved"
            )
            query, key = rms_norm_rotary_qk(query, key, cos[text:], sin[text:], wq, wk, eps_q, "interleaved")
            query = torch.cat([encoder_query, query], dim=1)
            key = torch.cat([encoder_key, key], dim=1)
            value = torch.cat([encoder_value, value], dim=1)
        else:
            query, key = rms_norm_rotary_qk(query, key, cos, sin, wq, wk, eps_q, "interleaved")

        hidden_states = dispatch_attention_fn(
            query,
            key,
            value,
            attn_mask=attention_mask,
            backend=self._attention_backend,
            parallel_config=self._parallel_config,
        )
        hidden_states = hidden_states.flatten(2, 3).to(query.dtype)
        if encoder_hidden_states is not None:
            encoder_hidden_states, hidden_states = hidden_states.split_with_sizes(
                [encoder_hidden_states.shape[1], hidden_states.shape[1] - encoder_hidden_states.shape[1]], dim=1
            )
            hidden_states = attn.to_out[1](attn.to_out[0](hidden_states.contiguous()))
            return hidden_states, attn.to_add_out(encoder_hidden_states.contiguous())
        return hidden_states


class FusedWanAttnProcessor(WanAttnProcessor):
    """`WanAttnProcessor` with its q/k RMSNorm (across all heads of a token) and rotation as one pass."""

    def __call__(
        self,
        attn,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        rotary_emb=None,
    ) -> torch.Tensor:
        parts = (_norm_parts(attn.norm_q, hidden_states), _norm_parts(attn.norm_k, hidden_states))
        if rotary_emb is None or attn.add_k_proj is not None or any(p is None for p in parts):
            return super().__call__(attn, hidden_states, encoder_hidden_states, attention_mask, rotary_emb)

        query, key, value = transformer_wan._get_qkv_projections(attn, hidden_states, encoder_hidden_states)
        query, key, value = (t.unflatten(2, (attn.heads, -1)) for t in (query, key, value))  # (b, seq, heads, d)
        cos, sin = _half_width(*rotary_emb)  # (1, seq, 1, head_dim // 2)
        (wq, eps), (wk, _) = parts
        query, key = rms_norm_rotary_qk(query, key, cos, sin, wq, wk, eps, "interleaved", across_heads=True)

        hidden_states = dispatch_attention_fn(
            query,
            key,
            value,
            attn_mask=attention_mask,
            dropout_p=0.0,
            is_causal=False,
            backend=self._attention_backend,
            parallel_config=self._parallel_config if encoder_hidden_states is None else None,
        )
        hidden_states = hidden_states.flatten(2, 3).type_as(query)
        return attn.to_out[1](attn.to_out[0](hidden_states))


# stock processor class -> its fused replacement
FUSED_PROCESSORS = {FluxAttnProcessor: FusedFluxAttnProcessor, WanAttnProcessor: FusedWanAttnProcessor}


def use_fused_qk_norm_rope(model: torch.nn.Module) -> int:
    """Replaces every stock Flux / Wan attention processor in `model` by its fused twin.

    Returns how many were replaced; TypeError if none was (a model of another family). The
    change lives on the instance: after `from_pretrained`, call it again. Undo with
    `model.set_attn_processor(...)` or `attn.set_processor(FluxAttnProcessor())` per module.
    """
    replaced = 0
    for module in model.modules():
        processor = getattr(module, "processor", None)
        fused = FUSED_PROCESSORS.get(type(processor))
        if fused is not None and hasattr(module, "set_processor"):
            module.set_processor(fused())
            replaced += 1
    if not replaced:
        raise TypeError(f"{type(model).__name__} has no stock FluxAttnProcessor or WanAttnProcessor to replace")
    return replaced


__all__ = ["FUSED_PROCESSORS", "FusedFluxAttnProcessor", "FusedWanAttnProcessor", "use_fused_qk_norm_rope"]
