"""How much of a reference image's content each `reference` rule pastes into the output, on tiny edit models.

    python benchmarks/reference_rules.py --markdown docs/diffusers.md

A copied reference shows as locality: a change to one reference token changes mainly the output tokens at
its own position. So for a reference token r, the output (the transformer's prediction for the generated
image's tokens) is taken with and without a fixed random change of r's latent, and the measure is how much
of the change's energy (per output token p, e_p = |out_p(changed r) - out_p|^2 summed over channels) lands
on A(r), the output tokens where the rule puts r (the block of L_out / L_ref tokens per axis it covers under
"cover" and "untwist", the one token at its own ids under "keep"), against an even spread:

    concentration = mean over r of  (sum_{p in A(r)} e_p / sum_p e_p) / (|A(r)| / N)

N the output's tokens: 1 where the reference's influence is spread evenly, N / |A| for a paste.

Models: Flux Kontext (`FluxTransformer2DModel`) and Qwen-Image-Edit (`QwenImageTransformer2DModel`), one
block each (Kontext: one joint and one single-stream block), head dim 64 with rope axes (8, 28, 28) as
Flux's and Qwen's (16, 56, 56) halved, random weights (seed 0), trained grid 4 x 4 tokens, a 4 x 4
reference beside a 4 x 4 output (at the trained grid) or an 8 x 8 one (2x, under yarn). Two variants:
`random`, the weights as drawn, and `positional`, each attention's key projection (and key norm) set to its
query's and a shared offset added to every image latent, so that q.k holds a position-only term
sum_j |c_j|^2 cos(theta_j (m - n)): tokens attend to the tokens at their own position, the regime in which a
trained editor copies (arXiv 2602.05013, whose analysis this reproduces in miniature). A random model knows
no content, so what it can show is this locality and how each rule changes it, not a picture's look.
Times t (1 = noise): "untwist" scales the reference keys by its schedule at that t.
"""

from __future__ import annotations

import argparse
import os

import torch

from axialrope.models import apply_extrapolation

TRAINED = (4, 4)
REFERENCE = (4, 4)
TEXT = 4
OFFSET = 3.0  # the shared latent offset of the positional variant, against unit-variance noise
TIMES = (1.0, 0.5, 0.0)
RULES = ("cover", "keep", "untwist")


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def make_kontext():
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(0)
    return FluxTransformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=64,
        num_attention_heads=2,
        joint_attention_dim=8,
        pooled_projection_dim=8,
        axes_dims_rope=(8, 28, 28),
    ).eval()


def kontext_inputs(output, offset: torch.Tensor, t: float):
    """FluxKontextPipeline's layout: the output's ids (index 0) then the reference's (index 1)."""
    from diffusers import FluxKontextPipeline

    ids = [FluxKontextPipeline._prepare_latent_image_ids(1, *output, "cpu", torch.float32)]
    ids.append(FluxKontextPipeline._prepare_latent_image_ids(1, *REFERENCE, "cpu", torch.float32))
    ids[1][..., 0] = 1
    img_ids = torch.cat(ids)
    g = generator(1)
    return dict(
        hidden_states=torch.randn(1, len(img_ids), 4, generator=g) + offset,
        encoder_hidden_states=torch.randn(1, TEXT, 8, generator=g),
        pooled_projections=torch.randn(1, 8, generator=g),
        timestep=torch.tensor([t]),
        img_ids=img_ids,
        txt_ids=torch.zeros(TEXT, 3),
    )


def make_qwen_edit():
    from diffusers import QwenImageTransformer2DModel

    torch.manual_seed(0)
    return QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=4,
        num_layers=1,
        attention_head_dim=64,
        num_attention_heads=2,
        joint_attention_dim=16,
        axes_dims_rope=(8, 28, 28),
    ).eval()


def qwen_edit_inputs(output, offset: torch.Tensor, t: float):
    """QwenImageEditPipeline's layout: img_shapes [(1, output), (1, reference)], the latents in that order."""
    rows = output[0] * output[1] + REFERENCE[0] * REFERENCE[1]
    g = generator(1)
    return dict(
        hidden_states=torch.randn(1, rows, 16, generator=g) + offset,
        encoder_hidden_states=torch.randn(1, 5, 16, generator=g),
        encoder_hidden_states_mask=torch.ones(1, 5, dtype=torch.long),
        timestep=torch.tensor([t]),
        img_shapes=[[(1, *output), (1, *REFERENCE)]],
    )


MODELS = {"Flux Kontext": (make_kontext, kontext_inputs, 4), "Qwen-Image-Edit": (make_qwen_edit, qwen_edit_inputs, 16)}


def positional(model):
    """Each attention's key projection and key norm set to its query's (the image stream's): q.k then holds
    the position-only term that a shared latent offset brings."""
    with torch.no_grad():
        for module in model.modules():
            if hasattr(module, "processor") and getattr(module, "to_k", None) is not None:
                module.to_k.weight.copy_(module.to_q.weight)
                if module.to_k.bias is not None:
                    module.to_k.bias.copy_(module.to_q.bias)
                if getattr(module.norm_k, "weight", None) is not None:
                    module.norm_k.weight.copy_(module.norm_q.weight)
    return model


def aligned(model_name: str, rule: str, output, r: int) -> list[int]:
    """A(r): the output tokens (row-major indices) where `rule` puts reference token r: under "keep" the output
    token with its ids (Kontext's from 0, Qwen's centred on the middle), else the block it covers."""
    i, j = divmod(r, REFERENCE[1])
    if rule == "keep":
        if model_name == "Qwen-Image-Edit":  # centred ids: -(n - n // 2) .. n // 2 - 1 on each axis
            i += (output[0] - output[0] // 2) - (REFERENCE[0] - REFERENCE[0] // 2)
            j += (output[1] - output[1] // 2) - (REFERENCE[1] - REFERENCE[1] // 2)
        return [i * output[1] + j]
    fy, fx = output[0] // REFERENCE[0], output[1] // REFERENCE[1]
    return [y * output[1] + x for y in range(i * fy, (i + 1) * fy) for x in range(j * fx, (j + 1) * fx)]


def concentration(model, model_name: str, rule: str, inputs: dict, output) -> float:
    """The mean over reference tokens of the change's share on A(r), over |A(r)| / N (module docstring)."""
    n_output = output[0] * output[1]
    with torch.no_grad():
        base = model(**inputs, return_dict=False)[0][0, :n_output]
        change = torch.randn(inputs["hidden_states"].shape[-1], generator=generator(2))
        ratios = []
        for r in range(REFERENCE[0] * REFERENCE[1]):
            moved = dict(inputs, hidden_states=inputs["hidden_states"].clone())
            moved["hidden_states"][0, n_output + r] += change
            energy = (model(**moved, return_dict=False)[0][0, :n_output] - base).double().pow(2).sum(-1)
            where = aligned(model_name, rule, output, r)
            ratios.append(float(energy[where].sum() / energy.sum()) * n_output / len(where))
    return sum(ratios) / len(ratios)


def measure() -> list[dict]:
    rows = []
    for name, (make, make_inputs, channels) in MODELS.items():
        for variant in ("random", "positional"):
            model = make() if variant == "random" else positional(make())
            offset = torch.zeros(channels)
            if variant == "positional":
                offset = OFFSET * torch.randn(channels, generator=generator(3))
            for output, method in ((TRAINED, "none"), ((8, 8), "yarn")):
                for t in TIMES:
                    inputs = make_inputs(output, offset, t)
                    row = dict(model=name, variant=variant, output=output, method=method, t=t)
                    for rule in RULES:
                        with apply_extrapolation(model, method, trained_grid=TRAINED, reference=rule):
                            row[rule] = concentration(model, name, rule, inputs, output)
                    rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        "| model | weights | output (tokens) | method | t | cover | keep | untwist |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        size = "x".join(map(str, r["output"]))
        lines.append(
            f"| {r['model']} | {r['variant']} | {size} | {r['method']} | {r['t']:g} | "
            f"{r['cover']:.2f} | {r['keep']:.2f} | {r['untwist']:.2f} |"
        )
    return "\n".join(lines)


def write_markdown(path: str, text: str) -> None:
    """Replaces the table between the markers in `path` (the markers stay)."""
    begin, end = "<!-- reference_rules:begin -->", "<!-- reference_rules:end -->"
    with open(path) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        raise ValueError(f"{path} has no {begin} ... {end} markers")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--markdown", help="a markdown file whose reference_rules markers get the table")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    torch.set_num_threads(args.threads)
    text = table(measure())
    print(text)
    if args.markdown:
        write_markdown(args.markdown, text)


if __name__ == "__main__":
    main()
