"""SEGA's cost per step: what the rope work of one Flux step takes with sega, against the untouched FluxPosEmbed.

    python benchmarks/sega_step.py --threads 1 --repeats 21 --markdown docs/performance.md

SEGA plans every step from that step's latent, so each step pays, besides the family's own table: the
spectrum of the whole latent (its mean over channels, then the FFTs of the token map), a plan, and a new
table (no step reuses one). Cases: Flux's rope settings (axes (16, 56, 56), theta 10000, 512 text ids,
trained grid 64 x 64 tokens) at 2x and 4x the trained side (2048^2 and 4096^2 px), the packed latent
(1, tokens, 64) in float32. Columns, median milliseconds per step after warm-up, variants in a rotating
order: `own` (FluxPosEmbed), `sega` (the spectrum and the replacement's table, as the forward pre-hook and
the rope do in a step) and `spectrum` (the spectrum alone). The attention itself, which dwarfs both at these
sizes, is the same with and without sega and is not timed.
"""

from __future__ import annotations

import argparse
import os

import torch
from diffusers_tables import flux_ids, median_ms, rope_flux
from reporting import cpu_model

from axialrope.models import apply_extrapolation
from axialrope.models.call_plan import pop_call, push_call
from axialrope.models.integrations.ropes.base import CallState

SIZES = {"2x": 2048, "4x": 4096}  # px at 16 px per token; Flux's trained grid is 64 x 64 tokens


def one_size(handle, own, size: int, device: str, repeats: int) -> dict[str, float]:
    """Median ms of `own`, a sega step and the spectrum alone at `size` px (a new latent every call)."""
    rope, family = handle.rope, handle.family
    text, image = (t.to(device) for t in flux_ids(size))
    ids = torch.cat([text, image])
    latent = torch.randn(1, image.shape[0], 64, device=device)
    step = [0]

    def new_latent():
        step[0] += 1
        latent[0, step[0] % latent.shape[1]] += 1.0  # a new latent each step, as sampling has
        return latent

    def sega_step():
        state = CallState(family.time, 0.5, {"text": text, "image": image, "reference": None}, new_latent())
        push_call(rope, state)
        try:
            return rope(ids)
        finally:
            pop_call(rope)

    def spectrum():
        return handle.extrapolation.spectrum(new_latent(), (size // 16, size // 16))

    return median_ms({"own": lambda: own(ids), "sega": sega_step, "spectrum": spectrum}, repeats)


def rows(device: str, repeats: int) -> list[dict]:
    model = rope_flux(device)
    own = model.pos_embed
    handle = apply_extrapolation(model, "sega")
    out = []
    for label, size in SIZES.items():
        times = one_size(handle, own, size, device, repeats)
        out.append({"case": f"Flux {size}^2 px ({label})", "tokens": (size // 16) ** 2, **times})
    handle.remove()
    return out


def markdown(table: list[dict], device: str) -> str:
    lines = [
        f"SEGA's rope work per step, median ms ({device}, {cpu_model() if device == 'cpu' else device}, "
        f"{torch.get_num_threads()} threads; `python benchmarks/sega_step.py`):",
        "",
        "| case | image tokens | own | sega | of which the spectrum | sega / own |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in table:
        lines.append(
            f"| {row['case']} | {row['tokens']} | {row['own']:.1f} | {row['sega']:.1f} | {row['spectrum']:.1f} | "
            f"{row['sega'] / row['own']:.1f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--markdown", default=None, help="print the table for this file")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    with torch.inference_mode():
        table = rows(args.device, args.repeats)
    print(markdown(table, args.device))


if __name__ == "__main__":
    main()
