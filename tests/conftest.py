"""Reference formulas of the extrapolation methods' authors, written out independently (shared fixtures).

Read for the formula only from: guyyariv/DyPE flux/transformer_flux.py (get_1d_rotary_pos_embed's
yarn/dype branch and FluxPosEmbed's ntk branch) and thu-ml/RIFLEx riflex_utils.py
(get_1d_rotary_pos_embed_riflex and identify_k). SEGA (`sega_port`): wildminder/ComfyUI-DyPE src/sega.py
(compute_base_mscale, compute_spectral_energy_profile, compute_axis_spectral_profiles, compute_dynamic_spread,
compute_sega_allocation) and src/sega_base.py (the NTK factor and the per-axis wiring), on packed tokens.
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


def _sega_grid_map(tokens, h, w):
    """Packed tokens (B, N, C): the first h * w tokens as an (h, w) map averaged over batch and channels, mean-free."""
    cells = tokens[:, : h * w].reshape(tokens.shape[0], h, w, tokens.shape[-1]).astype(np.float64)
    plane = cells.mean(axis=(0, 3))
    return plane - plane.mean()


def _sega_bin_mean(power, where, n_bins):
    sums = np.zeros(n_bins)
    counts = np.zeros(n_bins)
    np.add.at(sums, where, power)
    np.add.at(counts, where, 1.0)
    return sums / (counts + 1e-8)


def sega_axis_profiles(tokens, h, w, bins_h, bins_w):
    """The port's per-axis profiles: 1D power along each axis, averaged across the other, first n // 2 + 1 kept."""
    import torch

    plane = _sega_grid_map(tokens, h, w)
    out = []
    for axis, n, bins in ((0, h, bins_h), (1, w, bins_w)):
        power = (np.abs(np.fft.fft(plane, axis=axis)) ** 2).mean(axis=1 - axis)[: n // 2 + 1]
        # the port's bins come from a float32 torch.linspace (its rounding decides frequencies on bin edges)
        where = np.clip((torch.linspace(0.0, 1.0, len(power)) * bins).long().numpy(), 0, bins - 1)
        out.append(_sega_bin_mean(power, where, bins))
    return out


def sega_radial_profile(tokens, h, w, bins):
    """The port's isotropic profile: centred 2D power binned by normalised distance from (h / 2, w / 2)."""
    power = np.abs(np.fft.fftshift(np.fft.fft2(_sega_grid_map(tokens, h, w)))) ** 2
    yy, xx = np.meshgrid(np.arange(h) - h / 2.0, np.arange(w) - w / 2.0, indexing="ij")
    r = np.sqrt(yy**2 + xx**2)
    r = r / (r.max() + 1e-8)
    where = np.clip(np.floor(r * bins).astype(int), 0, bins - 1).ravel()
    return _sega_bin_mean(power.ravel(), where, bins)


def sega_spread(profile, low=0.0, high=1.0, exponent=1.5):
    """The port's dynamic spread from spectral flatness."""
    e = np.maximum(profile, 1e-8)
    flat = min(max(np.exp(np.log(e).mean()) / (e.mean() + 1e-8), 0.0), 1.0)
    return low + (high - low) * (1.0 - (1.0 - (1.0 - flat)) ** exponent)


def sega_base(target, trained, formula="power_res", coefficient=None):
    """The port's reference magnitude from the resolution ratio."""
    s = max(target / trained, 1.0)
    if formula == "power_res":
        return s ** (0.08 if coefficient is None else coefficient)
    return 1.0 + (0.1 if coefficient is None else coefficient) * math.log(s)


def sega_allocation(profile, freqs, base, spread, alpha=0.15, beta=1.5, floor=1.0):
    """The port's per-pair magnitude: log-period to bin, interpolated log energy, standardised, tanh, recentred."""
    freqs = np.asarray(freqs, dtype=np.float64)
    if spread <= 0 or alpha <= 0:
        return np.full(len(freqs), base)
    lp = np.log(2 * math.pi / np.maximum(freqs, 1e-8))
    span = lp.max() - lp.min()
    u = (lp - lp.min()) / span if span > 1e-6 else np.zeros_like(lp)
    n = len(profile)
    pos = (1.0 - u) * (n - 1)
    lo = np.clip(np.floor(pos).astype(int), 0, n - 1)
    hi = np.clip(lo + 1, 0, n - 1)
    frac = np.clip(pos - lo, 0.0, 1.0)
    log_e = np.log(np.maximum(profile, 1e-8))
    raw = log_e[lo] * (1 - frac) + log_e[hi] * frac
    z = (raw - raw.mean()) / max(raw.std(ddof=1), 1e-8)
    tilt = np.tanh(beta * z)
    return np.maximum(base * (1.0 - alpha * spread * (tilt - tilt.mean())), floor)


def sega_axis_table(dim, theta, scale_global, positions, profile, spread, target, trained):
    """The port's cos, sin (n, dim // 2) of one spatial axis: NTK base theta * s^(d/(d-2)), each pair times m_i."""
    ntk = scale_global ** (dim / (dim - 2)) if scale_global > 1 else 1.0
    freqs = (theta * ntk) ** -(np.arange(0, dim, 2) / dim)
    angles = np.outer(positions, freqs)
    gain = 1.0
    if ntk > 1:
        base = sega_base(target, trained)
        gain = base if spread <= 0 or base <= 1 + 1e-8 else sega_allocation(profile, freqs, base, spread)
    return np.cos(angles) * gain, np.sin(angles) * gain


@pytest.fixture
def sega_port():
    """ComfyUI-DyPE's SEGA port, written out in float64: axis_profiles, radial_profile, spread, base,
    allocation, axis_table."""
    return types.SimpleNamespace(
        axis_profiles=sega_axis_profiles,
        radial_profile=sega_radial_profile,
        spread=sega_spread,
        base=sega_base,
        allocation=sega_allocation,
        axis_table=sega_axis_table,
    )


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


def _byte_level_bpe(folder):
    """A Qwen2 tokenizer over single bytes (GPT-2's byte-to-character table, no merges), written here."""
    import json

    from transformers import Qwen2Tokenizer

    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    characters = [chr(b) for b in printable] + [chr(256 + n) for n in range(len(others))]
    vocab = {c: i for i, c in enumerate(sorted(characters))}
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return Qwen2Tokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))


def save_tiny_qwen_image(folder):
    """QwenImagePipeline: a one-layer Qwen2.5-VL text encoder, a 1-level Qwen-Image VAE (2x), 2 x 2 packing
    (16 px images are 4 x 4 tokens), one block."""
    import torch
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImagePipeline,
        QwenImageTransformer2DModel,
    )
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tokenizer = _byte_level_bpe(folder / "vocab")
    end = len(tokenizer) - 1
    torch.manual_seed(0)
    text = dict(
        hidden_size=16,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        vocab_size=len(tokenizer),
        max_position_embeddings=512,
        rope_scaling={"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
        bos_token_id=end,
        eos_token_id=end,
    )
    config = Qwen2_5_VLConfig(
        text_config=text,
        vision_config=dict(depth=1, hidden_size=16, intermediate_size=16, num_heads=2, out_hidden_size=16),
        vocab_size=len(tokenizer),
        hidden_size=16,
        bos_token_id=end,
        eos_token_id=end,
    )
    vae = AutoencoderKLQwenImage(
        base_dim=4,
        z_dim=4,
        dim_mult=[1, 1],
        num_res_blocks=1,
        temperal_downsample=[False],
        latents_mean=[0.0] * 4,
        latents_std=[1.0] * 4,
    )
    transformer = QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=4,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16,
        axes_dims_rope=(4, 6, 6),
    )
    QwenImagePipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=vae,
        text_encoder=Qwen2_5_VLForConditionalGeneration(config),
        tokenizer=tokenizer,
        transformer=transformer,
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


@pytest.fixture(scope="session")
def tiny_qwen_image_folder(tmp_path_factory):
    """A saved tiny QwenImagePipeline; trained grid (4, 4) tokens = 16 x 16 px."""
    return save_tiny_qwen_image(tmp_path_factory.mktemp("tiny-qwen-image") / "pipeline")


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
