"""Training a `TinyCausalLM` on sampled batches, and its checkpoints (safetensors, atomic).

Deliberately small: the context-extension benchmark trains for minutes on a CPU, so a
plain loop (AdamW, gradient clipping) is all it needs. Its learning-rate schedules are the
DiT loop's (diffusers' `get_scheduler`, with `TrainConfig.lr_scheduler`'s names) plus one of
its own, the default: warm-up, then a cosine that ends at a tenth of the rate, not at 0.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Callable

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from diffusers.optimization import get_scheduler
from tqdm.auto import tqdm

from axialrope.models import TextLMConfig, TinyCausalLM
from axialrope.validation import is_int

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
        lr=lr, betas=(0.9, 0.95),
    )
    if lr_scheduler == "cosine_to_tenth":
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_cosine(s, steps, warmup) if warmup else 1.0)
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

    The file appears under its name only once complete (written beside it, then renamed),
    so a run killed mid-write never leaves a truncated checkpoint for the next run to load.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"config": json.dumps(model.config.to_dict()), "metadata": json.dumps(metadata or {})}
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(fd)
    try:
        save_file(state, tmp, metadata=header)
        os.chmod(tmp, 0o644)  # mkstemp made it private; a checkpoint is an ordinary file
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> tuple[TinyCausalLM, dict]:
    """Reads a `save_checkpoint` file: (model in eval mode, metadata)."""
    with safe_open(str(path), framework="pt") as f:
        header = f.metadata() or {}
    if "config" not in header:
        raise ValueError(f"{path} is not a TinyCausalLM checkpoint (no config in its safetensors metadata)")
    model = TinyCausalLM(TextLMConfig(**json.loads(header["config"])))
    model.load_state_dict(load_file(str(path)))
    return model.to(device).eval(), json.loads(header.get("metadata", "{}"))


__all__ = ["TEXT_LR_SCHEDULERS", "load_checkpoint", "save_checkpoint", "train_lm", "warmup_cosine"]
