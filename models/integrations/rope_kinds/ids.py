"""Ids-based ropes: FluxPosEmbed and its copies.

The rope is called as `rope(ids)` with ids (seq, n_axes) float coordinates and returns cos, sin
(seq, sum(dims)) float32, each pair's value twice (interleaved layout), from float64 angles.
The transformer receives the ids as forward arguments (Flux: `img_ids`, `txt_ids`); text tokens
sit at 0. The replacement keeps reference axes as trained and gives the temporal and spatial
columns the method, with per axis s_a = max(1, L_a / L_a_train), L_a = largest id + 1 over the
forward's whole image ids as the transformer received them: under context parallelism the
rope sees a shard of the ids, while the transformer's forward pre-hook sees them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import ExtrapolatedRope, RopeKind, RopeSetup, argument, ids_table, plan_key, tensor_key


@dataclass(frozen=True)
class IdsKind(RopeKind):
    """How an ids-based rope's ids reach the transformer.

    image_ids, text_ids: the forward arguments holding the image (and reference) ids and the text ids.
    """

    image_ids: str = "img_ids"
    text_ids: str = "txt_ids"
    title: ClassVar[str] = "ids (FluxPosEmbed)"
    options: ClassVar[tuple[str, ...]] = ()

    def make_rope(self, original, setup: RopeSetup) -> IdsRope:
        return IdsRope(original, setup)


def _two_dimensional(ids):
    """The deprecated 3D form (1, seq, n_axes): the transformer takes [0]."""
    return ids[0] if ids is not None and ids.ndim == 3 else ids


class IdsRope(ExtrapolatedRope):
    """forward(ids (seq, n_axes)) -> cos, sin (seq, sum(dims)) float32, as FluxPosEmbed."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.text_ids = self.image_ids = None  # the whole ids for calls outside the transformer's forward

    def _reset_caches(self) -> None:
        super()._reset_caches()
        self._grid_of: tuple = (None, -1, None)  # (ids, version, grid): steps reuse it, no host read

    def call_inputs(self, args, kwargs, parameters) -> dict:
        kind = self.setup.family.kind
        return {"image_ids": _two_dimensional(argument(kind.image_ids, args, kwargs, parameters)),
                "text_ids": _two_dimensional(argument(kind.text_ids, args, kwargs, parameters))}

    def whole_ids(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(text ids, image ids) of the current forward; outside a forward, the `text_ids` and
        `image_ids` attributes (None unless a caller sets them)."""
        state = self.call_state()
        if hasattr(state, "inputs"):
            return state.inputs["text_ids"], state.inputs["image_ids"]
        return self.text_ids, self.image_ids

    def global_grid(self, ids: torch.Tensor) -> tuple[int, ...]:
        """Largest id + 1 on each planned column over the forward's whole image ids (over `ids` when
        the module is called on its own)."""
        source = self.whole_ids()[1]
        source = ids if source is None else source
        anchor, version, grid = self._grid_of
        if anchor is not source or version != source._version:
            columns = list(self.setup.family.planned_axes)
            longest = source.detach()[:, columns].amax(dim=0) + 1  # one host read per new set of ids
            grid = tuple(int(n) for n in longest.tolist())
            self._grid_of = (source, source._version, grid)
        return grid

    def forward(self, ids: torch.Tensor):
        plan = self.plan(self.global_grid(ids))
        if plan is None:
            return self.original(ids)
        scalings = self.axis_scalings(plan)

        def build():
            return ids_table(self.setup.dims, self.setup.thetas, scalings, plan.logit_scale, ids)

        whole = self.whole_ids()
        if all(t is not None for t in whole) and ids.shape[0] == sum(t.shape[0] for t in whole):
            # the transformer's cat(txt_ids, img_ids): cache by those tensors (kept alive in the key)
            key = (*(tensor_key(t) for t in whole), ids.device, plan_key(plan))
            return self.cached(key, build, anchors=whole)
        return build()  # a shard of the ids (context parallelism): its own rows, same global plan
