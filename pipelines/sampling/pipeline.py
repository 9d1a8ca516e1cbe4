"""A diffusers pipeline for the DiT: class-conditional images or video at any size, with RoPE extrapolation.

    from axialrope.pipelines.sampling.pipeline import DiTPipeline
    pipe = DiTPipeline.from_pretrained("pipelines/sampling/assets/shapes-rope")
    out = pipe(class_labels=["circle", "square"], height=64, width=64, extrapolation="dype-yarn",
               guidance_scale=2.0, generator=torch.Generator().manual_seed(0))
    out.images[0].save("circle.png")

The sampler is the training code's (`objectives.sample`); this pipeline adds the
user-facing parts: labels by name, noise from a seed, sizes beyond the trained grid, output
formats. Beyond the trained grid, an `axialrope.Extrapolation` plans per-axis RoPE scalings
and a logit scale for the requested token grid; the pipeline puts them into the model's
`rope_config` before each step (every step for the timestep-dependent dype-* and kappa-*
methods, whose plan depends on the flow-matching sigma, 1 = pure noise) and restores the
model's own config afterwards, even if sampling fails.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import PIL.Image
import torch
from diffusers import DiffusionPipeline
from diffusers.utils import BaseOutput
from einops import rearrange

from axialrope import Extrapolation

from ..objectives import draw_noise, make_objective, sample

OUTPUT_TYPES = ("pil", "np", "pt")


@dataclass
class DiTPipelineOutput(BaseOutput):
    """images: an image model's samples; frames: a video model's (the other is None).

    output_type "pil": images is a list of PIL images, frames a list (per video) of lists of frames;
    "np": images (b, h, w, c), frames (b, t, h, w, c), float32 in [0, 1];
    "pt": images (b, c, h, w), frames (b, t, c, h, w), float32 in [0, 1] (diffusers' layouts).
    """

    images: list[PIL.Image.Image] | np.ndarray | torch.Tensor | None = None
    frames: list[list[PIL.Image.Image]] | np.ndarray | torch.Tensor | None = None


def as_extrapolation(extrapolation: str | Extrapolation | None, entropy_scaling: bool = False) -> Extrapolation:
    """An `Extrapolation` from a method name (with `entropy_scaling`) or an `Extrapolation` itself."""
    if not isinstance(entropy_scaling, bool):
        raise TypeError(f"entropy_scaling must be a bool, got {type(entropy_scaling).__name__}")
    if extrapolation is None:
        extrapolation = "none"
    if isinstance(extrapolation, Extrapolation):
        if entropy_scaling and not extrapolation.entropy_scaling:
            raise ValueError("entropy_scaling=True with an Extrapolation: set entropy_scaling on the Extrapolation")
        return extrapolation
    if not isinstance(extrapolation, str):
        raise TypeError(f"extrapolation must be a method name or an axialrope.Extrapolation, got {extrapolation!r}")
    return Extrapolation(extrapolation, entropy_scaling=entropy_scaling)  # unknown names: ValueError listing them


class RopeSwitcher:
    """Puts an extrapolation plan into a model's `rope_config` per sampling step; `restore()` undoes it.

    Args:
        model: a DiT (`rope_config`, `base_grid`, `rope` is None for sin-cos).
        extrapolation: the method.
        grid: the token grid being sampled, (h, w) or (t, h, w).
    """

    def __init__(self, model, extrapolation: Extrapolation, grid: Sequence[int]):
        self.model, self.extrapolation, self.grid = model, extrapolation, tuple(grid)
        self.original = model.rope_config
        self.is_sincos = model.rope is None
        if self.is_sincos and extrapolation.method != "none":
            raise ValueError(
                f"extrapolation {extrapolation.method!r} changes RoPE frequencies, but this model uses absolute "
                "sin-cos positions; use 'none' (optionally with entropy_scaling)"
            )
        # planning once here raises early for a method that does not suit the grid (riflex on images)
        planned = self._config_for(1.0 if extrapolation.is_timestep_dependent else None)
        self._static = None if extrapolation.is_timestep_dependent else planned

    def _config_for(self, time: float | None):
        plan = self.extrapolation.plan(self.model.base_grid, self.grid, time)
        if all(s is None for s in plan.scalings) and plan.logit_scale == 1.0:
            return self.original  # the trained encoding itself, not an equivalent copy
        attention_scale = self.original.attention_scale * plan.logit_scale
        if self.is_sincos:
            return dataclasses.replace(self.original, attention_scale=attention_scale)
        return dataclasses.replace(self.original, scaling=plan.scalings, attention_scale=attention_scale)

    def __call__(self, step: int, time: float) -> None:
        config = self._static if self._static is not None else self._config_for(min(max(time, 0.0), 1.0))
        if self.model.rope_config is not config:
            self.model.rope_config = config

    def restore(self) -> None:
        self.model.rope_config = self.original


class DiTPipeline(DiffusionPipeline):
    """Samples a DiT (`axialrope.models.DiT`) with a diffusers scheduler.

    Args:
        transformer: the DiT; its config holds the trained size (`base_grid`), patch, classes.
        scheduler: FlowMatchEulerDiscreteScheduler for flow-matching models, DDPMScheduler for
            epsilon models (`from_model` picks the training code's one for an objective).
        class_names: optional names of the class ids, so labels can be given by name.
    """

    model_cpu_offload_seq = "transformer"

    def __init__(self, transformer, scheduler, class_names: Sequence[str] | None = None):
        super().__init__()
        if class_names is not None:
            class_names = list(class_names)
            if len(class_names) != transformer.config.num_classes or not all(isinstance(n, str) for n in class_names):
                raise ValueError(
                    f"class_names must be {transformer.config.num_classes} strings (one per class), got {class_names!r}"
                )
        self.register_modules(transformer=transformer, scheduler=scheduler)
        self.register_to_config(class_names=class_names)

    @classmethod
    def from_model(cls, transformer, objective: str = "flow", class_names: Sequence[str] | None = None) -> "DiTPipeline":
        """A pipeline for a DiT trained with `objective` ("flow" or "ddpm"), with the training code's scheduler."""
        return cls(transformer, make_objective(objective).scheduler(), class_names)

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs) -> "DiTPipeline":
        """Load a pipeline folder written by `save_pretrained` (local folders only; no hub downloads).

        kwargs go to diffusers' loader (e.g. torch_dtype=torch.bfloat16).
        """
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"model folder {str(path)!r} does not exist")
        if not (folder / "model_index.json").is_file():
            hint = " (a bare model folder? load it with DiT.from_pretrained)" if (folder / "config.json").is_file() else ""
            raise ValueError(f"{str(path)!r} is not a pipeline folder: it has no model_index.json{hint}")
        index = json.loads((folder / "model_index.json").read_text())
        if index.get("_class_name") != cls.__name__:
            raise ValueError(f"{str(path)!r} holds a {index.get('_class_name')!r}, not a {cls.__name__}")
        import axialrope.models  # noqa: F401  diffusers loads the transformer's class only from an imported module

        return super().from_pretrained(str(folder), **kwargs)

    # -- inputs ----------------------------------------------------------------------------

    @property
    def is_video(self) -> bool:
        return self.transformer.n_axes == 3

    @property
    def trained_size(self) -> tuple[int, ...]:
        """The trained (height, width), or (frames, height, width) of a video model, in pixels."""
        model = self.transformer
        return tuple(n * p for n, p in zip(model.base_grid, model.patchify.patch))

    def class_id(self, label: int | str) -> int:
        """A class id from an id or a name in `class_names`."""
        num_classes = self.transformer.config.num_classes
        if isinstance(label, str):
            names = self.config.class_names or []
            if label not in names:
                known = f"one of {names}" if names else "integer ids (this model has no class names)"
                raise ValueError(f"unknown class {label!r}; class_labels must be {known}")
            return names.index(label)
        if isinstance(label, (bool, np.bool_)) or not isinstance(label, (int, np.integer)):
            raise TypeError(f"class labels must be integer ids or names, got {label!r}")
        if not 0 <= label < num_classes:
            raise ValueError(f"class id {label} is out of range: this model has classes 0 .. {num_classes - 1}")
        return int(label)

    def _labels(self, class_labels, batch_size: int, guidance_scale: float) -> tuple[torch.Tensor | None, int]:
        """(labels (b,) long or None, batch size) from the user's class_labels."""
        conditional = self.transformer.null_class is not None
        if class_labels is None:
            if guidance_scale != 1.0:
                reason = "this model is unconditional" if not conditional else "no class_labels were given"
                raise ValueError(f"guidance_scale={guidance_scale} needs class labels, but {reason}; use guidance_scale=1")
            return None, batch_size
        if not conditional:
            raise ValueError("class_labels given, but this model is unconditional (num_classes=0)")
        if isinstance(class_labels, torch.Tensor):
            class_labels = class_labels.tolist()
        if isinstance(class_labels, (int, str, np.integer)):
            class_labels = [class_labels]
        if not isinstance(class_labels, Sequence) or len(class_labels) == 0:
            raise ValueError(f"class_labels must be a label or a non-empty list of labels, got {class_labels!r}")
        ids = torch.tensor([self.class_id(label) for label in class_labels], dtype=torch.long)
        return ids, len(ids)

    def _sample_shape(self, height, width, num_frames) -> tuple[int, ...]:
        """(h, w) or (t, h, w) in pixels, defaults from the model's trained size, checked against the patch."""
        model = self.transformer
        patch = model.patchify.patch  # (p, p) or (r, p, p)
        if num_frames is not None and not self.is_video:
            raise ValueError("num_frames given, but this is an image model; leave num_frames=None")
        sizes = [height, width] if not self.is_video else [num_frames, height, width]
        names = ["height", "width"] if not self.is_video else ["num_frames", "height", "width"]
        shape = []
        for name, size, default, p in zip(names, sizes, self.trained_size, patch):
            size = default if size is None else size
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size <= 0:
                raise ValueError(f"{name} must be a positive integer, got {size!r}")
            if size % p:
                raise ValueError(f"{name}={size} is not divisible by the model's patch size {p} along it")
            shape.append(int(size))
        return tuple(shape)

    # -- sampling --------------------------------------------------------------------------

    @torch.no_grad()
    def __call__(
        self,
        class_labels: int | str | Sequence[int | str] | torch.Tensor | None = None,
        height: int | None = None,
        width: int | None = None,
        num_frames: int | None = None,
        num_inference_steps: int = 30,
        guidance_scale: float = 1.0,
        generator: torch.Generator | None = None,
        extrapolation: str | Extrapolation | None = "none",
        entropy_scaling: bool = False,
        batch_size: int = 1,
        output_type: str = "pil",
        return_dict: bool = True,
    ) -> DiTPipelineOutput | tuple:
        """Sample images (or videos) of one size.

        Args:
            class_labels: ids or names, one per sample; None samples unconditionally (`batch_size` samples).
            height, width, num_frames: pixels (frames); default the trained size. num_frames only for video.
            num_inference_steps: sampler steps.
            guidance_scale: classifier-free guidance against the model's null class (1: none).
            generator: seeds the initial noise, drawn on the CPU so a seed gives the same samples on any device,
                and the fresh noise of a stochastic scheduler's every step (DDPM).
            extrapolation: method name (see `axialrope.extrapolation`) or an `Extrapolation`.
            entropy_scaling: with a method name, also scale attention logits by sqrt(log N / log N_train).
            batch_size: samples when class_labels is None.
            output_type: "pil", "np" or "pt" (see `DiTPipelineOutput`).
            return_dict: False returns the tuple (images_or_frames,).
        """
        if output_type not in OUTPUT_TYPES:
            raise ValueError(f"output_type must be one of {OUTPUT_TYPES}, got {output_type!r}")
        if isinstance(num_inference_steps, bool) or not isinstance(num_inference_steps, int) or num_inference_steps < 1:
            raise ValueError(f"num_inference_steps must be a positive integer, got {num_inference_steps!r}")
        if isinstance(guidance_scale, bool) or not isinstance(guidance_scale, (int, float)) or not math.isfinite(guidance_scale):
            raise ValueError(f"guidance_scale must be a finite number, got {guidance_scale!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        method = as_extrapolation(extrapolation, entropy_scaling)
        labels, batch = self._labels(class_labels, batch_size, float(guidance_scale))
        shape = self._sample_shape(height, width, num_frames)
        model, device = self.transformer, self._execution_device
        grid = tuple(s // p for s, p in zip(shape, model.patchify.patch))
        switcher = RopeSwitcher(model, method, grid)  # checks the method against the model and grid

        # a video model trained on frame-correlated noise samples from the same prior
        noise = draw_noise((batch, model.config.in_channels, *shape), model.config.frame_noise_correlation, generator)
        progress = self.progress_bar(total=num_inference_steps)

        def on_step(step: int, time: float) -> None:
            switcher(step, time)
            if step:
                progress.update(1)

        try:
            samples = sample(
                model, None, noise.to(device), None if labels is None else labels.to(device), num_inference_steps,
                float(guidance_scale), model.null_class, generator=generator, scheduler=self.scheduler,
                on_step=on_step,
            )
            progress.update(1)
        finally:
            switcher.restore()
            progress.close()
        result = self.postprocess(samples)
        result = result if output_type == "pt" else self._to_output_type(result, output_type)
        if not return_dict:
            return (result,)
        return DiTPipelineOutput(frames=result) if self.is_video else DiTPipelineOutput(images=result)

    def postprocess(self, samples: torch.Tensor) -> torch.Tensor:
        """Samples in [-1, 1], (b, c, h, w) or (b, c, t, h, w) -> float32 in [0, 1], (b, c, h, w) or (b, t, c, h, w)."""
        images = ((samples.float().clamp(-1, 1) + 1) / 2).cpu()
        return rearrange(images, "b c t h w -> b t c h w") if images.ndim == 5 else images

    @staticmethod
    def _to_output_type(images: torch.Tensor, output_type: str):
        """(b, [t,] c, h, w) in [0, 1] -> numpy channels-last, or PIL images (a list per video)."""
        array = rearrange(images, "... c h w -> ... h w c").numpy()
        if output_type == "np":
            return array
        pixels = (array * 255).round().astype(np.uint8)
        if pixels.ndim == 5:
            return [[PIL.Image.fromarray(frame) for frame in video] for video in pixels]
        return [PIL.Image.fromarray(image) for image in pixels]


__all__ = ["DiTPipeline", "DiTPipelineOutput", "OUTPUT_TYPES", "RopeSwitcher", "as_extrapolation"]
