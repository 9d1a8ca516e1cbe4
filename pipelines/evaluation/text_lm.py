"""Scores of a causal language model on token batches: perplexity and passkey retrieval."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from axialrope.models import TinyCausalLM


def _check_batch(name: str, tokens, min_len: int) -> None:
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 2:
        raise ValueError(f"{name} must be a (n, length) tensor of token ids")
    if tokens.shape[1] < min_len:
        raise ValueError(f"{name} must have at least {min_len} columns, got {tokens.shape[1]}")


@torch.no_grad()
def perplexity(model: TinyCausalLM, tokens: torch.Tensor, batch_size: int = 8) -> float:
    """exp(mean next-token negative log-likelihood) over every position of tokens (n, length).

    One forward pass per row at its full length, so every token is scored under the
    frequencies that the model's scaling gives at that length.
    """
    _check_batch("tokens", tokens, 2)
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for rows in tokens.split(batch_size):
        rows = rows.to(device)
        logits, _ = model(rows[:, :-1])
        total += F.cross_entropy(logits.flatten(0, 1).float(), rows[:, 1:].flatten(), reduction="sum").item()
        count += rows[:, 1:].numel()
    return math.exp(total / count)


@torch.no_grad()
def passkey_accuracy(model: TinyCausalLM, sequences: torch.Tensor, n_digits: int = 5, batch_size: int = 8) -> float:
    """Share of sequences (n, length) whose last n_digits tokens greedy decoding reproduces exactly.

    The model reads everything before the answer and generates n_digits tokens through its
    KV cache; a row counts only if every digit is right.
    """
    _check_batch("sequences", sequences, n_digits + 1)
    device = next(model.parameters()).device
    correct = 0
    for rows in sequences.split(batch_size):
        rows = rows.to(device)
        prompt, answer = rows[:, :-n_digits], rows[:, -n_digits:]
        generated = model.generate(prompt, n_digits)[:, -n_digits:]
        correct += (generated == answer).all(dim=1).sum().item()
    return correct / len(sequences)


__all__ = ["passkey_accuracy", "perplexity"]
