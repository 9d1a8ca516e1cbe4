"""Model sizes as one-line factories (DiT's naming: width, depth, heads; the patch is an argument).

model = create_dit("S", sample_size=32, in_channels=3, num_classes=4)
model = create_dit("tiny", num_frames=8, temporal_patch_size=2)    # a video model
"""

from __future__ import annotations

from .model import DiT


def dit_tiny(**kwargs) -> DiT:  # for CPU tests
    return DiT(hidden_size=64, depth=2, num_heads=4, **kwargs)


def dit_mini(**kwargs) -> DiT:  # the bundled models (trained on a CPU: docs/training.md)
    return DiT(hidden_size=128, depth=4, num_heads=4, **kwargs)


# mini with twice the blocks (grown from mini: models.axial_dit.inflate.initialize_from)
def dit_mini_deep(**kwargs) -> DiT:
    return DiT(hidden_size=128, depth=8, num_heads=4, **kwargs)


def dit_s(**kwargs) -> DiT:
    return DiT(hidden_size=384, depth=12, num_heads=6, **kwargs)


def dit_b(**kwargs) -> DiT:
    return DiT(hidden_size=768, depth=12, num_heads=12, **kwargs)


def dit_xl(**kwargs) -> DiT:  # DiT-XL's shape (head_dim 72)
    return DiT(hidden_size=1152, depth=28, num_heads=16, **kwargs)


DIT_SIZES = {"tiny": dit_tiny, "mini": dit_mini, "mini-deep": dit_mini_deep, "S": dit_s, "B": dit_b, "XL": dit_xl}


def create_dit(size: str, **kwargs) -> DiT:
    """A DiT of a named size ("tiny", "mini", "mini-deep", "S", "B", "XL"); kwargs go to `DiT`
    (patch, channels, ...)."""
    if size not in DIT_SIZES:
        raise ValueError(f"unknown model size {size!r}; choose one of {sorted(DIT_SIZES)}")
    return DIT_SIZES[size](**kwargs)


__all__ = ["DIT_SIZES", "create_dit", "dit_b", "dit_mini", "dit_mini_deep", "dit_s", "dit_tiny", "dit_xl"]
