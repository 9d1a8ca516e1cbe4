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
    for where, axes, g in (
        (image, per_axis, gain),
        (text, trained_axes if authors_qwen else per_axis, 1.0 if authors_qwen else gain),
    ):
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


def anyflow_reference(family, model, inputs, grid, trained, method, timestep, authors, compressed=None, twice=False):
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
        cos, sin = interleaved(
            [positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)], [g * gain for _, g in per_axis]
        )
        return torch.complex(cos[:, ::2], sin[:, ::2])

    chunks = inputs.get("chunk_partition")
    if compressed is None:
        limit = config.get("full_chunk_limit")
        compressed = sum(chunks[: len(chunks) - limit]) if chunks is not None and len(chunks) > limit else 0
    full = table([np.arange(n, dtype=float) for n in grid])[compressed * grid[1] * grid[2] :]
    parts = [full, full] if twice else [full]
    if compressed:
        cells = [c // p for c, p in zip(config.compressed_patch_size, config.patch_size, strict=True)]
        sizes = [
            compressed,
            *(
                n * p // c
                for n, p, c in zip(grid[1:], config.patch_size[1:], config.compressed_patch_size[1:], strict=True)
            ),
        ]
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
    """The reference function of a rope kind (by its class name), its tables as a tuple of tensors (one
    tensor as a 1-tuple), the form in which the harness captures a rope's output."""
    reference = REFERENCES[type(kind).__name__]

    def tables(*args) -> tuple:
        out = reference(*args)
        return (out,) if torch.is_tensor(out) else tuple(out)

    return tables


REFERENCES = {
    "IdsKind": ids_reference,
    "QwenKind": qwen_reference,
    "LatentGridKind": grid_reference,
    "PipelineTablesKind": grid_reference,  # every axis beyond its trained length: token-index positions
    "LTXKind": ltx_reference,
    "FrameIndicesKind": framepack_reference,
    "AnyFlowKind": anyflow_reference,
}


def mochi_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """MochiRoPE's (seq, heads, pairs) cos, sin: angles t f_t + y f_y + x f_x with the learned frequencies;
    t = 0 .. n - 1 divided by PI's s (kappa-PI: s^(t^2)); y, x the centres of equal cells spanning an area
    of 192 x 192, centred on 0."""
    t = family.time.to_t(timestep)
    s = max(1.0, grid[0] / trained[0])
    factor = {"none": 1.0, "pi": s, "kappa-pi": s ** (t * t)}[method]
    p = model.config.patch_size
    h, w = (n // p for n in inputs["hidden_states"].shape[-2:])
    scale = math.sqrt(192 * 192 / (h * w))

    def centres(n):
        edges = np.linspace(-n * scale / 2, n * scale / 2, n + 1)
        return (edges[:-1] + edges[1:]) / 2

    axes = [np.arange(grid[0]) / factor, centres(h), centres(w)]
    positions = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    angles = np.einsum("na,ahf->nhf", positions, model.pos_frequencies.detach().double().numpy())
    return torch.from_numpy(np.cos(angles)).float(), torch.from_numpy(np.sin(angles)).float()


REFERENCES["MochiKind"] = mochi_reference


def cosmos_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """CosmosRotaryPosEmbed's (seq, head_dim) cos, sin: y, x with head_dim // 6 * 2 channels each, t the rest,
    axis a's theta 10000 r_a^(d_a / (d_a - 2)) (r: rope_scale); time at index * 24 / fps; the half of pairs
    (t, y, x) repeated whole; each axis's method over its trained length in those units."""
    t = family.time.to_t(timestep)
    config = model.config
    head_dim = config.attention_head_dim
    spatial = head_dim // 6 * 2
    dims = (head_dim - 2 * spatial, spatial, spatial)
    thetas = [10000.0 * r ** (d / (d - 2)) for r, d in zip(config.rope_scale, dims, strict=True)]
    fps = inputs.get("fps")
    spacing = (1.0 if fps is None else 24 / fps, 1.0, 1.0)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    positions = grid_indices(grid) * np.array(spacing)
    cos, sin = [], []
    for a in range(3):
        freqs, g = axis_frequencies(
            method, dims[a], thetas[a], grid[a] / trained[a], trained[a] * spacing[a], t, authors
        )
        angles = positions[:, a, None] * freqs
        cos.append(np.cos(angles) * g * gain)
        sin.append(np.sin(angles) * g * gain)
    cos, sin = np.concatenate(cos, -1), np.concatenate(sin, -1)
    return (
        torch.from_numpy(np.concatenate([cos, cos], -1)).float(),
        torch.from_numpy(np.concatenate([sin, sin], -1)).float(),
    )


REFERENCES["CosmosKind"] = cosmos_reference


def helios_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """HeliosRotaryPosEmbed's (b, 2 sum(dims), frames, h, w) at the chunk's frame indices: the cos channels of
    t, y, x then their sin channels, each pair twice; times as given, kept as trained; y, x 0 .. n - 1 by the
    method."""
    t = family.time.to_t(timestep)
    times = inputs["indices_hidden_states"][0].double().numpy()
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    positions = np.stack(np.meshgrid(times, *[np.arange(n, dtype=float) for n in grid], indexing="ij"), -1)
    cos, sin = interleaved(
        [positions.reshape(-1, 3)[:, a, None] * f for a, (f, _) in enumerate(per_axis)], [g * gain for _, g in per_axis]
    )
    shape = dict(n=len(times), h=grid[0], w=grid[1])
    return (
        torch.cat(
            [rearrange(cos, "(n h w) d -> 1 d n h w", **shape), rearrange(sin, "(n h w) d -> 1 d n h w", **shape)],
            dim=1,
        ),
    )


REFERENCES["HeliosKind"] = helios_reference


def sana_wm_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """SanaWMRotaryPosEmbed's complex (1, 1, seq, pairs): a grid rope's angles, 0 .. n - 1 per axis, row-major."""
    cos, sin = grid_reference(family, model, inputs, grid, trained, method, timestep, authors)
    return (torch.complex(cos[:, ::2], sin[:, ::2])[None, None],)


REFERENCES["SanaWMKind"] = sana_wm_reference


def joyimage_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """JoyImage Edit's (cos, sin) of its items x h x w grid (items kept as trained, y and x by the method), each
    pair twice, then with rope_type "mrope" the text's at the largest grid index + 1, + 2, ... on every axis, by
    the same per-axis frequencies."""
    t = family.time.to_t(timestep)
    items = inputs["hidden_states"].shape[1]
    sizes = (items, *grid)
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    gains = [g * math.sqrt(yarn_logit_scale(method, trained, grid, t)) for _, g in per_axis]
    positions = grid_indices(sizes)
    tables = interleaved([positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)], gains)
    if model.config.rope_type == "mrope":
        text = np.arange(inputs["encoder_hidden_states"].shape[1], dtype=float) + max(sizes)
        tables += interleaved([text[:, None] * f for f, _ in per_axis], gains)
    return tables


REFERENCES["JoyImageKind"] = joyimage_reference


def joyimage_range_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """JoyImage Edit Plus's (cos, sin) of the output, the first component (the rope's first call): positions
    0 .. n - 1 per axis, time kept as trained, y and x by the method, each pair twice."""
    t = family.time.to_t(timestep)
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    positions = grid_indices((1, *grid))
    angles = [positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)]
    return interleaved(angles, [g * gain for _, g in per_axis])


REFERENCES["JoyImageRangeKind"] = joyimage_range_reference


def ltx2_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """LTX-2's video table at the patches' midpoints m: angles omega_i (2 m_a / base_a - 1), pair (i, axis) ->
    3 i + axis, written through the core representation (base theta^(n / (n - 1)) at c = (pi / 2) theta
    (2 g - 1), core pair n - 1 - i); t, y and x by the method over their trained length in c units (a latent
    frame spans vae_t * patch_t / 24 s: the tiny inputs' fps); "interleaved" (1, seq, dim) each pair twice or
    "split" (1, heads, seq, dim / 2), pass-through channels first (cos the logit gain, sin 0)."""
    t = family.time.to_t(timestep)
    config = model.config
    dim = config.num_attention_heads * config.attention_head_dim
    n, theta = dim // 6, config.rope_theta
    core = theta ** (n / (n - 1))
    bases = np.array([config.pos_embed_max_pos, config.base_height, config.base_width], dtype=float)
    middle = inputs["video_coords"].double().mean(-1)[0].numpy()  # (3, seq)
    c = np.pi / 2 * theta * (2 * middle / bases[:, None] - 1)
    patches = (config.patch_size_t / 24.0, config.patch_size, config.patch_size)
    spacing = [np.pi * theta * config.vae_scale_factors[a] * patches[a] / bases[a] for a in range(3)]
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    per_axis = [
        axis_frequencies(method, 2 * n, core, grid[a] / trained[a], trained[a] * spacing[a], t, authors)
        for a in range(3)
    ]
    angles = np.stack([c[a] * per_axis[a][0][n - 1 - i] for i in range(n) for a in range(3)], -1)
    gains = np.array([per_axis[a][1] * gain for i in range(n) for a in range(3)])
    cos, sin = np.cos(angles) * gains, np.sin(angles) * gains
    split = config.rope_type == "split"
    if not split:
        cos, sin = cos.repeat(2, -1), sin.repeat(2, -1)
    pad = (dim // 2 if split else dim) - cos.shape[-1]
    cos = np.concatenate([np.full((cos.shape[0], pad), gain), cos], -1)
    sin = np.concatenate([np.zeros((sin.shape[0], pad)), sin], -1)
    cos, sin = torch.from_numpy(cos).float()[None], torch.from_numpy(sin).float()[None]
    if split:
        cos, sin = (rearrange(x, "b s (h d) -> b h s d", h=config.num_attention_heads) for x in (cos, sin))
    return cos, sin


REFERENCES["LTX2Kind"] = ltx2_reference


def fitted_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Positions fitted into an extent (`FittedKind`): the tiny trained grids fill the family's extent from 0,
    so axis a's positions are i * E_a / n_a at the trained grid (n_a trained tokens over E_a); beyond it
    i * E_a / n_a with the method at that spacing (its trained length E_a). The table in the family's
    layout ("interleaved": each pair twice; "halves": the half-width table twice), axis blocks in `columns`
    order."""
    t = family.time.to_t(timestep)
    kind = family.kind
    dims, theta = family.rope_axes.resolve(model.config)
    extents = FITTED_EXTENTS[family.name](model.config, trained)
    spacing = [e / n for e, n in zip(extents, trained, strict=True)]
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    freqs = [
        axis_frequencies(method, d, theta, n / tr, e, t, authors)
        for d, n, tr, e in zip(dims, grid, trained, extents, strict=True)
    ]
    positions = grid_indices(grid) * np.array(spacing)
    order = kind.columns or range(len(dims))
    angles = [positions[:, a, None] * freqs[a][0] for a in order]
    gains = [freqs[a][1] * gain for a in order]
    if kind.layout == "interleaved":
        return interleaved(angles, gains)
    cos = np.concatenate([np.cos(a) * g for a, g in zip(angles, gains, strict=True)], -1)
    sin = np.concatenate([np.sin(a) * g for a, g in zip(angles, gains, strict=True)], -1)
    return tuple(torch.from_numpy(np.concatenate([x, x], -1)).float() for x in (cos, sin))


# per family, the extent (position units) each axis of a tiny trained grid spans, from its pipeline or rope module
FITTED_EXTENTS = {
    "hunyuan-dit": lambda config, trained: (512 // 8 // config.patch_size,) * 2,
    "hunyuan-dit-controlnet": lambda config, trained: (512 // 8 // config.patch_size,) * 2,
    "easyanimate": lambda config, trained: (trained[0], 60 // config.patch_size, 90 // config.patch_size),
    "cogview4": lambda config, trained: tuple(config.rope_axes_dim),
    "glm-image": lambda config, trained: tuple(trained),
}
REFERENCES["FittedKind"] = fitted_reference


def lumina2_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Lumina2's outputs that are tensors: the patched latent (b, h w, p p c), and the caption's, image's and
    joint complex tables: caption j at (j, 0, 0), image (r, c) at (L, r, c), padding at (0, 0, 0) (zeros in the
    caption's table); the caption's table as trained, the others with the method and its gain."""
    t = family.time.to_t(timestep)
    p = model.config.patch_size
    patched = rearrange(inputs["hidden_states"], "b c (h p) (w q) -> b (h w) (p q c)", p=p, q=p)
    lengths = inputs["encoder_attention_mask"].sum(1).tolist()
    total, seq = max(lengths) + math.prod(grid), math.prod(grid)
    rows = grid_indices(grid)
    ids = np.zeros((len(lengths), total, 3))
    for i, n in enumerate(lengths):
        ids[i, :n, 0] = np.arange(n)
        ids[i, n : n + seq] = np.concatenate([np.full((seq, 1), n), rows], 1)

    def table(method, gain):
        per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
        angles = [ids[..., a, None] * f for a, (f, _) in enumerate(per_axis)]
        parts = [np.exp(1j * a) * g * gain for a, (_, g) in zip(angles, per_axis, strict=True)]
        return torch.from_numpy(np.concatenate(parts, -1))

    joint = table(method, math.sqrt(yarn_logit_scale(method, trained, grid, t)))
    caption = table("none", 1.0)[:, : inputs["encoder_hidden_states"].shape[1]].clone()
    for i, n in enumerate(lengths):
        caption[i, n:] = 0
    image = torch.stack([joint[i, n : n + seq] for i, n in enumerate(lengths)])
    return patched, caption, image, joint


REFERENCES["Lumina2Kind"] = lumina2_reference


def lumina_next_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Lumina-Next's complex (h, w, pairs) table: positions 0 .. n - 1 on y and x, pairs alternating y, x."""
    t = family.time.to_t(timestep)
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    (fy, gy), (fx, gx) = per_axis
    y = np.exp(1j * np.arange(grid[0])[:, None, None] * fy) * gy * gain
    x = np.exp(1j * np.arange(grid[1])[None, :, None] * fx) * gx * gain
    pairs = np.stack(np.broadcast_arrays(y, x), -1).reshape(grid[0], grid[1], -1)
    return torch.from_numpy(pairs).to(torch.complex64)  # one tensor


REFERENCES["LuminaNextKind"] = lumina_next_reference


def allegro_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Allegro's per-axis tables, positions i / s_a (the config's interpolation scales; a trained length of
    n_a / s_a), the half-width table twice, then the pipeline's rows of each token (row-major indices)."""
    t = family.time.to_t(timestep)
    dims, theta = family.rope_axes.resolve(model.config)
    scales = [model.config[f"interpolation_scale_{a}"] for a in ("t", "h", "w")]
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    out = []
    for dim, n, tr, s in zip(dims, grid, trained, scales, strict=True):
        freqs, g = axis_frequencies(method, dim, theta, n / tr, tr / s, t, authors)
        angles = np.arange(n)[:, None] / s * freqs
        out += [torch.from_numpy(np.concatenate([f(angles)] * 2, -1) * g * gain).float() for f in (np.cos, np.sin)]
    rows = grid_indices(grid).astype(np.int64).T[:, None, :]
    return (*out, *(torch.from_numpy(r) for r in rows))


REFERENCES["AllegroKind"] = allegro_reference


def ideogram4_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Ideogram 4's interleaved MRoPE: pair j of one list (head_dim, theta) rotates with y (j = 1 mod 3, j < 3
    section_y), x (j = 2 mod 3, j < 3 section_x) or t; an image token at O + d (O = 65536) takes O f_j + d f'_j,
    f' the method's list for the pair's axis (its length in y or x); text rows as trained; the gain on all."""
    t = family.time.to_t(timestep)
    config = model.config
    head_dim, theta, offset = config.attention_head_dim, float(config.rope_theta), 65536
    pairs = head_dim // 2
    axis = np.zeros(pairs, dtype=int)
    for a in (1, 2):
        axis[np.arange(a, 3 * config.mrope_section[a], 3)] = a
    base = base_freqs(head_dim, theta)
    scaled = [(base, 1.0)] + [
        axis_frequencies(method, head_dim, theta, n / tr, tr, t, authors) for n, tr in zip(grid, trained, strict=True)
    ]
    freqs = np.array([scaled[axis[j]][0][j] for j in range(pairs)])
    gains = np.array([scaled[axis[j]][1] for j in range(pairs)])
    ids = inputs["position_ids"].double().numpy()
    image = ids[..., :1] >= offset
    trained_angles = ids[..., axis] * base
    image_angles = offset * base + (ids[..., axis] - offset) * freqs
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    out = []
    for f in (np.cos, np.sin):
        table = np.where(image, f(image_angles) * gains, f(trained_angles)) * gain
        out.append(torch.from_numpy(np.concatenate([table, table], -1)).float())
    return tuple(out)


REFERENCES["InterleavedMRopeKind"] = ideogram4_reference

# -- ropes whose positions the transformer builds itself --------------------------------------------------


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
    t = family.time.to_t(timestep)
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
    t = family.time.to_t(timestep)
    per_axis = _per_axis(family, config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    cos, sin = interleaved([ids[:, a, None] * f for a, (f, _) in enumerate(per_axis)], [g * gain for _, g in per_axis])
    return torch.complex(cos[:, ::2], sin[:, ::2])


REFERENCES.update({"RopeEmbedderKind": rope_embedder_reference})


def qwen21_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Qwen-Image 2.1's complex64 (seq, pairs) table of a text-then-image sequence: text token j at (j, j, j),
    the image on frame TEXT (the text's length) with y and x centred; every token on y and x by the method."""
    text = inputs["encoder_hidden_states"].shape[1]
    t = family.time.to_t(timestep)
    per_axis = _per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    yx = grid_indices(grid) - np.array([grid[0] - grid[0] // 2, grid[1] - grid[1] // 2])
    where = np.concatenate(
        [
            np.repeat(np.arange(text, dtype=float)[:, None], 3, axis=1),
            np.pad(yx, ((0, 0), (1, 0)), constant_values=text),
        ]
    )
    cos, sin = interleaved(
        [where[:, a, None] * f for a, (f, _) in enumerate(per_axis)], [g * gain for _, g in per_axis]
    )
    return torch.complex(cos[:, ::2], sin[:, ::2])


REFERENCES.update({"Qwen21Kind": qwen21_reference})


def kandinsky_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Kandinsky's rotation matrices ((b,) t, h, w, 1, pairs, 2, 2): index i at i / scale_factor[a], each
    axis's trained length in those units (trained tokens / scale_factor[a]) for the methods counting rotations."""
    scale = inputs.get("scale_factor") or model.config["scale_factor"]
    dims, theta = family.rope_axes.resolve(model.config)
    t = family.time.to_t(timestep)
    per_axis = [
        axis_frequencies(method, dim, theta, n / tr, tr / s, t, authors)
        for dim, n, tr, s in zip(dims, grid, trained, scale, strict=True)
    ]
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    positions = grid_indices(grid) / np.array(scale, dtype=float)
    angles = [positions[:, a, None] * f for a, (f, _) in enumerate(per_axis)]
    cos = np.concatenate([np.cos(x) * g * gain for x, (_, g) in zip(angles, per_axis, strict=True)], -1)
    sin = np.concatenate([np.sin(x) * g * gain for x, (_, g) in zip(angles, per_axis, strict=True)], -1)
    rope = torch.from_numpy(np.stack([cos, -sin, sin, cos], -1)).float().reshape(*grid, -1, 2, 2).unsqueeze(-4)
    return rope[None] if family.kind.with_shape else rope


REFERENCES.update({"KandinskyKind": kandinsky_reference})

# -- Cosmos 3's packed omni sequence ----------------------------------------------------------------------


def cosmos3_reference(family, model, inputs, grid, trained, method, timestep, authors):
    """Cosmos 3's interleaved MRoPE: pair j of one list (head_dim, theta) rotates with y (j = 1 mod 3, j < 3
    section_y), x (j = 2 mod 3, j < 3 section_x) or t; a generated row at o + d (o: each axis's least generated
    position) takes o f_j + d f'_j, f' the method's list for the pair's axis (its length in t, y or x); text rows
    as trained; the gain on all. One position unit per frame (the tiny inputs' 24 fps)."""
    t = family.time.to_t(timestep)
    config = model.config
    head_dim, theta, section = config.head_dim, float(config.rope_theta), config.rope_axes_dim
    pairs = head_dim // 2
    axis = np.zeros(pairs, dtype=int)
    for a in (1, 2):
        axis[np.arange(a, 3 * section[a], 3)] = a
    base = base_freqs(head_dim, theta)
    scaled = [
        axis_frequencies(method, head_dim, theta, n / tr, tr, t, authors) for n, tr in zip(grid, trained, strict=True)
    ]
    freqs = np.array([scaled[axis[j]][0][j] for j in range(pairs)])
    gains = np.array([scaled[axis[j]][1] for j in range(pairs)])
    ids = inputs["position_ids"].double().numpy().T  # (L, 3)
    text = inputs["und_len"]
    origin = ids[text:].min(0)
    generated = origin[axis] * base + (ids[text:, axis] - origin[axis]) * freqs
    gain = math.sqrt(yarn_logit_scale(method, trained, grid, t))
    out = []
    for f in (np.cos, np.sin):
        table = np.concatenate([f(ids[:text, axis] * base), f(generated) * gains]) * gain
        out.append(torch.from_numpy(np.concatenate([table, table], -1)).float()[None])
    return tuple(out)


REFERENCES["Cosmos3Kind"] = cosmos3_reference
