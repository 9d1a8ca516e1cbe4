"""Where reference-image tokens sit beyond the trained grid (the `reference` option).

Editing pipelines put reference images in the generated image's sequence, on their own index
(Flux Kontext's index axis 1, Flux.2's time axis 10, 20, ..., Qwen-Image-Edit's frame 1, 2, ...),
each over its own spatial positions. At the pipeline's default size a reference has the output's
size, so its token (y, x) sits where the output's token (y, x) does: it covers the output. Beyond
the trained grid the output grows and the pipelines keep each reference near 1 MP, so with its own
positions it covers only the output's first (Kontext, Flux.2) or central (Qwen) tokens.

- "cover" (default): beyond the trained grid each reference is mapped onto the output's extent,
  per spatial axis, first token edge to first token edge and last to last, so a reference covers
  the output as at the pipeline's size; the method's plan follows the output's grid.
- "keep": the pipeline's positions; the plan follows the extent of all images together.
Within the trained grid the family's own module runs, references included, with either rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

REFERENCE_RULES = ("cover", "keep")


def reference_rule(options: Mapping) -> str:
    """The `reference` option's value (default "cover"); ValueError for another."""
    rule = options.get("reference", "cover")
    if rule not in REFERENCE_RULES:
        raise ValueError(f"reference must be one of {REFERENCE_RULES}, got {rule!r}")
    return rule


@dataclass(frozen=True)
class Extent:
    """The positions of an image's first and last token on one axis, `spacing` apart."""

    first: float
    last: float
    spacing: float = 1.0

    @property
    def tokens(self) -> int:
        return round((self.last - self.first) / self.spacing) + 1

    @property
    def span(self) -> tuple[float, float]:
        """The extent's edges: half a token before the first token, half a token after the last."""
        return self.first - self.spacing / 2, self.last + self.spacing / 2


def cover_map(reference: Extent, output: Extent) -> tuple[float, float]:
    """(scale, offset) with which p -> p * scale + offset maps a reference's positions onto the output's
    extent, edge to edge; (1.0, 0.0), the identity, when the two extents are the same."""
    (ref_lo, ref_hi), (out_lo, out_hi) = reference.span, output.span
    if (ref_lo, ref_hi) == (out_lo, out_hi):
        return 1.0, 0.0
    scale = (out_hi - out_lo) / (ref_hi - ref_lo)
    return scale, out_lo - ref_lo * scale
