"""A tour of 3D axial RoPE on a 16x32x32 video token grid, head dim 64 split (16, 24, 24).

Builds the table, rotates random queries and keys, checks that the attention logits
depend only on relative offsets, and plots the positional kernel of each axis and of
the (y, x) plane, plain and with per-axis YaRN at twice the trained size.

    python examples/rope_tour.py [--out outputs/rope_tour.png]
"""

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from axialrope import AxialRotaryEmbedding, apply_rotary, grid_coords  # noqa: E402

AXES = ("t", "y", "x")
AXES_DIMS = (16, 24, 24)
GRID = (16, 32, 32)


def positional_kernel(rope: AxialRotaryEmbedding, offsets: torch.Tensor) -> torch.Tensor:
    """Logit between two all-ones heads at relative offsets (n, 3): sum over pairs of cos(angle), (n,)."""
    cos, sin = rope(offsets)
    ones = torch.ones(1, offsets.shape[0], 2 * cos.shape[-1])
    return (apply_rotary(ones, cos, sin) * ones).sum(-1)[0] / ones.shape[-1]


def axis_offsets(axis: int, span: int) -> torch.Tensor:
    offsets = torch.zeros(2 * span + 1, 3, dtype=torch.float64)
    offsets[:, axis] = torch.arange(-span, span + 1)
    return offsets


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="outputs/rope_tour.png", help="where to write the plot (PNG)")
    args = parser.parse_args()

    rope = AxialRotaryEmbedding(AXES_DIMS, theta=10000.0, head_dim=64)
    start = time.perf_counter()
    cos, sin = rope.for_grid(*GRID)
    built = time.perf_counter() - start
    print(
        f"grid {GRID} (t, y, x) -> {cos.shape[0]} tokens; table cos/sin {tuple(cos.shape)} "
        f"{cos.dtype}, built in {built * 1e3:.1f} ms; cached: {rope.for_grid(*GRID)[0] is cos}"
    )

    torch.manual_seed(0)
    q, k = torch.randn(2, 1, 4, cos.shape[0], 64).unbind(0)  # (batch, heads, tokens, head_dim)
    coords = grid_coords(*GRID)
    for axis, name in enumerate(AXES):
        shift = torch.zeros(3, dtype=torch.float64)
        shift[axis] = 1000.5
        logits = [(apply_rotary(q, *rope(c)) * apply_rotary(k, *rope(c))).sum(-1) for c in (coords, coords + shift)]
        print(
            f"shift every token by {shift[axis]:.1f} along {name}: max logit change "
            f"{(logits[1] - logits[0]).abs().max():.2e} (of logits up to {logits[0].abs().max():.1f})"
        )

    trained = {"t": 16, "y": 32, "x": 32}
    yarn = [{"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": trained[a]} for a in AXES]
    scaled = AxialRotaryEmbedding(AXES_DIMS, theta=10000.0, scaling=yarn)

    figure, panels = plt.subplots(1, 4, figsize=(17, 3.8))
    for axis, name in enumerate(AXES):
        span = 2 * GRID[axis]
        offsets = axis_offsets(axis, span)
        for module, label in ((rope, "trained"), (scaled, "YaRN x2 per axis")):
            panels[axis].plot(offsets[:, axis], positional_kernel(module, offsets), label=label)
        panels[axis].axvspan(-GRID[axis], GRID[axis], color="0.92", label="trained range")
        panels[axis].set(title=f"axis {name} ({AXES_DIMS[axis]} channels)", xlabel=f"offset along {name}")
    panels[0].set_ylabel("logit(all-ones q, k) / head_dim")
    panels[0].legend(fontsize=8)
    plane = grid_coords(65, 65, offset=-32)  # (y, x) offsets at t offset 0
    plane = torch.cat((torch.zeros(plane.shape[0], 1, dtype=plane.dtype), plane), dim=1)
    image = panels[3].imshow(positional_kernel(rope, plane).reshape(65, 65), extent=(-32, 32, 32, -32), cmap="magma")
    panels[3].set(title="(y, x) kernel at t offset 0", xlabel="x offset", ylabel="y offset")
    figure.colorbar(image, ax=panels[3])
    figure.suptitle("Positional kernel of 3D axial RoPE, head dim 64 = (16, 24, 24), theta 1e4")
    figure.tight_layout()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
