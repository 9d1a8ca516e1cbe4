"""A cell of an extrapolation table: one pipeline, method and size, sampled for one seed and scored against
real images by the detail SWD, beside the floor that two real sets reach.

benchmarks/extrapolation.py (procedural real images) and `axialrope calibrate` (a user's images) both
measure their cells here, so the two agree on the same images.

    references = References(real, floor, labels)                 # (n, 3, h, w) each, in [0, 1]; labels (n,)
    cell = measure_cell(pipe, Method("pi", True), references, steps=12, guidance=2.0, seed=0)
    cell.distance.detail, floor_distance(references).detail      # the method's value and the floor
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from axialrope import Extrapolation
from axialrope.extrapolation import ENTROPY_SUFFIX, split_name

from .metrics import SWDResult, swd

# the methods of an image model (riflex extrapolates video length only), in the tables' order
IMAGE_METHOD_NAMES = (
    "none",
    "pi",
    "ntk",
    "yarn",
    "dype-ntk",
    "dype-yarn",
    "kappa-pi",
    "kappa-ntk",
    "kappa-yarn",
    "sega",
    "spa",
)


@dataclass(frozen=True)
class Method:
    """A row of the tables: an extrapolation method, optionally with entropy scaling."""

    name: str
    entropy_scaling: bool = False

    @property
    def label(self) -> str:
        return self.name + (ENTROPY_SUFFIX if self.entropy_scaling else "")

    @classmethod
    def from_label(cls, label: str) -> Method:
        return cls(*split_name(label))

    def extrapolation(self) -> Extrapolation:
        return Extrapolation.from_name(self.name, entropy_scaling=self.entropy_scaling)


def image_methods(rope: bool = True) -> list[Method]:
    """Every image method without, then with entropy scaling; a sin-cos model (rope=False) has no frequencies
    to rescale: only `none`, without and with entropy scaling."""
    names = IMAGE_METHOD_NAMES if rope else ("none",)
    return [Method(name, entropy) for entropy in (False, True) for name in names]


@dataclass
class References:
    """Real images a cell is scored against: real and floor, two disjoint sets (n, 3, h, w) in [0, 1], and
    the labels (n,) the samples are drawn for (None: an unconditional model)."""

    real: torch.Tensor
    floor: torch.Tensor
    labels: torch.Tensor | None = None

    @property
    def size(self) -> dict:
        """The pipeline's size keywords of the images: {"height": h, "width": w}."""
        return {"height": self.real.shape[-2], "width": self.real.shape[-1]}


@dataclass
class Cell:
    """samples (n, 3, h, w) in [0, 1] and their SWD against the references' real set."""

    samples: torch.Tensor
    distance: SWDResult


def generate(
    pipe,
    method: Method,
    labels: torch.Tensor | None,
    size: dict,
    steps: int,
    guidance: float,
    seed: int,
    count: int | None = None,
) -> torch.Tensor:
    """Samples in [0, 1] of `labels` (n,) at `size` (height, width, num_frames keywords; {}: the trained size):
    images (n, 3, h, w) or videos (n, 3, t, h, w). labels None: `count` unconditional samples, no guidance."""
    conditional = (
        dict(class_labels=labels.tolist(), guidance_scale=guidance)
        if labels is not None
        else dict(batch_size=count, guidance_scale=1.0)
    )
    out = pipe(
        num_inference_steps=steps,
        generator=torch.Generator().manual_seed(seed),
        extrapolation=method.extrapolation(),
        output_type="pt",
        **conditional,
        **size,
    )
    if out.frames is not None:
        return out.frames.permute(0, 2, 1, 3, 4)  # (n, t, c, h, w) -> (n, c, t, h, w)
    return out.images


def measure_cell(pipe, method: Method, references: References, steps: int, guidance: float, seed: int) -> Cell:
    """The pipeline's samples with `method` at the references' size for `seed`, and their SWD against the
    real set."""
    samples = generate(
        pipe, method, references.labels, references.size, steps, guidance, seed, count=len(references.real)
    )
    return Cell(samples, swd(samples, references.real))


def floor_distance(references: References) -> SWDResult:
    """The SWD between the two real sets: what noise alone reaches with this many images."""
    return swd(references.floor, references.real)


__all__ = [
    "IMAGE_METHOD_NAMES",
    "Cell",
    "Method",
    "References",
    "floor_distance",
    "generate",
    "image_methods",
    "measure_cell",
]
