"""Each method's table written out in float64 from its formula, one function per rope kind.

`axis_frequencies` is each method's formula for one axis (the authors' own for DyPE, from
tests/conftest.py's `authors`); a rope kind's reference adds the family's positions and table
format. A family of a covered kind needs nothing here; a new rope kind adds its function to
`REFERENCES`. Loaded by conftest.py (tests are not a package).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from einops import rearrange

from axialrope import RopeScaling, rope_frequencies


def base_freqs(dim, theta):
    return theta ** -(np.arange(0, dim, 2) / dim)


def axis_frequencies(method, dim, theta, s, trained, t, authors):
    """One axis's (inverse frequencies per position unit, cos/sin gain) under `method`, from its formula."""
    if s <= 1 or method == "none":
        return base_freqs(dim, theta), 1.0
    if method.startswith("kappa-"):  # this project's variant: the static method at s^(t^2)
        return axis_frequencies(method.removeprefix("kappa-"), dim, theta, s ** (t * t), trained, t, authors)
    if method == "pi":
        return base_freqs(dim, theta) / s, 1.0
    if method == "ntk":
        return base_freqs(dim, theta * s ** (dim / (dim - 2))), 1.0
    if method == "dype-ntk":
        return authors.dype_ntk(dim, theta, s, t), 1.0
    if method == "dype-yarn":
        return authors.dype_yarn(dim, theta, s, trained, t)
    if method == "yarn":  # transformers' YaRN per axis (the core matches transformers in tests/core)
        scaling = RopeScaling("yarn", factor=s, original_max_position_embeddings=trained, attention_factor=1.0)
        return rope_frequencies(dim, theta, scaling)[0].numpy(), 1.0
    raise AssertionError(method)


def yarn_logit_scale(method, trained, grid, t):
    """VisionYaRN's temperature on the logits (from the token ratio), 1 for the other methods."""
    if method not in ("yarn", "kappa-yarn"):
        return 1.0
    power = t * t if method == "kappa-yarn" else 1
    ratio = math.prod(max(1.0, n / tr) ** power for n, tr in zip(grid, trained, strict=True))
    return (0.1 * math.log(ratio) + 1) ** 2


def interleaved(angles, gains):
    """Per-axis angles (seq, pairs_a) and gains -> cos, sin (seq, 2 * pairs), each pair's value twice."""
    cos = np.concatenate([np.cos(a) * g for a, g in zip(angles, gains, strict=True)], axis=-1).repeat(2, axis=-1)
    sin = np.concatenate([np.sin(a) * g for a, g in zip(angles, gains, strict=True)], axis=-1).repeat(2, axis=-1)
    return torch.from_numpy(cos).float(), torch.from_numpy(sin).float()


def grid_indices(grid):
    return np.stack(np.meshgrid(*[np.arange(n) for n in grid], indexing="ij"), -1).reshape(-1, len(grid)).astype(float)


def _per_axis(family, config, method, grid, trained, t, authors, spacing=1.0):
    """(frequencies, gain) per rope axis: reference axes as trained, the others by the method (their
    trained length in position units: trained tokens times the spacing of neighbouring tokens)."""
    dims, theta = family.rope_axes.resolve(config)
    planned = {axis: i for i, axis in enumerate(family.planned_axes)}
    out = []
    for axis, dim in enumerate(dims):
        if axis in planned:
            i = planned[axis]
            out.append(axis_frequencies(method, dim, theta, grid[i] / trained[i], trained[i] * spacing, t, authors))
        else:
            out.append((base_freqs(dim, theta), 1.0))
    return out


def rope_ids(kind, inputs) -> torch.Tensor:
    """The ids an ids-based rope is called with, in call order: cat(text ids, image ids), or each of the
    kind's separate calls' arguments (those given); 3D ids (1, seq, n_axes) as the transformer reads them."""
    names = kind.separate_calls or tuple(name for name in (kind.text_ids, kind.image_ids) if name)
    given = [inputs[name] for name in names if inputs.get(name) is not None]
    return torch.cat([ids[0] if ids.ndim == 3 else ids for ids in given])


def ids_reference(family, model, inputs, grid, trained, method, timestep, authors, positions=None):
    """FluxPosEmbed's format at the ids the rope is called with (`rope_ids`), or at `positions` (seq, n_axes)."""
    t = family.time.to_t(timestep)
    kind = family.kind
    positions = (rope_ids(kind, inputs) if positions is None else positions).double().numpy()
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors, kind.spacing)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    angles = [positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)]
    return interleaved(angles, [g * gain for _, g in per_axis])


def qwen_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """QwenEmbedRope's complex (image, text) tables: frame 0, centred y and x, text on the diagonal after
    the image; the dype-* methods as DyPE's Qwen code (text as trained, t = 1 - timestep / 1000)."""
    authors_qwen = method.startswith("dype-")
    t = min(max(1 - timestep / 1000, 0.0), 1.0) if authors_qwen else family.time.to_t(timestep)
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    trained_axes = _per_axis(family, model.config, "none", grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    yx = grid_indices(grid) - np.array([grid[0] - grid[0] // 2, grid[1] - grid[1] // 2])
    image = np.pad(yx, ((0, 0), (1, 0)))
    text = np.repeat((max(grid[0] // 2, grid[1] // 2) + np.arange(5.0))[:, None], 3, axis=1)
    tables = []
    for where, axes, g in ((image, per_axis, gain), (text, trained_axes if authors_qwen else per_axis,
                                                     1.0 if authors_qwen else gain)):
        cos, sin = interleaved([where[:, a, None] * f for a, (f, _) in enumerate(axes)], [x * g for _, x in axes])
        tables.append(torch.complex(cos[:, ::2], sin[:, ::2]))
    return tuple(tables)


def grid_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """A grid rope's format: positions 0 .. n - 1 per axis, row-major, in the kind's shape; ChronoEdit's
    two frames at times 0 and temporal_skip_len - 1, its time axis as long as that span."""
    t = family.time.to_t(timestep)
    axes = [np.arange(n, dtype=float) for n in grid]
    skip = getattr(family.kind, "temporal_skip", None)
    if skip is not None and grid[0] == 2:
        axes[0] = np.array([0.0, model.config[skip] - 1])
    lengths = tuple(int(a[-1]) + 1 for a in axes)
    per_axis = _per_axis(family, model.config, method, lengths, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, lengths, t))
    positions = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(grid))
    angles = [positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)]
    cos, sin = interleaved(angles, [g * gain for _, g in per_axis])
    shape = getattr(family.kind, "shape", "s d")
    return rearrange(cos, f"s d -> {shape}"), rearrange(sin, f"s d -> {shape}")


def framepack_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Framepack's rope at the first stream's frame indices (the frames being made): times as given,
    kept as trained; height and width 0 .. n - 1 by the method; (frames * h * w, dims), each pair twice."""
    t = family.time.to_t(timestep)
    times = inputs["indices_latents"].double().numpy()
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    positions = np.stack(np.meshgrid(times, *[np.arange(n, dtype=float) for n in grid], indexing="ij"), -1)
    positions = positions.reshape(-1, 3)
    angles = [positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)]
    return interleaved(angles, [g * gain for _, g in per_axis])


def anyflow_reference(family, model, inputs, grid, trained, method, timestep, authors, compressed=None,
                      twice=False):
    """AnyFlow's complex (1, 1, seq, pairs) query and key tables: the whole video's grid 0 .. n - 1; FAR's
    compressed context frames first, each token at the centre k j + (k - 1) / 2 of its cell of k tokens
    per axis (the normalised mean of the full grid's phasors over the cell), then the full frames (twice:
    the clean copy); the method's gain on all. compressed: the context's frames (None: the training
    path's rule on the inputs' chunk_partition)."""
    t = family.time.to_t(timestep)
    config = model.config
    per_axis = _per_axis(family, config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))

    def table(axes):
        positions = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
        cos, sin = interleaved([positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)],
                               [g * gain for _, g in per_axis])
        return torch.complex(cos[:, ::2], sin[:, ::2])

    chunks = inputs.get("chunk_partition")
    if compressed is None:
        limit = config.get("full_chunk_limit")
        compressed = sum(chunks[:len(chunks) - limit]) if chunks is not None and len(chunks) > limit else 0
    full = table([np.arange(n, dtype=float) for n in grid])[compressed * grid[1] * grid[2]:]
    parts = [full, full] if twice else [full]
    if compressed:
        cells = [c // p for c, p in zip(config.compressed_patch_size, config.patch_size, strict=True)]
        sizes = [compressed, *(n * p // c for n, p, c in zip(grid[1:], config.patch_size[1:],
                                                             config.compressed_patch_size[1:], strict=True))]
        parts.insert(0, table([np.arange(n) * k + (k - 1) / 2 for n, k in zip(sizes, cells, strict=True)]))
    whole = torch.cat(parts)[None, None]
    return whole, whole


def ltx_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """LTX-Video's own formula in float64, omega_i (2 g - 1), each axis's omega scaled in LTX's terms
    (pi, ntk, dype-ntk and their kappa- variants; the banded methods are checked through the core)."""
    t = family.time.to_t(timestep)
    config = model.config
    dim = config.num_attention_heads * config.attention_head_dim
    n, theta = dim // 6, 10000.0
    omega = np.pi / 2 * theta ** (np.arange(n) / (n - 1))  # LTX's order: lowest frequency first
    patches = (config.patch_size_t, config.patch_size, config.patch_size)
    scale = inputs["rope_interpolation_scale"]
    steps = [s * p / b for s, p, b in zip(scale, patches, family.kind.bases, strict=True)]
    angles = []
    for size, tr, step in zip(grid, trained, steps, strict=True):
        s = size / tr
        effective = s ** (t * t) if method.startswith("kappa-") else s
        base = method.removeprefix("kappa-")
        if base == "none" or effective <= 1:
            scaled = omega
        elif base == "pi":
            scaled = omega / effective
        elif base in ("ntk", "dype-ntk"):  # NTK: the fastest pair kept, the slowest divided by s, geometric between
            factor = effective ** (2 * t * t) if base == "dype-ntk" else effective
            scaled = omega * factor ** (-(n - 1 - np.arange(n)) / (n - 1))
        else:
            raise AssertionError(method)
        angles.append((2 * np.arange(size) * step - 1)[:, None] * scaled)
    per_token = [angles[a][grid_indices(grid)[:, a].astype(int)] for a in range(3)]  # (seq, n) per axis
    pairs = np.stack(per_token, axis=-1).reshape(len(per_token[0]), 3 * n)  # pair 3 i + axis
    pad = dim % 6
    cos = np.concatenate([np.full((pairs.shape[0], pad), 1.0), np.cos(pairs).repeat(2, -1)], -1)
    sin = np.concatenate([np.zeros((pairs.shape[0], pad)), np.sin(pairs).repeat(2, -1)], -1)
    return torch.from_numpy(cos).float()[None], torch.from_numpy(sin).float()[None]


LTX_CHECKED_METHODS = ("none", "pi", "ntk", "dype-ntk", "kappa-pi", "kappa-ntk")


def reference_for(kind) -> callable:
    """The reference function of a rope kind (by its class name)."""
    return REFERENCES[type(kind).__name__]


REFERENCES = {
    "IdsKind": ids_reference,
    "QwenKind": qwen_reference,
    "GridKind": grid_reference,
    "PipelineTablesKind": grid_reference,  # every axis beyond its trained length: token-index positions
    "LTXKind": ltx_reference,
    "FrameIndicesKind": framepack_reference,
    "AnyFlowKind": anyflow_reference,
}


# -- regA: ropes whose positions the transformer builds itself --------------------------------------------------


def captured_rope_ids(model, family, inputs, call=0):
    """The positions the model's own forward passes its rope (`family.rope_attr`) at its `call`-th call: ids
    (..., n_axes), a module or a plain object (Z-Image's RopeEmbedder) alike."""
    name, seen = family.rope_attr, []
    rope = getattr(model, name)

    def recording(ids, *args, **kwargs):
        seen.append(ids)
        return rope(ids, *args, **kwargs)

    hook = None
    if name in model._modules:
        hook = rope.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
    else:
        object.__setattr__(model, name, recording)
    try:
        with torch.no_grad():
            model(**inputs, return_dict=False)
    finally:
        if hook is not None:
            hook.remove()
        else:
            object.__setattr__(model, name, rope)
    return seen[call]


def _angles_and_gains(family, model, positions, grid, trained, method, timestep, authors):
    """Per-axis angles (seq, pairs_a) at positions (seq, n_axes) and each axis's gain (the method's gain and
    sqrt of its logit scale), t = timestep / the family's timestep at pure noise (the harness's convention)."""
    t = timestep / family.time.at_noise
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    return [positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)], [g * gain for _, g in per_axis]


def embed_nd_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """EmbedND's format at the ids the model gives its rope: rotation matrices (b, seq, pairs, 2, 2) with the
    heads axis inserted, or the angles (b, seq, 1, 2 pairs), each pair's angle twice (one tensor, as the rope's)."""
    ids = captured_rope_ids(model, family, inputs).double()
    flat = ids.reshape(-1, ids.shape[-1]).numpy()
    angles, gains = _angles_and_gains(family, model, flat, grid, trained, method, timestep, authors)
    if family.kind.table == "angles":
        table = torch.from_numpy(np.concatenate(angles, -1).repeat(2, axis=-1)).float()
        return table.reshape(*ids.shape[:-1], 1, -1)
    cos = np.concatenate([np.cos(a) * g for a, g in zip(angles, gains, strict=True)], -1)
    sin = np.concatenate([np.sin(a) * g for a, g in zip(angles, gains, strict=True)], -1)
    matrices = torch.from_numpy(np.stack([cos, -sin, sin, cos], -1)).float().reshape(*ids.shape[:-1], -1, 2, 2)
    return matrices.unsqueeze(family.kind.heads_axis)


REFERENCES.update({"EmbedNDKind": embed_nd_reference})


def rope_embedder_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """RopeEmbedder's complex64 (seq, pairs) table at the ids of the model's first rope call (the image's),
    dims and theta from the config (or the shared RopeEmbedder's numbers, `on_rope`)."""
    ids = captured_rope_ids(model, family, inputs).double().numpy()
    config = vars(getattr(model, family.rope_attr)) if family.rope_axes.on_rope else model.config
    t = timestep / family.time.at_noise
    per_axis = _per_axis(family, config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    cos, sin = interleaved([ids[:, a, None] * f for a, (f, _) in enumerate(per_axis)], [g * gain for _, g in per_axis])
    return torch.complex(cos[:, ::2], sin[:, ::2])


REFERENCES.update({"RopeEmbedderKind": rope_embedder_reference})


def qwen21_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Qwen-Image 2.1's complex64 (seq, pairs) table of a text-then-image sequence: text token j at (j, j, j),
    the image on frame TEXT (the text's length) with y and x centred; every token on y and x by the method."""
    text = inputs["encoder_hidden_states"].shape[1]
    t = timestep / family.time.at_noise
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    yx = grid_indices(grid) - np.array([grid[0] - grid[0] // 2, grid[1] - grid[1] // 2])
    where = np.concatenate([np.repeat(np.arange(text, dtype=float)[:, None], 3, axis=1),
                            np.pad(yx, ((0, 0), (1, 0)), constant_values=text)])
    cos, sin = interleaved([where[:, a, None] * f for a, (f, _) in enumerate(per_axis)],
                           [g * gain for _, g in per_axis])
    return torch.complex(cos[:, ::2], sin[:, ::2])


REFERENCES.update({"Qwen21Kind": qwen21_reference})


def kandinsky_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Kandinsky's rotation matrices ((b,) t, h, w, 1, pairs, 2, 2): index i at i / scale_factor[a], each
    axis's trained length in those units (trained tokens / scale_factor[a]) for the methods counting rotations."""
    scale = inputs.get("scale_factor") or model.config["scale_factor"]
    dims, theta = family.rope_axes.resolve(model.config)
    t = timestep / family.time.at_noise
    per_axis = [axis_frequencies(method, dim, theta, n / tr, tr / s, t, authors)
                for dim, n, tr, s in zip(dims, grid, trained, scale, strict=True)]
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    positions = grid_indices(grid) / np.array(scale, dtype=float)
    angles = [positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)]
    cos = np.concatenate([np.cos(x) * g * gain for x, (_, g) in zip(angles, per_axis, strict=True)], -1)
    sin = np.concatenate([np.sin(x) * g * gain for x, (_, g) in zip(angles, per_axis, strict=True)], -1)
    rope = torch.from_numpy(np.stack([cos, -sin, sin, cos], -1)).float().reshape(*grid, -1, 2, 2).unsqueeze(-4)
    return rope[None] if family.kind.with_shape else rope


REFERENCES.update({"KandinskyKind": kandinsky_reference})
