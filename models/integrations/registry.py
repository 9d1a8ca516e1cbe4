"""The registry of model families `apply_extrapolation` reaches: `FAMILIES`, declared in `ropes/`.

`family_of(model)` finds a model's family by its class (subclasses too); `family_for_class(name)`
by a class name (e.g. the transformer named in a pipeline's model_index.json). `UNREACHED` names
the classes with rotary positions that no family covers, each with its reason (the docs list them).
"""

from __future__ import annotations

from axialrope import EXTRAPOLATION_METHODS

from .family import Family
from .ropes import (
    allegro,
    anyflow,
    cogvideox,
    cosmos,
    cosmos3,
    embed_nd,
    fitted,
    flux,
    framepack,
    helios,
    ideogram4,
    joyimage,
    kandinsky,
    ltx2,
    ltx_video,
    lumina,
    mochi,
    qwen_image,
    sana_wm,
    wan_hunyuan_video,
    z_image,
)

# every family, declared in the module of its rope; a new kind of rope adds its module here
FAMILIES: tuple[Family, ...] = tuple(
    family
    for rope in (
        flux,
        qwen_image,
        wan_hunyuan_video,
        cogvideox,
        ltx_video,
        anyflow,
        framepack,
        allegro,
        fitted,
        lumina,
        ideogram4,
        mochi,
        cosmos,
        helios,
        sana_wm,
        joyimage,
        ltx2,
        embed_nd,
        z_image,
        kandinsky,
        cosmos3,
    )
    for family in rope.FAMILIES
)

# class name -> why no family covers it (shown in docs/diffusers.md and in family_of's error)
UNREACHED: dict[str, str] = {
    "WanAnimate2Transformer3DModel": (
        "its rope is no module: the model's `_rope_freqs` method fills a dict on the model with complex tables "
        "of 512 positions shifted by per-stream offsets (the reference stream sits beside the video, offset by "
        "the reference grid's size), which the module-level `rope_apply` slices per sample with a time stride; "
        "the reference keys go through a K/V cache, and its denoising pass needs a flex-attention block mask "
        "that torch compiles with inductor, which the CPU harness cannot run in well under a second"
    ),
    **{
        name: (
            f"{what}, outside images and video: its rope runs over one axis of audio latent frames, with no "
            "image or video grid for the methods to act on"
        )
        for name, what in (
            ("AceStepTransformer1DModel", "ACE-Step 1.5, a music model (AceStepPipeline)"),
            ("StableAudioDiTModel", "Stable Audio Open, an audio model (StableAudioPipeline builds a 1D table)"),
            ("StableAudio3DiTModel", "Stable Audio 3, an audio model (a partial rope)"),
            ("LongCatAudioDiTTransformer", "LongCat-AudioDiT, an audio model (LongCatAudioDiTPipeline)"),
            ("MiniMaxMusic3Transformer1DModel", "MiniMax Music 3, a music model (a partial rope)"),
        )
    },
    "MiniMaxH3Transformer3DModel": (
        "its modular pipeline (minimax_h3 before_denoise) normalises y and x by the square root of the latent area "
        "to a fixed extent (a square canvas spans [0, 32) at any size: the model interpolates its own positions) "
        "and spaces latent frames unevenly (5/3 x (1, 4, 4, 4, 4) rotary units), in position_ids shared with "
        "audio and text rows; there is no token grid beyond a trained one for the methods to act on"
    ),
    "SanaWMLTX2RefinerTransformer3DModel": (
        "the SANA-WM stage-2 refiner denoises chunk by chunk against a sliding window: each window re-applies "
        "the rope at its own shifted absolute positions (the attention sink's `sink_pe` offset) and reads earlier "
        "chunks' keys from a KV cache already rotated at theirs, so no single call sees a grid to extrapolate"
    ),
    "OmniGenTransformer2DModel": (
        "its rope is Phi-3's 1D rope (OmniGenSuScaledRotaryEmbedding) over the flattened sequence: the pipeline "
        "numbers text, the time token and the image's tokens row after row as one run of positions 0 .. L - 1, so "
        "no position axis is the image's height or width and a per-axis method has nothing to act on; its own "
        "rope already switches to Phi-3's long factors past 4096 positions"
    ),
}

# methods whose tables carry a gain (YaRN's temperature, Dy-YaRN's 0.1 ln s + 1, SEGA's magnitudes): a logit
# scale under a softmax; entropy scaling is one too (its option, any method)
GAIN_METHODS = ("yarn", "dype-yarn", "kappa-yarn", "sega")


def supported_classes() -> list[str]:
    return [name for family in FAMILIES for name in family.classes]


def family_for_class(name: str | None) -> Family | None:
    """The family covering the class called `name`, or None."""
    return next((family for family in FAMILIES if name in family.classes), None)


def family_of(model) -> Family:
    """The family of a diffusers model (its class or a base class is declared).

    Raises:
        TypeError: no family covers it (the message names the supported classes).
    """
    for cls in type(model).__mro__:
        family = family_for_class(cls.__name__)
        if family is not None:
            return family
    name = type(model).__name__
    if name in UNREACHED:
        raise TypeError(f"apply_extrapolation cannot reach {name}: {UNREACHED[name]}")
    raise TypeError(f"apply_extrapolation supports {', '.join(supported_classes())} (and subclasses); got {name}")


def methods_for(family: Family) -> list[str]:
    """The extrapolation methods that apply to a family: riflex needs a temporal rope axis, and a family
    whose tables cannot carry a gain (`Family.gain_refused`) takes no method with one."""
    return [m for m in EXTRAPOLATION_METHODS if refusal(family, m) is None]


def refusal(family: Family, method: str, entropy_scaling: bool = False) -> str | None:
    """Why `method` (with entropy scaling or not) has no meaning for `family`, or None where it applies."""
    if family.methods and method not in family.methods:
        return f"{method} has no meaning for {family.title}: {family.methods_reason}"
    if method == "sega" and (family.no_latent or sum(role == "spatial" for role in family.axes) != 2):
        spatial = sum(role == "spatial" for role in family.axes)
        why = family.no_latent or f"sega acts on two spatial rope axes, and its rope has {spatial}"
        return f"sega has no meaning for {family.title}: {why}"
    if method == "spa" and (family.attention == "linear" or family.kind.spa_unreached(family)):
        why = (
            "its attention is linear (no softmax)"
            if family.attention == "linear"
            else family.kind.spa_unreached(family)
        )
        return f"spa averages softmax attention over position variants; for {family.title}, {why}"
    if method == "riflex" and family.temporal_axis is None:
        return f"riflex extrapolates video length; {family.title} {family.no_time_axis}"
    if family.gain_refused and (method in GAIN_METHODS or entropy_scaling):
        what = "entropy scaling" if method not in GAIN_METHODS else method
        return (
            f"{what} puts a gain on the rope tables, a logit scale under a softmax; for {family.title}, "
            f"{family.gain_refused}"
        )
    return None


__all__ = [
    "FAMILIES",
    "GAIN_METHODS",
    "UNREACHED",
    "family_for_class",
    "family_of",
    "methods_for",
    "refusal",
    "supported_classes",
]
