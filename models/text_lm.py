"""A tiny causal language model on the core's `RoPEAttention`, for context-extension studies.

Pre-norm blocks (RMSNorm -> grouped-query RoPE attention, RMSNorm -> SwiGLU MLP), tied
input and output embeddings, greedy generation through the KV cache. The RoPE scaling
of every layer can be swapped after training (`set_rope_scaling`) without touching a
weight: that is how the context-extension benchmark compares PI, NTK, YaRN, ... on one
trained network.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from axialrope import KVCache, RoPEAttention
from axialrope.scaling import as_rope_scaling
from axialrope.validation import is_int, is_real, positive_int


@dataclass
class TextLMConfig:
    """Sizes of a `TinyCausalLM`.

    Attributes:
        vocab_size: number of token ids.
        dim: model width.
        depth: number of transformer blocks.
        num_heads, num_kv_heads: query heads and key/value heads (grouped-query attention);
            head_dim = dim // num_heads.
        mlp_hidden: SwiGLU hidden width (None: 8/3 * dim rounded up to a multiple of 8,
            about the parameter count of a 4 * dim GELU MLP).
        theta: RoPE base.
        rope_scaling: None or a transformers-format dict (`{"rope_type": "yarn", ...}`);
            normalised to the dict of `RopeScaling.to_dict()`.
    """

    vocab_size: int
    dim: int = 128
    depth: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    mlp_hidden: int | None = None
    theta: float = 10000.0
    rope_scaling: dict | None = None

    def __post_init__(self):
        for name in ("vocab_size", "dim", "depth", "num_heads", "num_kv_heads"):
            positive_int(getattr(self, name), name)
        if self.mlp_hidden is None:
            self.mlp_hidden = 8 * math.ceil(8 * self.dim / 3 / 8)
        positive_int(self.mlp_hidden, "mlp_hidden")
        if not is_real(self.theta):
            raise TypeError(f"theta must be a real number, got {type(self.theta).__name__}")
        self.theta = float(self.theta)
        scaling = as_rope_scaling(self.rope_scaling, theta=self.theta)
        self.rope_scaling = None if scaling is None else scaling.to_dict()

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class SwiGLU(nn.Module):
    """x (..., dim) -> (..., dim): down(silu(gate(x)) * up(x))."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate_up = nn.Linear(dim, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: TextLMConfig):
        super().__init__()
        self.attn_norm = nn.RMSNorm(config.dim)
        self.attn = RoPEAttention(
            config.dim, config.num_heads, config.num_kv_heads, theta=config.theta, scaling=config.rope_scaling
        )
        self.mlp_norm = nn.RMSNorm(config.dim)
        self.mlp = SwiGLU(config.dim, config.mlp_hidden)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
        attended, cache = self.attn(self.attn_norm(x), cache)
        x = x + attended
        return x + self.mlp(self.mlp_norm(x)), cache


class TinyCausalLM(nn.Module):
    """A decoder-only language model whose only position signal is RoPE.

    forward(tokens, caches=None): tokens (batch, seq) int64 -> (logits (batch, seq, vocab_size),
    caches), one `KVCache` per block. With caches from an earlier call, the tokens continue
    that sequence (positions start at the cached length).
    """

    def __init__(self, config: TextLMConfig):
        super().__init__()
        if not isinstance(config, TextLMConfig):
            raise TypeError(f"config must be a TextLMConfig, got {type(config).__name__}")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.dim)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.depth))
        self.final_norm = nn.RMSNorm(config.dim)
        self.initialize_weights()

    def initialize_weights(self) -> None:
        # GPT-2 style: N(0, 0.02), and residual-branch outputs scaled down by sqrt(2 * depth)
        # so the residual stream's variance does not grow with depth
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
        for block in self.blocks:
            nn.init.normal_(block.attn.out_proj.weight, std=0.02 / math.sqrt(2 * self.config.depth))
            nn.init.normal_(block.mlp.down.weight, std=0.02 / math.sqrt(2 * self.config.depth))

    @property
    def rope_scaling(self) -> dict | None:
        return self.config.rope_scaling

    def set_rope_scaling(self, scaling=None, theta: float | None = None) -> None:
        """Gives every layer a new RoPE scaling (and optionally base); weights stay as they are.

        Args:
            scaling: None, a transformers-format dict (`{"rope_type": "yarn", "factor": 4.0,
                "original_max_position_embeddings": 128}`) or a `RopeScaling`.
            theta: new RoPE base; None keeps the current one.

        Atomic: a call that raises leaves every layer and the config as they were.
        """
        theta = self.config.theta if theta is None else theta
        # validate everything before touching any layer, so a bad call leaves the model as it was
        config = dataclasses.replace(self.config, theta=theta, rope_scaling=scaling)
        for block in self.blocks:  # every layer has the same head_dim: each would refuse what the first does
            block.attn.rope.check_frequencies(config.theta, config.rope_scaling)
        for block in self.blocks:
            block.attn.rope.set_frequencies(config.theta, config.rope_scaling)
        self.config = config

    def _check_tokens(self, tokens) -> None:
        if not isinstance(tokens, torch.Tensor):
            raise TypeError(f"tokens must be a torch.Tensor, got {type(tokens).__name__}")
        if tokens.ndim != 2 or tokens.shape[1] == 0:
            raise ValueError(f"tokens must have shape (batch, seq) with seq >= 1, got {tuple(tokens.shape)}")
        if tokens.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"tokens must be an int64 or int32 tensor of token ids, got {tokens.dtype}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.config.vocab_size):
            raise ValueError(
                f"tokens must be ids in [0, {self.config.vocab_size}), got values in "
                f"[{int(tokens.min())}, {int(tokens.max())}]"
            )

    def forward(self, tokens: torch.Tensor, caches: list[KVCache] | None = None) -> tuple[torch.Tensor, list[KVCache]]:
        self._check_tokens(tokens)
        if caches is not None and (not isinstance(caches, (list, tuple)) or len(caches) != len(self.blocks)):
            raise ValueError(f"caches must be None or a list of {len(self.blocks)} KVCache (one per block)")
        x = self.embed(tokens)  # (batch, seq, dim)
        new_caches = []
        for i, block in enumerate(self.blocks):
            x, cache = block(x, None if caches is None else caches[i])
            new_caches.append(cache)
        logits = F.linear(self.final_norm(x), self.embed.weight)  # tied output embedding
        return logits, new_caches

    def loss(self, tokens: torch.Tensor) -> torch.Tensor:
        """Mean next-token cross-entropy over tokens (batch, seq): predicts tokens[:, 1:]."""
        logits, _ = self(tokens[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, max_new_tokens: int, use_cache: bool = True) -> torch.Tensor:
        """Greedy continuation: prompt (batch, seq) -> (batch, seq + max_new_tokens).

        With use_cache the prompt is run once and each new token attends to the cached keys
        and values; without it the whole sequence is rerun for every token (slow, the
        reference). The two agree for every scaling except "dynamic" beyond the trained
        length, where cached keys keep the angles of the length at which they entered.
        """
        self._check_tokens(prompt)
        if not is_int(max_new_tokens) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
        tokens, caches = prompt, None
        step_input = prompt
        for _ in range(max_new_tokens):
            logits, new_caches = self(step_input if use_cache else tokens, caches)
            next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (batch, 1)
            tokens = torch.cat((tokens, next_token), dim=1)
            if use_cache:
                caches, step_input = new_caches, next_token
        return tokens


__all__ = ["TextLMConfig", "TinyCausalLM"]
