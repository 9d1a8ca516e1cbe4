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
- "untwist" (or a `KeyBands` for other settings): the references placed as "cover" places them, and at
  every size, within the trained grid too, each reference key's rotated pairs scaled per axis by
  Untwisting RoPE's `axialrope.frequencies.KeyBands` (arXiv 2602.05013): the fast pairs weakened, the
  slow ones strengthened, so a query of the output is drawn less to the reference token at its own
  position (which copies the reference's content) and more to those alike in content (its look).
Within the trained grid the family's own module runs, references included, with every rule; "untwist"
then only scales the reference keys (`ReferenceKeys`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from axialrope.frequencies import KeyBands

REFERENCE_RULES = ("cover", "keep", "untwist")


def reference_rule(options: Mapping) -> str:
    """The `reference` option's rule (default "cover"; "untwist" for a `KeyBands`); ValueError for another."""
    rule = options.get("reference", "cover")
    if isinstance(rule, KeyBands):
        return "untwist"
    if not isinstance(rule, str) or rule not in REFERENCE_RULES:
        raise ValueError(f"reference must be one of {REFERENCE_RULES} or a KeyBands, got {rule!r}")
    return rule


def key_bands(options: Mapping) -> KeyBands | None:
    """The reference keys' `KeyBands` under "untwist" (the defaults, or the one given); None otherwise."""
    rule = options.get("reference", "cover")
    if isinstance(rule, KeyBands):
        return rule
    return KeyBands() if reference_rule(options) == "untwist" else None


def refuse_untwist(options: Mapping, title: str, why: str) -> None:
    """ValueError naming the model and `why` (a clause) where the options ask for "untwist"."""
    if key_bands(options) is not None:
        raise ValueError(f'reference="untwist" is not available for {title}: {why}; use "cover" or "keep"')


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


# -- "untwist": the reference keys' pairs scaled -------------------------------------------------------------


def key_channel_scales(bands: KeyBands, dims: Sequence[int], roles: Sequence[str], t: float, head_dim: int):
    """(head_dim,) float32: the factor of each channel of a reference key in the interleaved layout (pair j
    of the rope's channels is (2j, 2j + 1), the axes' blocks in order). Each spatial axis of dims[a]
    channels takes `bands.pair_scales(dims[a] // 2, t)`, each value on both channels of its pair;
    reference and temporal axes, and channels past sum(dims), keep 1 (the paper's analysis is of
    positions in the image plane; an index axis carries no position there)."""
    if sum(dims) > head_dim:
        raise ValueError(f"the rope's {sum(dims)} channels exceed the head's {head_dim}")
    parts = [
        bands.pair_scales(dim // 2, t) if role == "spatial" else torch.ones(dim // 2, dtype=torch.float64)
        for dim, role in zip(dims, roles, strict=True)
    ]
    pairs = torch.cat(parts).repeat_interleave(2)
    rest = torch.ones(head_dim - len(pairs), dtype=torch.float64)
    return torch.cat([pairs, rest]).to(torch.float32)


class ReferenceKeys:
    """Untwisting RoPE on a patched model: each attention's image keys, reference rows only, scaled per pair.

    Why a hook on the key norm and not the table: the family's processors rotate q and k by one table,
    so a magnitude in the table would scale the reference queries too (the reference's own attention,
    which the paper leaves alone), and logits between two reference tokens by its square. The paper
    scales the reference keys only. A per-pair factor commutes with the pair's rotation (both of its
    channels take the same factor), so scaling the key right after its norm, before the rotation, is
    scaling the rotated key. So a forward hook on every attention's `norm_k` (the image stream's keys;
    a joint block's text keys go through `norm_added_k`, untouched) multiplies the reference rows.

    The rows: the rope's `reference_rows()` gives, for the current forward, which of the image stream's
    rows are reference tokens; a key norm sees those rows last (the image stream alone in a joint block,
    text then image in a single-stream block), so the mask is laid on its last rows. Time t is the
    forward's own (the rope's call state), so each call's factors are its own. Values and queries are
    unchanged, as are the keys of every call without reference rows.

    Args:
        rope: the patched model's replacement rope (`reference_rows()`, `call_state()`, `setup`).
        bands: the `KeyBands` schedule.
    """

    def __init__(self, rope, bands: KeyBands):
        self.rope, self.bands = rope, bands
        self._last: tuple = (None, None)  # (key, factors): a forward's layers share them; keyed on all they depend on

    def install(self, model: nn.Module) -> list:
        """Hooks on every attention module's `norm_k`; returns their handles. ValueError where the model's
        attention has none (no key norm to act after) or runs processors that fuse the norm away."""
        title = self.rope.setup.family.title
        attentions = [m for m in model.modules() if hasattr(m, "processor") and hasattr(m, "norm_k")]
        if not attentions or any(not isinstance(m.norm_k, nn.Module) for m in attentions):
            raise ValueError(f'reference="untwist" needs a key norm in every attention of {title}; this model has none')
        from ..fused_processors import FUSED_PROCESSORS  # imports diffusers' Flux and Wan: only when needed

        fusing = tuple(FUSED_PROCESSORS.values())
        fused = sorted({type(m.processor).__name__ for m in attentions if isinstance(m.processor, fusing)})
        if fused:
            raise ValueError(
                f'reference="untwist" scales keys after their norm, which {", ".join(fused)} fuses away; '
                "use the family's own attention processors"
            )
        return [m.norm_k.register_forward_hook(_KeyHook(self, int(m.heads))) for m in attentions]

    def factors(self, rows: torch.Tensor, head_dim: int, device) -> torch.Tensor:
        """(len(rows), head_dim) float32 on `device`: each reference row's channel scales, 1 elsewhere."""
        setup = self.rope.setup
        t = self.rope.call_state().value()
        # an inference tensor may not enter autograd later: one made under inference_mode serves only there
        key = (rows.numpy().tobytes(), t, head_dim, torch.device(device), torch.is_inference_mode_enabled())
        known, factors = self._last
        if known != key:
            scales = key_channel_scales(self.bands, setup.dims, setup.family.axes, t, head_dim)
            factors = torch.ones(len(rows), head_dim, dtype=torch.float32)
            factors[rows] = scales
            factors = factors.to(device)
            self._last = (key, factors)
        return factors


class _KeyHook:
    """The forward hook of one key norm: (batch, seq, heads, head_dim) keys, their last rows the image stream's."""

    def __init__(self, keys: ReferenceKeys, heads: int):
        self.keys, self.heads = keys, heads

    @torch.compiler.disable  # host reads of the call's rows and time: run eagerly, never traced
    def __call__(self, module, args, output):
        rows = self.keys.rope.reference_rows()
        if rows is None or not bool(rows.any()):
            return output  # no reference in this forward: the keys as they are
        if output.ndim != 4 or output.shape[2] != self.heads or output.shape[1] < len(rows):
            raise RuntimeError(
                f'reference="untwist": keys of shape {tuple(output.shape)} are not (batch, seq, {self.heads} heads, '
                f"head_dim) with the forward's {len(rows)} image rows last (context parallelism shards them, "
                "which this rule does not follow)"
            )
        start = output.shape[1] - len(rows)
        factors = self.keys.factors(rows, output.shape[-1], output.device)
        scaled = (output[:, start:].float() * factors[None, :, None, :]).to(output.dtype)
        return torch.cat([output[:, :start], scaled], dim=1) if start else scaled
