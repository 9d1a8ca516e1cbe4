"""Start a video DiT from an image DiT's weights ("inflation", as I3D did for CNNs).

    video = create_dit("mini", num_frames=8, temporal_patch_size=2, ...)
    inflate_from_image(image_model, video)   # in place; returns what it did per parameter

The two models share every block shape. The patch embedding's r frames of a tubelet get the image
weights divided by r and the final layer's frames the image's output rows, so a still clip is
predicted as the image is. Each rotated q/k pair of the video head takes the image pair of the same
axis with the nearest frequency (log scale, each used once; time takes the pairs left over), the
same permutation on the qkv rows and q/k norms. Everything else is copied as is. Why, and why a
temporal patch of 1 works best: docs/training.md ("Starting from other weights").
"""

from __future__ import annotations

import math

import torch
from einops import rearrange, repeat

from .model import DiT


def rotary_pair_sources(image_inv_freqs: list[torch.Tensor], video_inv_freqs: list[torch.Tensor]) -> list[int]:
    """For each rotary pair of a video head, the image pair whose weights it takes.

    Args:
        image_inv_freqs: per image axis (y, x), its inverse frequencies (pairs,).
        video_inv_freqs: per video axis (t, y, x), its inverse frequencies (pairs,).

    Returns:
        sources[j] = index of the image pair (pairs numbered axis block by axis block, as
        in the RoPE table) for video pair j; a permutation of all image pairs. Raises
        ValueError unless both heads rotate the same number of pairs.
    """
    image_pairs = [(axis, float(f)) for axis, freqs in enumerate(image_inv_freqs) for f in freqs]
    video_pairs = [(axis, float(f)) for axis, freqs in enumerate(video_inv_freqs) for f in freqs]
    if len(image_pairs) != len(video_pairs) or len(video_inv_freqs) != len(image_inv_freqs) + 1:
        raise ValueError(
            f"cannot map rotary pairs: the image head rotates {len(image_pairs)} pairs on "
            f"{len(image_inv_freqs)} axes, the video head {len(video_pairs)} pairs on {len(video_inv_freqs)} axes; "
            "inflation needs one more axis (time) and the same number of pairs"
        )
    free = set(range(len(image_pairs)))

    def take(frequency: float, candidates: list[int]) -> int:
        best = min(candidates, key=lambda i: (abs(math.log(image_pairs[i][1] / frequency)), i))
        free.discard(best)
        return best

    sources: dict[int, int] = {}
    # spatial axes first: video axis a + 1 is image axis a
    for j, (axis, frequency) in enumerate(video_pairs):
        if axis > 0:
            sources[j] = take(frequency, [i for i in free if image_pairs[i][0] == axis - 1])
    for j, (axis, frequency) in enumerate(video_pairs):
        if axis == 0:
            sources[j] = take(frequency, sorted(free))
    return [sources[j] for j in range(len(video_pairs))]


def _head_channel_sources(image: DiT, video: DiT) -> torch.Tensor:
    """(head_dim,) long: the image head channel each video head channel copies (RoPE's half layout)."""
    head_dim = video.config.hidden_size // video.config.num_heads
    pairs = rotary_pair_sources(
        [f for f, _ in image.rope.embedding.axis_frequencies()],
        [f for f, _ in video.rope.embedding.axis_frequencies()],
    )
    half = len(pairs)  # pair j is channels (j, j + half); channels past 2 * half are not rotated
    channels = torch.arange(head_dim)
    channels[:half] = torch.tensor(pairs)
    channels[half : 2 * half] = torch.tensor(pairs) + half
    return channels


def _check_compatible(image: DiT, video: DiT) -> None:
    if not isinstance(image, DiT) or not isinstance(video, DiT):
        raise TypeError(f"image and video must be DiT models, got {type(image).__name__} and {type(video).__name__}")
    if image.n_axes != 2 or video.n_axes != 3:
        raise ValueError(
            f"inflation goes from an image DiT to a video DiT; got {image.n_axes} and {video.n_axes} position axes"
        )
    if image.rope is None or video.rope is None:
        raise ValueError("inflation needs two position_encoding='rope' models (sin-cos tables are not weights)")
    for name in (
        "in_channels",
        "patch_size",
        "hidden_size",
        "depth",
        "num_heads",
        "mlp_ratio",
        "num_classes",
        "qk_norm",
        "text_dim",
    ):
        a, b = image.config[name], video.config[name]
        if a != b:
            raise ValueError(f"the models differ in {name}: image {a!r}, video {b!r}")
    if image.out_channels != video.out_channels:
        raise ValueError(f"the models differ in out_channels: image {image.out_channels}, video {video.out_channels}")


@torch.no_grad()
def inflate_from_image(image: DiT, video: DiT, match_frequencies: bool = True) -> dict[str, str]:
    """Overwrites the video DiT's weights with the image DiT's, inflated (see the module docstring).

    Args:
        image: an image DiT (rope, any trained size).
        video: a video DiT of the same width, depth, heads, classes and spatial patch.
        match_frequencies: map rotary channels by frequency (True) or copy them in place
            (False; the ablation of benchmarks/video_init.py).

    Returns:
        {parameter name: "copied" | "inflated over r frames" (r > 1) | "rotary channels matched"}.
    """
    _check_compatible(image, video)
    r = video.config.temporal_patch_size
    c = video.config.in_channels
    source = image.state_dict()
    heads = video.config.num_heads
    channel_sources = _head_channel_sources(image, video) if match_frequencies else None
    report = {}
    spread = f"inflated over {r} frames" if r > 1 else "copied"  # r = 1: the image's own patch
    for name, target in video.state_dict().items():
        weights = source[name]
        if name == "patchify.proj.weight":
            weights = repeat(weights, "d (c p q) -> d (c r p q)", c=c, r=r, p=video.config.patch_size) / r
            report[name] = spread
        elif name.startswith("final_layer.linear."):
            weights = repeat(
                weights, "(c p q) ... -> (c r p q) ...", c=video.out_channels, r=r, p=video.config.patch_size
            )
            report[name] = spread
        elif channel_sources is not None and name.startswith("blocks.") and ".attn.qkv." in name:
            q, k, v = rearrange(weights, "(three h d) ... -> three h d ...", three=3, h=heads)
            q, k = q[:, channel_sources], k[:, channel_sources]  # v keeps its channels
            weights = rearrange([q, k, v], "three h d ... -> (three h d) ...")
            report[name] = "rotary channels matched"
        elif channel_sources is not None and (".attn.q_norm." in name or ".attn.k_norm." in name):
            weights = weights[channel_sources]
            report[name] = "rotary channels matched"
        else:
            report[name] = "copied"
        if weights.shape != target.shape:  # a DiT change this function does not know about
            raise ValueError(f"cannot inflate {name}: image shape {tuple(weights.shape)}, video {tuple(target.shape)}")
        target.copy_(weights)
    return report


@torch.no_grad()
def initialize_from(source: DiT, target: DiT) -> dict[str, str]:
    """Overwrites target's weights with source's: inflated from an image to a video DiT,
    copied between two DiTs of one kind and shape, or grown in depth.

    Growth: a target with more blocks than the source (same width and heads) takes the
    source's blocks as its first ones and keeps its own extra blocks as initialised. DiT's
    adaLN-Zero makes a fresh block the identity, so the grown model starts out computing
    exactly what the source does, and training adds what the extra depth can give.

    Returns what was done per parameter: "copied", "new block (identity at start)", or
    inflation's entries.
    """
    if not isinstance(source, DiT) or not isinstance(target, DiT):
        raise TypeError(
            f"source and target must be DiT models, got {type(source).__name__} and {type(target).__name__}"
        )
    if (source.n_axes, target.n_axes) == (2, 3):
        return inflate_from_image(source, target)
    if source.n_axes != target.n_axes:
        raise ValueError("a video DiT cannot initialise an image DiT (only image -> video inflation is defined)")
    source_depth, target_depth = source.config.depth, target.config.depth
    if target_depth < source_depth:
        raise ValueError(f"cannot initialise a DiT of depth {target_depth} from a deeper one ({source_depth} blocks)")
    weights, report = source.state_dict(), {}
    for name, tensor in target.state_dict().items():
        block = int(name.split(".")[1]) if name.startswith("blocks.") else None
        if block is not None and block >= source_depth:
            report[name] = "new block (identity at start)"
            continue
        if name not in weights or weights[name].shape != tensor.shape:
            found = tuple(weights[name].shape) if name in weights else "missing"
            raise ValueError(f"cannot copy {name}: source {found}, target {tuple(tensor.shape)}")
        tensor.copy_(weights[name])
        report[name] = "copied"
    return report


__all__ = ["inflate_from_image", "initialize_from", "rotary_pair_sources"]
