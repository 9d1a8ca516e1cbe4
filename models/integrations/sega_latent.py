"""Where SEGA finds each family's latent: the forward argument, and how it lies, or why it cannot be read.

SEGA (`axialrope.sega`) plans every call from the spectrum of the latent on the global token grid. The call
plan's pre-hook reads it from the forward's arguments before context parallelism splits them
(`latent_argument`), as a tensor `axialrope.sega.token_map` takes: (B, C, H, W), (B, C, T, H, W) (also
(B, T, C, H, W)) or packed tokens (B, N, D) whose first tokens are the grid's. Most families pass their latent
as `hidden_states` in one of those; the others are listed here: a different argument or layout (`READS`), or
a reason that refuses sega for the family by name (`UNREADABLE`, through `registry.refusal`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LatentRead:
    """argument: the forward argument holding the latent. layout: "first" (channels before the grid axes, or
    packed tokens), "last" (channels last: (B, T, H, W, C)), or "list" (a list of per-image (C, F, H, W) tensors
    at one size, stacked)."""

    argument: str = "hidden_states"
    layout: str = "first"


READS = {
    "z-image": LatentRead("x", "list"),
    "z-image-controlnet": LatentRead("x", "list"),
    "kandinsky5": LatentRead(layout="last"),
    "kandinsky6": LatentRead(layout="last"),
    "kandinsky6-sr": LatentRead(layout="last"),
    "cosmos-controlnet": LatentRead("latents"),
}

UNREADABLE = {
    "cosmos3": "its forward takes the token ids of one multimodal sequence, not a latent on a grid",
    "joyimage-edit": (
        "its hidden_states stack the image being made with the reference images, each on a grid of its own"
    ),
    "joyimage-edit-plus": (
        "its hidden_states stack the image being made with the reference images, each on a grid of its own"
    ),
}


def sega_refusal(family) -> str | None:
    """Why sega has no meaning for `family` (a clause after its title), or None: it needs two spatial axes and
    the latent of each call."""
    if family.name in UNREADABLE:
        return UNREADABLE[family.name]
    spatial = sum(role == "spatial" for role in family.axes)
    if spatial != 2:
        return f"sega acts on two spatial rope axes, and its rope has {spatial}"
    return None


def latent_argument(family, args: tuple, kwargs: dict, parameters: Sequence[str]):
    """The forward's whole latent as `axialrope.sega.token_map` takes it; ValueError where it was not given."""
    from ..call_plan import argument

    read = READS.get(family.name, LatentRead())
    latent = argument(read.argument, args, kwargs, parameters)
    if latent is None:
        raise ValueError(f"sega plans each call from its latent: call {family.title} with its `{read.argument}`")
    if read.layout == "list":
        items = list(latent) if isinstance(latent, (list, tuple)) else [latent]
        if len({tuple(item.shape) for item in items}) != 1:
            raise ValueError(f"sega needs {family.title}'s latents at one size, got {[tuple(i.shape) for i in items]}")
        return torch.stack(items)
    if read.layout == "last":
        return latent.movedim(-1, 1)
    return latent


__all__ = ["READS", "UNREADABLE", "LatentRead", "latent_argument", "sega_refusal"]
