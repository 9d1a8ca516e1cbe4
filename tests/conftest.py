"""Reference formulas of the extrapolation methods' authors, written out independently (shared fixtures).

Read for the formula only from: guyyariv/DyPE flux/transformer_flux.py (get_1d_rotary_pos_embed's
yarn/dype branch and FluxPosEmbed's ntk branch) and thu-ml/RIFLEx riflex_utils.py
(get_1d_rotary_pos_embed_riflex and identify_k).
"""

import math
import types

import numpy as np
import pytest


def dype_yarn(dim, theta, scale, trained, t):
    """Per pair: Dy-YaRN's inverse frequency (float64) and the cos/sin gain, as DyPE's Flux code has it."""
    kappa = t**2
    i = np.arange(0, dim, 2) / dim
    base = theta**-i
    linear = base / scale
    ntk = (theta * scale ** (dim / (dim - 2))) ** -i

    def edge(rotations):  # fractional pair index where r_i = rotations
        return dim * math.log(trained / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    def mask(fast, slow):  # their band edges: floor/ceil, then clamped twice
        low = max(np.floor(edge(fast * kappa)), 0)
        high = min(np.ceil(edge(slow * kappa)), dim - 1, dim // 2)
        if low == high:
            high += 0.001
        return np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)

    ramp = mask(1.25, 0.75)
    freqs = linear * ramp + ntk * (1 - ramp)
    ramp = mask(16, 2)
    freqs = freqs * ramp + base * (1 - ramp)
    return freqs, 0.1 * math.log(scale) + 1


def dype_ntk(dim, theta, scale, t):
    """Dy-NTK's inverse frequencies: the base times (s^(d/(d-2)))^(2 t^2)."""
    return (theta * (scale ** (dim / (dim - 2))) ** (2 * t**2)) ** -(np.arange(0, dim, 2) / dim)


def riflex(dim, theta, k, length):
    """RIFLEx's temporal frequencies: pair k (1-based) set to 0.9 * 2 pi / L_test."""
    freqs = theta ** -(np.arange(0, dim, 2) / dim)
    freqs[k - 1] = 0.9 * 2 * math.pi / length
    return freqs


def identify_k(theta, dim, repetition):
    """RIFLEx's identify_k: the 1-based pair whose rounded period is closest to the repetition frame, and N_k."""
    periods = [round(2 * math.pi * theta ** (2 * (j - 1) / dim)) for j in range(1, dim // 2 + 1)]
    k = int(np.argmin([abs(p - repetition) for p in periods])) + 1
    return k, periods[k - 1]


@pytest.fixture
def authors():
    """The authors' formulas: dype_yarn, dype_ntk, riflex, identify_k."""
    return types.SimpleNamespace(dype_yarn=dype_yarn, dype_ntk=dype_ntk, riflex=riflex, identify_k=identify_k)


# -- tiny diffusers pipelines (Flux, Wan) with random weights, saved to a folder ----------------------------------

TINY_WORDS = ["a", "red", "cube", "on", "blue", "sky", "cat", "wave"]


def _tokenizers(folder):
    """A CLIP BPE tokenizer and a T5 (Unigram) tokenizer from vocabulary files written here, no downloads."""
    import json
    import string

    from transformers import CLIPTokenizer, T5Tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    clip_vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for suffix in ("", "</w>"):  # each letter inside a word and at its end; no merges
        clip_vocab.update({c + suffix: len(clip_vocab) for c in string.ascii_lowercase})
    (folder / "vocab.json").write_text(json.dumps(clip_vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    clip = CLIPTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"), model_max_length=16)
    (folder / "t5_vocab.txt").write_text(
        "\n".join(["<pad>", "</s>", "<unk>"] + ["\u2581" + w for w in TINY_WORDS] + list(string.ascii_lowercase))
    )
    pieces = (folder / "t5_vocab.txt").read_text().split("\n")
    t5 = T5Tokenizer(vocab=[(p, 0.0 if i < 3 else -float(i)) for i, p in enumerate(pieces)], extra_ids=0)
    return clip, t5


def save_tiny_flux(folder):
    """FluxPipeline: CLIP + T5 text encoders, a 1-level VAE (16 px images are 8 x 8 tokens), 1 + 1 blocks."""
    import torch
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    clip_tokenizer, t5_tokenizer = _tokenizers(folder / "vocab")
    torch.manual_seed(0)
    clip = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(clip_tokenizer),
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=16,
            projection_dim=8,
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
        )
    )
    t5 = T5EncoderModel(T5Config(vocab_size=len(t5_tokenizer), d_model=8, d_ff=16, d_kv=4, num_layers=1, num_heads=2))
    vae = AutoencoderKL(
        sample_size=16,
        in_channels=3,
        out_channels=3,
        block_out_channels=(4,),
        layers_per_block=1,
        latent_channels=1,
        norm_num_groups=1,
        use_quant_conv=False,
        use_post_quant_conv=False,
        shift_factor=0.0609,
        scaling_factor=1.5035,
    )
    transformer = FluxTransformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=8,
        pooled_projection_dim=8,
        axes_dims_rope=(4, 6, 6),
    )
    # Flux's schedule shifts more with more tokens; its line ends at the (tiny) trained 8 x 8 = 64 tokens
    scheduler = FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True, base_image_seq_len=16, max_image_seq_len=64)
    FluxPipeline(
        scheduler=scheduler,
        vae=vae,
        text_encoder=clip,
        tokenizer=clip_tokenizer,
        text_encoder_2=t5,
        tokenizer_2=t5_tokenizer,
        transformer=transformer,
    ).save_pretrained(folder)
    return folder


def save_tiny_wan(folder):
    """WanPipeline: a UMT5 text encoder, Wan's VAE at base width 3 (8x space, 4x time), one block."""
    import torch
    from diffusers import AutoencoderKLWan, FlowMatchEulerDiscreteScheduler, WanPipeline, WanTransformer3DModel
    from transformers import UMT5Config, UMT5EncoderModel

    _, tokenizer = _tokenizers(folder / "vocab")
    torch.manual_seed(0)
    text_encoder = UMT5EncoderModel(
        UMT5Config(vocab_size=len(tokenizer), d_model=8, d_ff=16, d_kv=4, num_layers=1, num_heads=2)
    )
    vae = AutoencoderKLWan(
        base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
    )
    transformer = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=16,
        out_channels=16,
        text_dim=8,
        freq_dim=8,
        ffn_dim=8,
        num_layers=1,
        rope_max_seq_len=32,
    )
    WanPipeline(
        tokenizer=tokenizer,
        text_encoder=text_encoder,
        transformer=transformer,
        vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0),
    ).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_flux_folder(tmp_path_factory):
    """A saved tiny FluxPipeline; trained grid (8, 8) tokens = 16 x 16 px."""
    return save_tiny_flux(tmp_path_factory.mktemp("tiny-flux") / "pipeline")


@pytest.fixture(scope="session")
def tiny_wan_folder(tmp_path_factory):
    """A saved tiny WanPipeline; trained grid (2, 2, 2) tokens = 5 frames of 32 x 32 px."""
    return save_tiny_wan(tmp_path_factory.mktemp("tiny-wan") / "pipeline")


@pytest.fixture
def one_thread():
    """Tiny models: one torch thread is many times faster than two contending ones on a shared machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def run_triton_interpreted():
    """`run(code)`: runs a Python script with TRITON_INTERPRET=1 (Triton kernels on CPU tensors, no GPU
    needed) and asserts that it exits cleanly with "ok" as its last output."""
    import os
    import subprocess
    import sys

    def run(code: str) -> None:
        env = {**os.environ, "TRITON_INTERPRET": "1"}
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]

    return run


# -- SPA (HRDiT's spatial position alignment) as ComfyUI-DyPE's port has it -------------------------------------
# Read for the rules only from wildminder/ComfyUI-DyPE src/spa.py (the bundle map, the variants, the bundle size)
# and src/spa_attn.py (the attention outputs averaged); written out here in numpy, float64.


def spa_port_bundle(index, first, size):
    """The port's bundle map: 0 below the first bundle's end, then ceil((i + 1 - first) / size)."""
    index = np.asarray(index, dtype=np.int64)
    return np.where(index < first, 0, -((first - 1 - index) // size))  # -(-a // b) is ceil(a / b)


def spa_port_size(max_index, requested=0, trained_extent=64, largest_index=79, most_passes=15):
    """The port's one bundle size for both axes: none while the largest index is within the trained extent,
    else the least that keeps indices within `largest_index`, an explicit request raised to it, passes capped."""
    if requested == 1 or max_index <= trained_extent:
        return 1
    least = max(1, math.ceil(max_index / largest_index))
    size = least if requested <= 0 else max(requested, least)
    return min(size, (most_passes + 1) // 2)


def spa_port_variants(ids, requested=0, trained_extent=64, largest_index=79):
    """The port's variants of Flux-style ids (seq, 3) [index, row, column]: rows and columns bundled, the
    row boundary slid first, then the column's; a list of (seq, 3) float64 arrays."""
    ids = np.asarray(ids, dtype=np.float64)
    rows, cols = ids[:, 1].astype(np.int64), ids[:, 2].astype(np.int64)
    size = spa_port_size(int(max(rows.max(), cols.max())), requested, trained_extent, largest_index)
    if size == 1:
        return [ids.copy()]
    firsts = [(size, size)] + [(n, size) for n in range(1, size)] + [(size, m) for m in range(1, size)]
    out = []
    for first_row, first_col in firsts:
        variant = ids.copy()
        variant[:, 1] = spa_port_bundle(rows, first_row, size)
        variant[:, 2] = spa_port_bundle(cols, first_col, size)
        out.append(variant)
    return out


def spa_averaged_attention(q, k, v, angles, scale=None, layout="interleaved"):
    """Attention outputs averaged over variants, float64: q, k, v (..., seq, d); angles one (seq, d // 2)
    array per variant rotating pair j of q and k, channels (2j, 2j + 1) ("interleaved") or (j, j + d / 2)
    ("half"); softmax(q k^T * scale) v per variant, then the mean over variants."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale

    def rotate(x, theta):
        if layout == "half":
            a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        else:
            a, b = x[..., 0::2], x[..., 1::2]
        c, s = np.cos(theta), np.sin(theta)
        first, second = a * c - b * s, a * s + b * c
        if layout == "half":
            return np.concatenate([first, second], axis=-1)
        return np.stack([first, second], axis=-1).reshape(x.shape)

    outs = []
    for theta in angles:
        logits = rotate(q, theta) @ np.swapaxes(rotate(k, theta), -1, -2) * scale
        weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
        outs.append(weights / weights.sum(axis=-1, keepdims=True) @ v)
    return np.mean(outs, axis=0)


@pytest.fixture
def spa_port():
    """ComfyUI-DyPE's SPA rules: bundle, size, variants; and the averaged attention in float64."""
    return types.SimpleNamespace(
        bundle=spa_port_bundle,
        size=spa_port_size,
        variants=spa_port_variants,
        averaged_attention=spa_averaged_attention,
    )
