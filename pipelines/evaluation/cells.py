"""A cell of an extrapolation table: one pipeline, method and size, sampled for one seed and scored against
real images by the detail SWD, beside the floor that two real sets reach; or, without real images, against the
model's own samples at its trained size by the reference-free score (`self_reference`).

benchmarks/extrapolation.py and benchmarks/self_reference_agreement.py (procedural real images) and `axialrope
calibrate` (a user's images, or none) all measure their cells here, so they agree on the same samples.

    references = References(real, floor, labels)                 # (n, 3, h, w) each, in [0, 1]; labels (n,)
    cell = measure_cell(pipe, Method("pi", True), references, steps=12, guidance=2.0, seed=0)
    cell.distance.detail, floor_distance(references).detail      # the method's value and the floor

    own = own_reference(pipe, seed=0, num=8, steps=12, guidance=2.0)   # the model at its trained size
    cell = measure_self_cell(pipe, Method("pi"), own, {"height": 64, "width": 64}, 12, 2.0, seed=0)
    cell.score.value                                             # lower is better
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from axialrope import Extrapolation
from axialrope.extrapolation import ENTROPY_SUFFIX, split_name

from .metrics import SWDResult, swd
from .self_reference import SelfScore, self_reference_score

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
# the methods of a video model, as benchmarks/extrapolation.py's video table measures them
VIDEO_METHOD_NAMES = (
    "none",
    "pi",
    "ntk",
    "yarn",
    "riflex",
    "dype-ntk",
    "dype-yarn",
    "kappa-pi",
    "kappa-ntk",
    "kappa-yarn",
)
OWN_FACTOR = 4  # the model's own samples at its trained size: this many times a cell's samples, per seed
OWN_SEED = 5000  # seed s of the model's own samples is OWN_SEED + s, apart from the cells' seeds


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


def video_methods(rope: bool = True) -> list[Method]:
    """Every video method (the image ones and riflex) without, then with entropy scaling; a sin-cos model: `none`
    alone, without and with."""
    names = VIDEO_METHOD_NAMES if rope else ("none",)
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


@dataclass
class OwnReference:
    """What the reference-free score compares with: `own`, the model's own samples at its trained size,
    (m, 3, h, w) or (m, 3, t, h, w) in [0, 1] (method none); `labels` (count,), the classes every cell draws its
    `count` samples for (the model's classes in turn; None: an unconditional model)."""

    own: torch.Tensor
    labels: torch.Tensor | None
    count: int


@dataclass
class SelfCell:
    """samples (n, 3, h, w) or (n, 3, t, h, w) in [0, 1] and their reference-free score."""

    samples: torch.Tensor
    score: SelfScore


def classes_in_turn(pipe, count: int) -> torch.Tensor | None:
    """(count,) class ids 0, 1, ... in turn for a class-conditional pipeline; None for an unconditional one."""
    classes = pipe.transformer.config.num_classes
    return torch.arange(count) % classes if classes else None


def own_reference(pipe, seed: int, num: int, steps: int, guidance: float, factor: int = OWN_FACTOR) -> OwnReference:
    """Seed `seed`'s picture of what the model makes: `factor` * `num` samples at its trained size, method none,
    seed OWN_SEED + seed, the classes in turn (so every class is as present as in a cell's `num`)."""
    count = factor * num
    own = generate(pipe, Method("none"), classes_in_turn(pipe, count), {}, steps, guidance, OWN_SEED + seed, count)
    return OwnReference(own, classes_in_turn(pipe, num), num)


def measure_self_cell(
    pipe, method: Method, reference: OwnReference, size: dict, steps: int, guidance: float, seed: int
) -> SelfCell:
    """The pipeline's samples with `method` at `size` (height, width, num_frames keywords; {}: the trained size)
    for `seed`, and their reference-free score against the model's own samples."""
    samples = generate(pipe, method, reference.labels, size, steps, guidance, seed, count=reference.count)
    return SelfCell(samples, self_reference_score(samples, reference.own, seed=seed))


__all__ = [
    "IMAGE_METHOD_NAMES",
    "OWN_FACTOR",
    "OWN_SEED",
    "VIDEO_METHOD_NAMES",
    "Cell",
    "Method",
    "OwnReference",
    "References",
    "SelfCell",
    "classes_in_turn",
    "floor_distance",
    "generate",
    "image_methods",
    "measure_cell",
    "measure_self_cell",
    "own_reference",
    "video_methods",
]
