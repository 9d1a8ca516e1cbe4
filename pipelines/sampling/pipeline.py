"""A diffusers pipeline for the DiT: class-conditional images or video at any size, with RoPE extrapolation.

    from axialrope.pipelines.sampling.pipeline import AxialDiTPipeline
    pipe = AxialDiTPipeline.from_pretrained("pipelines/sampling/assets/shapes-rope")
    out = pipe(class_labels=["circle", "square"], height=64, width=64, extrapolation="dype-yarn",
               guidance_scale=2.0, generator=torch.Generator().manual_seed(0), scheduler="unipc")
    out.images[0].save("outputs/circle.png")

The sampler is the training code's (`objectives.sample`); this pipeline adds the
user-facing parts: labels by name, noise from a seed, sizes beyond the trained grid, any
diffusers scheduler that fits the model's objective (`schedulers`), diffusers' call
conventions (`latents`, `num_images_per_prompt`, `callback_on_step_end`, `output_type`,
`return_dict`) and its image and video processors. Its own name, not diffusers' `DiTPipeline`
(facebook's DiT), so that `DiffusionPipeline.from_pretrained` finds it (see `registration`).
Beyond the trained grid, an `axialrope.Extrapolation` plans per-axis RoPE scalings
and a logit scale for the requested token grid; the pipeline puts them into the model's
`rope_config` before each step (every step for the timestep-dependent dype-* and kappa-*
methods, whose plan depends on the flow-matching sigma, 1 = pure noise) and restores the
model's own config afterwards, even if sampling fails.

`extrapolation="auto"` (the default) picks the method for the requested size from the
pipeline's `default_extrapolation`, bands of scale recorded in its model_index.json (or
`FALLBACK_EXTRAPOLATION` when it records none); `resolve_extrapolation` shows the pick:

    pipe.set_default_extrapolation([{"up_to_scale": 2.0, "method": "pi", "entropy_scaling": True},
                                    {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": True}])
    pipe.resolve_extrapolation(height=64, width=64)   # Extrapolation("pi", entropy_scaling=True) at 2x
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import PIL.Image
import torch
from diffusers import DiffusionPipeline
from diffusers.callbacks import MultiPipelineCallbacks, PipelineCallback
from diffusers.image_processor import VaeImageProcessor
from diffusers.utils import BaseOutput
from diffusers.video_processor import VideoProcessor

import axialrope.models.axial_dit.model  # noqa: F401  diffusers loads a component's class only from an imported module
from axialrope import Extrapolation
from axialrope.validation import is_int, is_real

from ..objectives import draw_noise, make_objective, sample
from .default_extrapolation import (
    AUTO,
    FALLBACK_EXTRAPOLATION,
    band_for_scale,
    check_default_extrapolation,
    extrapolation_scale,
)
from .registration import LEGACY_CLASS_NAMES, is_axialrope_index, register_with_diffusers
from .schedulers import OBJECTIVE_NAMES, check_scheduler, make_scheduler, scheduler_objective

OUTPUT_TYPES = ("pil", "np", "pt", "latent")


@dataclass
class AxialDiTPipelineOutput(BaseOutput):
    """images: an image model's samples; frames: a video model's (the other is None).

    output_type "pil": images is a list of PIL images, frames a list (per video) of lists of frames;
    "np": images (b, h, w, c), frames (b, t, h, w, c), float32 in [0, 1];
    "pt": images (b, c, h, w), frames (b, t, c, h, w), float32 in [0, 1] (diffusers' layouts), on the CPU;
    "latent": the sampler's state unprocessed, (b, c, h, w) or (b, c, t, h, w), float32, nominally in
    [-1, 1] (this DiT works on pixels, so its latents are pixels before clamping and rescaling).
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


class AxialDiTPipeline(DiffusionPipeline):
    """Samples a DiT (`axialrope.models.DiT`) with a diffusers scheduler.

    Args:
        transformer: the DiT; its config holds the trained size (`base_grid`), patch, classes.
        scheduler: FlowMatchEulerDiscreteScheduler for flow-matching models, DDPMScheduler for
            epsilon models (`from_model` picks the training code's one for an objective); any
            scheduler of `schedulers.SCHEDULERS` for the objective samples too.
        class_names: optional names of the class ids, so labels can be given by name.
        objective: "flow" or "ddpm", what the DiT was trained with; default: what `scheduler`
            samples. Kept in the config, so a scheduler swapped in later is checked against it.
        default_extrapolation: bands of scale with the method `extrapolation="auto"` picks in each, a list
            of {"up_to_scale": float or None (the last band: and beyond), "method": str,
            "entropy_scaling": bool, optionally "measured": str} sorted by up_to_scale (see
            `check_default_extrapolation`, `resolve_extrapolation`); None: `FALLBACK_EXTRAPOLATION`.
            Kept in the config (model_index.json), where it may be edited; checked on loading.
    """

    model_cpu_offload_seq = "transformer"
    _callback_tensor_inputs = ["latents"]

    def __init__(self, transformer, scheduler, class_names: Sequence[str] | None = None, objective: str | None = None,
                 default_extrapolation: list[dict] | None = None):
        super().__init__()
        if class_names is not None:
            class_names = list(class_names)
            if len(class_names) != transformer.config.num_classes or not all(isinstance(n, str) for n in class_names):
                raise ValueError(
                    f"class_names must be {transformer.config.num_classes} strings (one per class), got {class_names!r}"
                )
        objective = scheduler_objective(scheduler) if objective is None else objective
        if objective not in OBJECTIVE_NAMES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVE_NAMES)} (what the DiT was trained with), "
                             f"got {objective!r}")
        check_scheduler(scheduler, objective)
        default_extrapolation = check_default_extrapolation(default_extrapolation, transformer.n_axes == 3)
        self.register_modules(transformer=transformer, scheduler=scheduler)
        self.register_to_config(class_names=class_names, objective=objective,
                                default_extrapolation=default_extrapolation)
        # the DiT works on pixels in [-1, 1]: the processors only denormalise and convert, never resize
        self.image_processor = VaeImageProcessor(vae_scale_factor=1, do_resize=False)
        self.video_processor = VideoProcessor(vae_scale_factor=1, do_resize=False)

    @classmethod
    def from_model(cls, transformer, objective: str = "flow", class_names: Sequence[str] | None = None,
                   default_extrapolation: list[dict] | None = None) -> AxialDiTPipeline:
        """A pipeline for a DiT trained with `objective` ("flow" or "ddpm"), with the training code's scheduler."""
        return cls(transformer, make_objective(objective).scheduler(), class_names, objective, default_extrapolation)

    def set_default_extrapolation(self, bands: list[dict] | None) -> None:
        """Record `bands` as the pipeline's `default_extrapolation` (checked; see the class docstring), what
        `extrapolation="auto"` picks from; `save_pretrained` writes it into model_index.json. None or []
        removes it (auto then uses `FALLBACK_EXTRAPOLATION`)."""
        self.register_to_config(default_extrapolation=check_default_extrapolation(bands, self.is_video))

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs) -> AxialDiTPipeline:
        """Load a pipeline folder written by `save_pretrained` (local folders only; no hub downloads).

        Also a training run's folder (its pipeline/), one of its checkpoints or its model_ema/ or
        model/ (completed by the run's pipeline-config/; see `runs`). kwargs go to diffusers' loader
        (e.g. torch_dtype=torch.bfloat16); a checkpoint or model folder takes only dtype / torch_dtype.
        A folder saved as "DiTPipeline" by an earlier axialrope (its transformer an axialrope DiT) loads too.
        """
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"model folder {str(path)!r} does not exist")
        if not (folder / "model_index.json").is_file():
            from .runs import load_run_pipeline  # a training run, its checkpoint or model folder; None if not one

            pipe = load_run_pipeline(folder, cls, **kwargs)
            if pipe is not None:
                return pipe
            hint = (" (a bare model folder? load it with DiT.from_pretrained)" if (folder / "config.json").is_file()
                    else "")
            raise ValueError(f"{str(path)!r} is not a pipeline folder: it has no model_index.json{hint}")
        index = json.loads((folder / "model_index.json").read_text())
        name = index.get("_class_name")
        if name != cls.__name__ and not (name in LEGACY_CLASS_NAMES and is_axialrope_index(index)):
            raise ValueError(f"{str(path)!r} holds a {name!r}; "
                             f"{cls.__name__}.from_pretrained loads {cls.__name__} folders")
        # an edited default_extrapolation: its error before the weights load (__init__ checks it again, with the model)
        check_default_extrapolation(index.get("default_extrapolation"))
        return super().from_pretrained(str(folder), **kwargs)

    # -- inputs ----------------------------------------------------------------------------

    @property
    def is_video(self) -> bool:
        return self.transformer.n_axes == 3

    @property
    def trained_size(self) -> tuple[int, ...]:
        """The trained (height, width), or (frames, height, width) of a video model, in pixels."""
        model = self.transformer
        return tuple(n * p for n, p in zip(model.base_grid, model.patchify.patch, strict=True))

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
                raise ValueError(f"guidance_scale={guidance_scale} needs class labels, but {reason}; "
                                 "use guidance_scale=1")
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
        for name, size, default, p in zip(names, sizes, self.trained_size, patch, strict=True):
            size = default if size is None else size
            if not (is_int(size) or isinstance(size, np.integer)) or size <= 0:
                raise ValueError(f"{name} must be a positive integer, got {size!r}")
            if size % p:
                raise ValueError(f"{name}={size} is not divisible by the model's patch size {p} along it")
            shape.append(int(size))
        return tuple(shape)

    def _token_grid(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The token grid of a sample of `shape` pixels (frames), (h, w) or (t, h, w)."""
        return tuple(s // p for s, p in zip(shape, self.transformer.patchify.patch, strict=True))

    def resolve_extrapolation(self, height: int | None = None, width: int | None = None,
                              num_frames: int | None = None, entropy_scaling: bool = False) -> Extrapolation:
        """The `Extrapolation` that `extrapolation="auto"` samples this size with (default: the trained size).

        Returns, for the scale s = the largest ratio over the axes of requested to trained tokens:
        `Extrapolation("none")` if s <= 1 (nothing to extrapolate); otherwise the method and entropy_scaling
        of the band of `default_extrapolation` (`FALLBACK_EXTRAPOLATION` if the pipeline records none) that
        covers s: the first with up_to_scale >= s (None: no limit), the last band if s is beyond them all.
        A sin-cos model gets "none" with the band's entropy_scaling (its positions have no RoPE to change).
        `entropy_scaling=True` turns entropy scaling on in any case.
        """
        return self._auto_extrapolation(self._token_grid(self._sample_shape(height, width, num_frames)),
                                        entropy_scaling)

    def _auto_extrapolation(self, grid: Sequence[int], entropy_scaling: bool = False) -> Extrapolation:
        """`resolve_extrapolation` for a token grid."""
        if not isinstance(entropy_scaling, bool):
            raise TypeError(f"entropy_scaling must be a bool, got {type(entropy_scaling).__name__}")
        scale = extrapolation_scale(self.transformer.base_grid, grid)
        if scale <= 1:
            return Extrapolation("none", entropy_scaling=entropy_scaling)
        band = band_for_scale(self.config.get("default_extrapolation") or FALLBACK_EXTRAPOLATION, scale)
        # RopeSwitcher refuses RoPE methods on absolute positions; the band's logit scaling still applies
        method = "none" if self.transformer.rope is None else band["method"]
        return Extrapolation(method, entropy_scaling=band["entropy_scaling"] or entropy_scaling)

    def _scheduler(self, scheduler) -> object:
        """The scheduler of one call: the pipeline's own (None), a fresh one by name, or an instance; each
        checked against the model's objective."""
        if scheduler is None:
            scheduler = self.scheduler
        elif isinstance(scheduler, str):
            return make_scheduler(scheduler, self.scheduler)  # unknown or unfitting names: ValueError listing them
        check_scheduler(scheduler, self.config.objective)
        return scheduler

    @staticmethod
    def _check_latents(latents, shape: tuple[int, ...]) -> torch.Tensor | None:
        """`latents` checked against the samples' shape (b, c, h, w) or (b, c, t, h, w)."""
        if latents is None:
            return None
        layout = "(batch, channels, height, width)" if len(shape) == 4 else "(batch, channels, frames, height, width)"
        if not isinstance(latents, torch.Tensor):
            raise TypeError(f"latents must be a torch.Tensor {layout}, got {type(latents).__name__}")
        if not latents.is_floating_point():
            raise ValueError(f"latents must be a floating-point tensor (standard normal noise), "
                             f"got dtype {latents.dtype}")
        if tuple(latents.shape) != shape:
            raise ValueError(f"latents must have shape {shape}, {layout} of the samples asked for "
                             f"(labels x num_images_per_prompt, and the size), got {tuple(latents.shape)}")
        return latents

    def _callback_inputs(self, callback, tensor_inputs) -> list[str]:
        """The tensor names a `callback_on_step_end` receives, checked (diffusers' check_inputs)."""
        if isinstance(callback, (PipelineCallback, MultiPipelineCallbacks)):
            tensor_inputs = callback.tensor_inputs  # diffusers' callback objects name their own
        if callback is not None and not callable(callback):
            raise TypeError(f"callback_on_step_end must be callable as (pipe, step, timestep, callback_kwargs), "
                            f"got {type(callback).__name__}")
        if isinstance(tensor_inputs, str) or not isinstance(tensor_inputs, Sequence):
            raise ValueError(f"callback_on_step_end_tensor_inputs must be a list of names from "
                             f"{self._callback_tensor_inputs}, got {tensor_inputs!r}")
        unknown = [name for name in tensor_inputs if name not in self._callback_tensor_inputs]
        if unknown:
            raise ValueError(f"callback_on_step_end_tensor_inputs must be in {self._callback_tensor_inputs}, "
                             f"but found {unknown}")
        return list(tensor_inputs)

    def _run_callback(self, callback, tensor_inputs: list[str], step: int, timestep, latents: torch.Tensor):
        """Call `callback` as diffusers pipelines do; a "latents" it returns replaces the sampler state."""
        available = {"latents": latents}
        outputs = callback(self, step, timestep, {name: available[name] for name in tensor_inputs})
        if outputs is None:
            return latents
        if not isinstance(outputs, dict):
            raise TypeError(f"callback_on_step_end must return a dict of tensors (or None), "
                            f"got {type(outputs).__name__}")
        replaced = outputs.pop("latents", latents)
        if not isinstance(replaced, torch.Tensor) or replaced.shape != latents.shape:
            got = tuple(replaced.shape) if isinstance(replaced, torch.Tensor) else type(replaced).__name__
            raise ValueError(f"callback_on_step_end returned latents of shape {got}; "
                             f"they must keep {tuple(latents.shape)}")
        return replaced.to(latents.device, torch.float32)

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
        extrapolation: str | Extrapolation | None = AUTO,
        entropy_scaling: bool = False,
        batch_size: int = 1,
        output_type: str = "pil",
        return_dict: bool = True,
        num_images_per_prompt: int = 1,
        latents: torch.Tensor | None = None,
        scheduler=None,
        callback_on_step_end=None,
        callback_on_step_end_tensor_inputs: Sequence[str] = ("latents",),
    ) -> AxialDiTPipelineOutput | tuple:
        """Sample images (or videos) of one size.

        Args:
            class_labels: ids or names; None samples unconditionally (`batch_size` samples).
            height, width, num_frames: pixels (frames); default the trained size. num_frames only for video.
            num_inference_steps: sampler steps.
            guidance_scale: classifier-free guidance against the model's null class (1: none).
            generator: seeds the initial noise, drawn on the CPU so a seed gives the same samples on any device,
                and the fresh noise of a stochastic scheduler's every step (DDPM).
            extrapolation: "auto" (the method `resolve_extrapolation` picks for the size from the pipeline's
                `default_extrapolation`), a method name (see `axialrope.extrapolation`) or an `Extrapolation`.
            entropy_scaling: with a method name or "auto", also scale attention logits by sqrt(log N / log N_train).
            batch_size: samples when class_labels is None.
            output_type: "pil", "np", "pt" or "latent" (see `AxialDiTPipelineOutput`).
            return_dict: False returns the tuple (images_or_frames,).
            num_images_per_prompt: samples per class label (each label's samples next to each other), or
                per `batch_size` unconditionally: b = labels (or batch_size) x num_images_per_prompt.
            latents: the initial noise instead of drawing it, (b, c, h, w) or (b, c, t, h, w), standard
                normal (the scheduler's init_noise_sigma scales it, as in diffusers); a video model's
                frame-correlated prior is then the caller's to draw (`objectives.draw_noise`).
            scheduler: a name of `schedulers.SCHEDULERS` for the model's objective ("euler", "heun",
                "dpm++", "unipc"; DDPM models: "ddpm", "ddim", "euler", "dpm++", "unipc"), or a diffusers
                scheduler instance; default the pipeline's own.
            callback_on_step_end: called after every step as `callback(pipe, step, timestep, callback_kwargs)`,
                callback_kwargs holding the tensors named in `callback_on_step_end_tensor_inputs`; a dict
                it returns with "latents" replaces them (diffusers' convention). PipelineCallback objects work.
            callback_on_step_end_tensor_inputs: names from `_callback_tensor_inputs` ("latents": the
                sampler state, float32 (b, c, ...)).
        """
        if output_type not in OUTPUT_TYPES:
            raise ValueError(f"output_type must be one of {OUTPUT_TYPES}, got {output_type!r}")
        if not is_int(num_inference_steps) or num_inference_steps < 1:
            raise ValueError(f"num_inference_steps must be a positive integer, got {num_inference_steps!r}")
        if not is_real(guidance_scale) or not math.isfinite(guidance_scale):
            raise ValueError(f"guidance_scale must be a finite number, got {guidance_scale!r}")
        if not is_int(batch_size) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not is_int(num_images_per_prompt) or num_images_per_prompt < 1:
            raise ValueError(f"num_images_per_prompt must be a positive integer, got {num_images_per_prompt!r}")
        tensor_inputs = self._callback_inputs(callback_on_step_end, callback_on_step_end_tensor_inputs)
        auto = isinstance(extrapolation, str) and extrapolation == AUTO  # resolved once the grid is known
        method = None if auto else as_extrapolation(extrapolation, entropy_scaling)
        labels, batch = self._labels(class_labels, batch_size, float(guidance_scale))
        if labels is not None:
            labels = labels.repeat_interleave(num_images_per_prompt)
        batch *= num_images_per_prompt
        shape = self._sample_shape(height, width, num_frames)
        sampler = self._scheduler(scheduler)
        model, device = self.transformer, self._execution_device
        latents = self._check_latents(latents, (batch, model.config.in_channels, *shape))
        grid = self._token_grid(shape)
        if auto:
            method = self._auto_extrapolation(grid, entropy_scaling)
        switcher = RopeSwitcher(model, method, grid)  # checks the method against the model and grid

        if latents is None:  # a video model trained on frame-correlated noise samples from the same prior
            latents = draw_noise((batch, model.config.in_channels, *shape), model.config.frame_noise_correlation,
                                 generator)
        progress = self.progress_bar(total=num_inference_steps)

        def on_step_end(step: int, timestep, x: torch.Tensor) -> torch.Tensor:
            if callback_on_step_end is not None:
                x = self._run_callback(callback_on_step_end, tensor_inputs, step, timestep, x)
            # a second-order scheduler (Heun) calls the model twice per step: the bar counts steps, as diffusers'
            if step == len(sampler.timesteps) - 1 or (step + 1) % sampler.order == 0:
                progress.update(1)
            return x

        try:
            samples = sample(
                model, None, latents.to(device), None if labels is None else labels.to(device), num_inference_steps,
                float(guidance_scale), model.null_class, generator=generator, scheduler=sampler,
                on_step=switcher, on_step_end=on_step_end,
            )
        finally:
            switcher.restore()
            progress.close()
        result = self.postprocess(samples, output_type)
        if not return_dict:
            return (result,)
        return AxialDiTPipelineOutput(frames=result) if self.is_video else AxialDiTPipelineOutput(images=result)

    def postprocess(self, samples: torch.Tensor, output_type: str = "pt"):
        """Samples in [-1, 1], (b, c, h, w) or (b, c, t, h, w) -> `output_type` (see `AxialDiTPipelineOutput`)
        through diffusers' VaeImageProcessor / VideoProcessor (denormalised to [0, 1], clamped)."""
        if output_type == "latent":
            return samples
        samples = samples.float().cpu()
        if samples.ndim == 5:
            return self.video_processor.postprocess_video(samples, output_type=output_type)
        return self.image_processor.postprocess(samples, output_type=output_type)


register_with_diffusers(AxialDiTPipeline)

__all__ = ["AxialDiTPipeline", "AxialDiTPipelineOutput", "OUTPUT_TYPES", "RopeSwitcher", "as_extrapolation"]
