"""Training a `TinyCausalLM` on sampled batches, and its checkpoints (one safetensors file, atomic, durable).

Deliberately small: the context-extension benchmark trains for minutes on a CPU, so a
plain loop (AdamW, gradient clipping) is all it needs. Its learning-rate schedules are the
DiT loop's (diffusers' `get_scheduler`, with `TrainConfig.lr_scheduler`'s names) plus one of
its own, the default: warm-up, then a cosine that ends at a tenth of the rate, not at 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import torch
from diffusers.optimization import get_scheduler
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from axialrope.models import TextLMConfig, TinyCausalLM
from axialrope.validation import is_int

from .checkpoints import write_atomically
from .config import LR_SCHEDULERS

# Why the text LM keeps a schedule of its own: trained with diffusers' "cosine" (down to 0),
# the context-extension benchmark's base model retrieves the passkey far less often even at
# its training length; the floor at a tenth keeps it learning to the end (measured:
# docs/text.md, "Learning-rate schedule", with its command).
TEXT_LR_SCHEDULERS = ("cosine_to_tenth", *LR_SCHEDULERS)


def warmup_cosine(step: int, steps: int, warmup: int) -> float:
    """Learning-rate multiplier: linear from 1/warmup to 1 over `warmup` steps, then cosine to 0.1."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))


def train_lm(
    model: TinyCausalLM,
    next_batch: Callable[[int], torch.Tensor],
    steps: int,
    lr: float = 3e-3,
    warmup: int = 50,
    weight_decay: float = 0.1,
    progress: str | None = None,
    lr_scheduler: str = "cosine_to_tenth",
) -> list[float]:
    """Trains `model` in place for `steps` AdamW steps; returns the loss of every step.

    Args:
        next_batch: step -> token batch (batch, seq) int64 (moved to the model's device here).
        warmup: linear warm-up steps (0: none).
        progress: a tqdm description, or None for no progress bar.
        lr_scheduler: one of TEXT_LR_SCHEDULERS: "cosine_to_tenth" (`warmup_cosine`; with
            warmup 0, a constant rate), or a diffusers `get_scheduler` name as in `TrainConfig`.
    """
    if not is_int(steps) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr}")
    if lr_scheduler not in TEXT_LR_SCHEDULERS:
        raise ValueError(f"lr_scheduler must be one of {TEXT_LR_SCHEDULERS}, got {lr_scheduler!r}")
    device = next(model.parameters()).device
    # no weight decay on norms and the embedding, as usual for transformers
    decayed = [p for n, p in model.named_parameters() if p.ndim >= 2 and not n.startswith("embed")]
    others = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and not n.startswith("embed"))]
    optimizer = torch.optim.AdamW(
        [{"params": decayed, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )
    if lr_scheduler == "cosine_to_tenth":
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: warmup_cosine(s, steps, warmup) if warmup else 1.0
        )
    else:
        schedule = get_scheduler(lr_scheduler, optimizer, num_warmup_steps=warmup, num_training_steps=steps)
    model.train()
    losses = []
    bar = tqdm(range(steps), desc=progress, disable=progress is None, mininterval=5)
    for step in bar:
        loss = model.loss(next_batch(step).to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    model.eval()
    return losses


def save_checkpoint(model: TinyCausalLM, path: str | Path, metadata: dict | None = None) -> None:
    """Writes weights, config and `metadata` (JSON-able) to one safetensors file, atomically.

    Written through the DiT checkpoints' `write_atomically` (written beside, fsynced, renamed,
    the folder fsynced): the file appears under its name only once complete and durable, so a
    run killed mid-write never leaves a truncated checkpoint for the next run to load.
    """
    header = {"config": json.dumps(model.config.to_dict()), "metadata": json.dumps(metadata or {})}
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    write_atomically(path, lambda temporary: save_file(state, str(temporary), metadata=header))


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> tuple[TinyCausalLM, dict]:
    """Reads a `save_checkpoint` file: (model in eval mode, metadata). Safetensors only: nothing is unpickled.

    ValueError (naming the file) for a missing, truncated or corrupt file, or one whose weights
    do not fit its own config.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"text LM checkpoint {str(path)!r} does not exist")
    try:
        with safe_open(str(path), framework="pt") as f:
            header = f.metadata() or {}
        weights = load_file(str(path))
    except SafetensorError as error:
        raise ValueError(f"{str(path)!r} is not a readable safetensors file (truncated or corrupt?): {error}") from None
    if "config" not in header:
        raise ValueError(f"{path} is not a TinyCausalLM checkpoint (no config in its safetensors metadata)")
    try:
        model = TinyCausalLM(TextLMConfig(**json.loads(header["config"])))
        metadata = json.loads(header.get("metadata", "{}"))
        model.load_state_dict(weights)
    except (json.JSONDecodeError, TypeError, RuntimeError) as error:
        raise ValueError(f"{str(path)!r}: its config, metadata or weights are corrupt: {error}") from None
    return model.to(device).eval(), metadata


__all__ = ["TEXT_LR_SCHEDULERS", "load_checkpoint", "save_checkpoint", "train_lm", "warmup_cosine"]
