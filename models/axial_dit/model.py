"""One DiT for images (y, x) and video (t, y, x), with axial RoPE or absolute sin-cos positions."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.models.modeling_utils import ModelMixin
from diffusers.utils import BaseOutput
from einops import pack, unpack
from torch import nn

from axialrope.validation import is_int, is_real, positive_int

from ..call_plan import current
from .blocks import DiTBlock, FinalLayer
from .input_layers import LabelEmbedder, Patchify, TimestepEmbedder
from .position_encoding import GridRope, RopeConfig, sincos_pos_embed, split_axes

POSITION_ENCODINGS = ("rope", "sincos")


@dataclass
class DiTOutput(BaseOutput):
    """sample: the prediction, shaped like the input (b, c, h, w) or (b, c, t, h, w)."""

    sample: torch.Tensor


def check_frame_noise_correlation(value, is_video: bool) -> float:
    """ValueError unless `value` is a share in [0, 1), and 0 for an image model (it has no frames)."""
    if not is_real(value) or not 0 <= value < 1:
        raise ValueError(f"frame_noise_correlation must be a number in [0, 1), got {value!r}")
    if value and not is_video:
        raise ValueError(f"frame_noise_correlation={value} needs a video model (num_frames set); images have no frames")
    return float(value)


class DiT(ModelMixin, ConfigMixin):
    """A Diffusion Transformer for images or video (Peebles and Xie), diffusers-native.

    Args:
        in_channels, out_channels: channels of the input and output (default the same).
        sample_size, num_frames: trained size in pixels, an int or (height, width), and frames (None: images).
        patch_size, temporal_patch_size: patch p x p (images) or r x p x p (video).
        hidden_size, depth, num_heads, mlp_ratio, qk_norm: width, blocks, heads, MLP factor, q/k RMSNorm.
        num_classes: labels 0 .. num_classes - 1, id `num_classes` the null class of guidance; 0: unconditional.
        position_encoding: "rope" (axial RoPE on q and k) or "sincos" (absolute, added to the tokens).
        rope_theta, rope_axes_dims: RoPE base (one or per axis), rotary channels per axis of a head.
        interpolation_scale: sin-cos only, as diffusers' `PatchEmbed`.
        text_dim: width of optional text tokens (`encoder_hidden_states`), joined before the image tokens.
        frame_noise_correlation: video only, the noise prior it was trained with (`objectives.draw_noise`).

    forward(hidden_states, timestep, class_labels=None, encoder_hidden_states=None, return_dict=True) ->
    `DiTOutput`. `model.rope_config` (a `RopeConfig`) holds what sampling may change without touching weights;
    an extrapolation method plans it per forward (`extrapolation.DiTExtrapolation`).
    """

    _supports_gradient_checkpointing = True

    @register_to_config
    def __init__(
        self,
        in_channels: int = 4,
        out_channels: int | None = None,
        sample_size: int | tuple[int, int] = 32,
        num_frames: int | None = None,
        patch_size: int = 2,
        temporal_patch_size: int = 1,
        hidden_size: int = 384,
        depth: int = 12,
        num_heads: int = 6,
        mlp_ratio: float = 4.0,
        num_classes: int = 1000,
        qk_norm: bool = False,
        position_encoding: str = "rope",
        rope_theta: float | tuple[float, ...] = 10000.0,
        rope_axes_dims: tuple[int, ...] | None = None,
        interpolation_scale: float = 1.0,
        text_dim: int | None = None,
        frame_noise_correlation: float = 0.0,
    ):
        super().__init__()
        for name in ("in_channels", "patch_size", "temporal_patch_size", "hidden_size", "depth", "num_heads"):
            positive_int(locals()[name], name)
        self.out_channels = in_channels if out_channels is None else positive_int(out_channels, "out_channels")
        if position_encoding not in POSITION_ENCODINGS:
            raise ValueError(f"position_encoding must be one of {POSITION_ENCODINGS}, got {position_encoding!r}")
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size={hidden_size} must be divisible by num_heads={num_heads}")
        if not is_int(num_classes) or num_classes < 0:
            raise ValueError(f"num_classes must be a non-negative integer, got {num_classes!r}")
        height, width = (sample_size, sample_size) if isinstance(sample_size, int) else tuple(sample_size)
        sizes, patch = [height, width], [patch_size, patch_size]
        if num_frames is not None:
            sizes, patch = [num_frames, *sizes], [temporal_patch_size, *patch]
        for name, size, p in zip(self.axis_names(len(sizes)), sizes, patch, strict=True):
            if positive_int(size, f"sample size along {name}") % p:
                raise ValueError(f"trained size {size} along {name} is not divisible by the patch size {p}")
        self.base_grid = tuple(s // p for s, p in zip(sizes, patch, strict=True))  # trained token grid
        check_frame_noise_correlation(frame_noise_correlation, is_video=num_frames is not None)
        self.gradient_checkpointing = False

        self.patchify = Patchify(tuple(patch), in_channels, hidden_size)
        self.t_embedder = TimestepEmbedder(hidden_size)
        self.y_embedder = LabelEmbedder(num_classes, hidden_size) if num_classes else None
        self.text_embedder = nn.Linear(positive_int(text_dim, "text_dim"), hidden_size) if text_dim else None
        self.blocks = nn.ModuleList(DiTBlock(hidden_size, num_heads, mlp_ratio, qk_norm) for _ in range(depth))
        self.final_layer = FinalLayer(hidden_size, self.out_channels * math.prod(patch))

        head_dim = hidden_size // num_heads
        if position_encoding == "rope":
            axes_dims = tuple(rope_axes_dims) if rope_axes_dims is not None else split_axes(head_dim, self.n_axes)
            self.rope = GridRope(axes_dims, RopeConfig(theta=rope_theta), head_dim=head_dim)
            self.sincos_dims = None
        else:
            self.rope = None
            self.sincos_dims = split_axes(hidden_size, self.n_axes)
            self.rope_config = RopeConfig(theta=rope_theta)
        self.initialize_weights()

    # -- construction ----------------------------------------------------------------------

    def initialize_weights(self) -> None:
        """DiT's initialisation: xavier linears, small embeddings, zero adaLN and output."""

        def _basic_init(module):
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

        self.apply(_basic_init)
        nn.init.normal_(self.t_embedder.mlp[0].weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[2].weight, std=0.02)
        if self.y_embedder is not None:
            nn.init.normal_(self.y_embedder.table.weight, std=0.02)
        # adaLN-Zero: every gate starts at 0, so every block starts as the identity
        for block in self.blocks:
            nn.init.zeros_(block.adaLN_modulation[-1].weight)
            nn.init.zeros_(block.adaLN_modulation[-1].bias)
        nn.init.zeros_(self.final_layer.adaLN_modulation[-1].weight)
        nn.init.zeros_(self.final_layer.adaLN_modulation[-1].bias)
        nn.init.zeros_(self.final_layer.linear.weight)
        nn.init.zeros_(self.final_layer.linear.bias)

    # -- positions -------------------------------------------------------------------------

    @staticmethod
    def axis_names(n_axes: int) -> tuple[str, ...]:
        return ("frames", "height", "width")[-n_axes:]

    @property
    def n_axes(self) -> int:
        """2 for an image model (y, x), 3 for a video model (t, y, x)."""
        return len(self.base_grid)

    @property
    def null_class(self) -> int | None:
        """The class id meaning "no label" (None for an unconditional model)."""
        return None if self.y_embedder is None else self.y_embedder.null_class

    @property
    def rope_config(self) -> RopeConfig:
        """The RoPE settings of the forward under way: those its call plan derived (an extrapolation method
        planned for the call's grid and time, `extrapolation.DiTExtrapolation`), else the model's own
        (`own_rope_config`), which assigning `rope_config` replaces. A sin-cos model keeps only
        attention_scale from it."""
        return current(self, self.own_rope_config)

    @property
    def own_rope_config(self) -> RopeConfig:
        """The model's own RoPE settings, whatever call is under way (what assigning `rope_config` sets)."""
        return self._sincos_config if self.rope is None else self.rope.config

    @rope_config.setter
    def rope_config(self, config: RopeConfig) -> None:
        if self.rope is not None:
            self.rope.config = config
            return
        if not isinstance(config, RopeConfig):
            raise TypeError(f"rope_config must be a RopeConfig, got {type(config).__name__}")
        if config.scaling is not None or config.offset is not None or config.scale is not None:
            raise ValueError("a position_encoding='sincos' model uses only rope_config.attention_scale")
        self._sincos_config = config

    # -- forward ---------------------------------------------------------------------------

    def forward(
        self,
        hidden_states: torch.Tensor,
        timestep: torch.Tensor | float,
        class_labels: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        return_dict: bool = True,
    ) -> DiTOutput | tuple[torch.Tensor]:
        """Predicts noise / velocity for a batch.

        Args:
            hidden_states: (b, in_channels, h, w) for an image model, (b, in_channels, t, h, w)
                for a video model; h, w (and t) divisible by the patch, any grid size.
            timestep: a number or a (b,) tensor, on the diffusers scale (0 .. 1000).
            class_labels: (b,) integer ids in 0 .. num_classes (num_classes is the null
                class); None means the null class for all (unconditional).
            encoder_hidden_states: optional text tokens (b, n_text, text_dim).
            return_dict: False returns the tuple `(sample,)`, as diffusers models do.

        Returns:
            `DiTOutput` whose sample is (b, out_channels, ...) with the input's spatial shape.
        """
        self._check_input(hidden_states)
        config = self.rope_config  # this call's: read once, used by every block
        batch, device = hidden_states.shape[0], hidden_states.device
        x, grid = self.patchify(hidden_states)  # (b, seq, dim), grid (t, h, w) or (h, w)
        if self.rope is None:
            x = x + sincos_pos_embed(
                grid, self.base_grid, self.sincos_dims, self.config.interpolation_scale, device
            ).to(x.dtype)
        c = self.t_embedder(self._timesteps(timestep, batch, device))  # (b, dim)
        if self.y_embedder is not None:
            c = c + self.y_embedder(self._labels(class_labels, batch, device))
        elif class_labels is not None:
            raise ValueError("class_labels given, but this model is unconditional (num_classes=0)")

        num_text = 0
        if encoder_hidden_states is not None:
            text = self.text_embedder(self._check_text(encoder_hidden_states, batch))  # (b, n_text, dim)
            num_text = text.shape[1]
            x, packed = pack([text, x], "b * d")  # text first: (b, n_text + seq, dim)
        rope = None
        if self.rope is not None and config.bundle_size > 1:  # SPA: each block averages over the variants
            rope = self.rope.variant_tables(grid, num_text, device, config)
        elif self.rope is not None:
            rope = self.rope.table(grid, num_text, device, config)
        attention_scale = config.attention_scale

        for block in self.blocks:
            if torch.is_grad_enabled() and self.gradient_checkpointing:
                x = self._gradient_checkpointing_func(block, x, c, rope, attention_scale)
            else:
                x = block(x, c, rope, attention_scale)

        if num_text:
            _, x = unpack(x, packed, "b * d")  # drop the text tokens
        sample = self.patchify.unpatchify(self.final_layer(x, c), grid, self.out_channels)
        return DiTOutput(sample=sample) if return_dict else (sample,)

    # -- input checks ----------------------------------------------------------------------

    def token_grid(self, hidden_states: torch.Tensor) -> tuple[int, ...]:
        """The token grid of an input (b, c, h, w) or (b, c, t, h, w): (h, w) or (t, h, w) divided by the
        patch; the input is checked as `forward` checks it."""
        self._check_input(hidden_states)
        return tuple(s // p for s, p in zip(hidden_states.shape[2:], self.patchify.patch, strict=True))

    def _check_input(self, hidden_states) -> None:
        if not isinstance(hidden_states, torch.Tensor):
            raise TypeError(f"hidden_states must be a torch.Tensor, got {type(hidden_states).__name__}")
        kind = "(b, c, t, h, w) for this video model" if self.n_axes == 3 else "(b, c, h, w) for this image model"
        if hidden_states.ndim != 2 + self.n_axes:
            raise ValueError(
                f"hidden_states must be {kind} ({self.n_axes} grid axes), got shape {tuple(hidden_states.shape)}"
            )
        if hidden_states.shape[1] != self.config.in_channels:
            raise ValueError(
                f"hidden_states has {hidden_states.shape[1]} channels, the model expects "
                f"in_channels={self.config.in_channels}"
            )
        sizes = hidden_states.shape[2:]
        for name, size, p in zip(self.axis_names(self.n_axes), sizes, self.patchify.patch, strict=True):
            if size % p:
                raise ValueError(f"hidden_states {name} {size} is not divisible by the patch size {p} along it")

    def _timesteps(self, timestep, batch: int, device) -> torch.Tensor:
        if is_real(timestep):
            if not math.isfinite(timestep):
                raise ValueError(f"timestep must be finite, got {timestep}")
            timestep = torch.tensor(float(timestep), device=device)
        if not isinstance(timestep, torch.Tensor):
            raise TypeError(f"timestep must be a number or a tensor, got {type(timestep).__name__}")
        if timestep.is_complex() or timestep.dtype == torch.bool:
            raise TypeError(f"timestep must be a real tensor, got dtype {timestep.dtype}")
        # a NaN timestep makes every output NaN; a data-dependent check, skipped while torch.compile traces
        if not torch.compiler.is_compiling() and timestep.is_floating_point() and not torch.isfinite(timestep).all():
            raise ValueError("timestep must be finite; found NaN or inf")
        if timestep.ndim == 0:
            return timestep.to(device).expand(batch)
        if timestep.shape != (batch,):
            raise ValueError(f"timestep must be a scalar or have shape ({batch},), got {tuple(timestep.shape)}")
        return timestep.to(device)

    def _labels(self, class_labels, batch: int, device) -> torch.Tensor:
        if class_labels is None:
            return torch.full((batch,), self.null_class, dtype=torch.long, device=device)
        if not isinstance(class_labels, torch.Tensor) or class_labels.is_floating_point() or class_labels.is_complex():
            raise TypeError("class_labels must be an integer tensor of class ids")
        if class_labels.shape != (batch,):
            raise ValueError(f"class_labels must have shape ({batch},), got {tuple(class_labels.shape)}")
        # a data-dependent check: done eagerly, skipped while torch.compile traces
        if not torch.compiler.is_compiling() and ((class_labels < 0) | (class_labels > self.null_class)).any():
            raise ValueError(
                f"class_labels must be in 0 .. {self.null_class} ({self.null_class} is the null class), "
                f"got min {int(class_labels.min())}, max {int(class_labels.max())}"
            )
        return class_labels.to(device)

    def _check_text(self, encoder_hidden_states, batch: int) -> torch.Tensor:
        if self.text_embedder is None:
            raise ValueError("encoder_hidden_states given, but this model has no text input (text_dim=None)")
        shape = tuple(encoder_hidden_states.shape)
        if len(shape) != 3 or (shape[0], shape[2]) != (batch, self.config.text_dim):
            raise ValueError(
                f"encoder_hidden_states must have shape ({batch}, n_text, {self.config.text_dim}), got {shape}"
            )
        return encoder_hidden_states


__all__ = ["DiT", "DiTOutput", "POSITION_ENCODINGS", "check_frame_noise_correlation"]
