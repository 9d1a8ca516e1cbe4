"""A diffusers pipeline for the DiT: class-conditional images or video at any size, with RoPE extrapolation.

    from axialrope.pipelines import AxialDiTPipeline
    pipe = AxialDiTPipeline.from_pretrained("pipelines/dit/assets/shapes-rope")
    out = pipe(class_labels=["circle", "square"], height=64, width=64, guidance_scale=2.0,
               generator=torch.Generator().manual_seed(0), extrapolation="yarn+entropy", scheduler="unipc")
    out.images[0].save("outputs/circle.png")

Importing this module registers `AxialDiTPipeline` with diffusers (`registration`), so that
`DiffusionPipeline.from_pretrained` finds it too. How a method is applied per step, and what
`extrapolation="auto"` picks, is in docs/extrapolation.md ("How a method is applied", "The default: auto").
"""

from __future__ import annotations

import dataclasses
import json
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
from axialrope.models.axial_dit.extrapolation import DiTExtrapolation
from axialrope.models.call_plan import Timestep
from axialrope.validation import is_int

from ..limits import check_guidance_scale
from ..objectives import (
    draw_noise,
    guided_prediction,
    initial_noise_sigma,
    make_objective,
    scaled_model_input,
    scheduler_step_kwargs,
)
from .default_extrapolation import FALLBACK_EXTRAPOLATION, check_default_extrapolation, select_extrapolation
from .extrapolation_names import AUTO, make_extrapolation
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


class AxialDiTPipeline(DiffusionPipeline):
    """Samples a DiT (`axialrope.models.DiT`) with a diffusers scheduler, at any size, with RoPE extrapolation.

    Args:
        transformer: the DiT; its config holds the trained size (`base_grid`), patch, classes.
        scheduler: a diffusers scheduler for the DiT's objective (`schedulers.SCHEDULERS`; `from_model`
            picks the training code's).
        class_names: optional names of the class ids, so labels can be given by name.
        objective: "flow" or "ddpm", what the DiT was trained with; default: what `scheduler` samples.
            Kept in the config, so a scheduler swapped in later is checked against it.
        default_extrapolation: bands of scale with the method `extrapolation="auto"` picks in each
            (`default_extrapolation.check_default_extrapolation`); None: `FALLBACK_EXTRAPOLATION`.
            Kept in model_index.json, where it may be edited; checked on loading.
    """

    model_cpu_offload_seq = "transformer"
    _callback_tensor_inputs = ["latents"]

    def __init__(
        self,
        transformer,
        scheduler,
        class_names: Sequence[str] | None = None,
        objective: str | None = None,
        default_extrapolation: list[dict] | None = None,
    ):
        super().__init__()
        if class_names is not None:
            class_names = list(class_names)
            if len(class_names) != transformer.config.num_classes or not all(isinstance(n, str) for n in class_names):
                raise ValueError(
                    f"class_names must be {transformer.config.num_classes} strings (one per class), got {class_names!r}"
                )
        objective = scheduler_objective(scheduler) if objective is None else objective
        if objective not in OBJECTIVE_NAMES:
            raise ValueError(
                f"objective must be one of {', '.join(OBJECTIVE_NAMES)} (what the DiT was trained with), "
                f"got {objective!r}"
            )
        check_scheduler(scheduler, objective)
        default_extrapolation = check_default_extrapolation(default_extrapolation, transformer.n_axes == 3)
        self.register_modules(transformer=transformer, scheduler=scheduler)
        self.register_to_config(
            class_names=class_names, objective=objective, default_extrapolation=default_extrapolation
        )
        # the DiT works on pixels in [-1, 1]: the processors only denormalise and convert, never resize
        self.image_processor = VaeImageProcessor(vae_scale_factor=1, do_resize=False)
        self.video_processor = VideoProcessor(vae_scale_factor=1, do_resize=False)

    @classmethod
    def from_model(
        cls,
        transformer,
        objective: str = "flow",
        class_names: Sequence[str] | None = None,
        default_extrapolation: list[dict] | None = None,
    ) -> AxialDiTPipeline:
        """A pipeline for a DiT trained with `objective` ("flow" or "ddpm"), with the training code's scheduler."""
        return cls(transformer, make_objective(objective).scheduler(), class_names, objective, default_extrapolation)

    def set_default_extrapolation(self, bands: list[dict] | None) -> None:
        """Record `bands` as the pipeline's `default_extrapolation` (checked), what `extrapolation="auto"` picks
        from; `save_pretrained` writes it into model_index.json. None or [] removes it (auto then uses
        `FALLBACK_EXTRAPOLATION`). `axialrope.pipelines.calibrate` measures the bands and records them here."""
        self.register_to_config(default_extrapolation=check_default_extrapolation(bands, self.is_video))

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs) -> AxialDiTPipeline:
        """Load a pipeline folder written by `save_pretrained` (local folders only; no hub downloads).

        kwargs go to diffusers' loader (e.g. torch_dtype=torch.bfloat16). A folder saved as "DiTPipeline" by an
        earlier axialrope (its transformer an axialrope DiT) loads too. A training run, one of its checkpoints
        or its model folders load with `axialrope.pipelines.load_run_pipeline`.
        """
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"model folder {str(path)!r} does not exist")
        if not (folder / "model_index.json").is_file():
            bare = "; a bare model folder loads with DiT.from_pretrained" if (folder / "config.json").is_file() else ""
            raise ValueError(
                f"{str(path)!r} is not a pipeline folder: it has no model_index.json. A training run, "
                f"one of its checkpoints or its model/ or model_ema/ loads with "
                f"axialrope.pipelines.load_run_pipeline({str(path)!r}){bare}"
            )
        index = json.loads((folder / "model_index.json").read_text())
        name = index.get("_class_name")
        if name != cls.__name__ and not (name in LEGACY_CLASS_NAMES and is_axialrope_index(index)):
            raise ValueError(
                f"{str(path)!r} holds a {name!r}; {cls.__name__}.from_pretrained loads {cls.__name__} folders"
            )
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

    def check_inputs(
        self,
        class_labels,
        height,
        width,
        num_frames,
        num_inference_steps,
        guidance_scale,
        num_images_per_prompt,
        latents,
        output_type,
        callback_on_step_end,
        callback_on_step_end_tensor_inputs,
        batch_size,
    ) -> None:
        """Raise a ValueError or TypeError naming the first bad argument of a `__call__` (diffusers' check_inputs).

        What needs the batch (the latents' shape) is checked by `prepare_latents`, labels by `prepare_class_labels`.
        """
        self._checked_shape(
            class_labels,
            height,
            width,
            num_frames,
            num_inference_steps,
            guidance_scale,
            num_images_per_prompt,
            latents,
            output_type,
            callback_on_step_end,
            callback_on_step_end_tensor_inputs,
            batch_size,
        )

    def _checked_shape(
        self,
        class_labels,
        height,
        width,
        num_frames,
        num_inference_steps,
        guidance_scale,
        num_images_per_prompt,
        latents,
        output_type,
        callback_on_step_end,
        callback_on_step_end_tensor_inputs,
        batch_size,
    ) -> tuple[int, ...]:
        """`check_inputs`, as `__call__` runs it: the sample's shape (h, w) or (t, h, w) in pixels (frames) once
        every argument passed, so that the call works it out once."""
        if output_type not in OUTPUT_TYPES:
            raise ValueError(f"output_type must be one of {OUTPUT_TYPES}, got {output_type!r}")
        if not is_int(num_inference_steps) or num_inference_steps < 1:
            raise ValueError(f"num_inference_steps must be a positive integer, got {num_inference_steps!r}")
        check_guidance_scale(guidance_scale)
        if not is_int(batch_size) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not is_int(num_images_per_prompt) or num_images_per_prompt < 1:
            raise ValueError(f"num_images_per_prompt must be a positive integer, got {num_images_per_prompt!r}")
        shape = self._sample_shape(height, width, num_frames)
        if class_labels is None and guidance_scale != 1.0:
            conditional = self.transformer.null_class is not None
            reason = "no class_labels were given" if conditional else "this model is unconditional"
            raise ValueError(f"guidance_scale={guidance_scale} needs class labels, but {reason}; use guidance_scale=1")
        if latents is not None:
            if not isinstance(latents, torch.Tensor):
                raise TypeError(f"latents must be a torch.Tensor {self._latents_layout}, got {type(latents).__name__}")
            if not latents.is_floating_point():
                raise ValueError(
                    f"latents must be a floating-point tensor (standard normal noise), got dtype {latents.dtype}"
                )
            bad = int((~torch.isfinite(latents)).sum())
            if bad:
                raise ValueError(
                    f"latents must be finite (standard normal noise), but {bad} of its "
                    f"{latents.numel()} values are NaN or infinite"
                )
        self._callback_tensor_names(callback_on_step_end, callback_on_step_end_tensor_inputs)
        return shape

    def prepare_class_labels(
        self, class_labels, batch_size: int = 1, num_images_per_prompt: int = 1
    ) -> tuple[torch.Tensor | None, int]:
        """(labels (b,) long on the CPU or None, b) from the user's class_labels: b = labels (or batch_size when
        class_labels is None) x num_images_per_prompt, each label's samples next to each other."""
        if class_labels is None:
            return None, batch_size * num_images_per_prompt
        if self.transformer.null_class is None:
            raise ValueError("class_labels given, but this model is unconditional (num_classes=0)")
        if isinstance(class_labels, torch.Tensor):
            class_labels = class_labels.tolist()
        if isinstance(class_labels, (int, str, np.integer)):
            class_labels = [class_labels]
        if not isinstance(class_labels, Sequence) or len(class_labels) == 0:
            raise ValueError(f"class_labels must be a label or a non-empty list of labels, got {class_labels!r}")
        ids = torch.tensor([self.class_id(label) for label in class_labels], dtype=torch.long)
        ids = ids.repeat_interleave(num_images_per_prompt)
        return ids, len(ids)

    def prepare_latents(
        self,
        shape: tuple[int, ...],
        generator: torch.Generator | None,
        device: torch.device,
        latents: torch.Tensor | None = None,
        scheduler=None,
    ) -> torch.Tensor:
        """The initial noise `shape` (b, c, h, w) or (b, c, t, h, w), float32 on `device`, times the init_noise_sigma
        of `scheduler` (default the pipeline's; its timesteps set): `latents` (checked against `shape`), or drawn
        on the CPU from `generator` (the same samples on any device), frame-correlated for a video model trained
        so (`objectives.draw_noise`)."""
        if latents is None:
            latents = draw_noise(shape, self.transformer.config.frame_noise_correlation, generator)
        elif tuple(latents.shape) != shape:
            raise ValueError(
                f"latents must have shape {shape}, {self._latents_layout} of the samples asked for "
                f"(labels x num_images_per_prompt, and the size), got {tuple(latents.shape)}"
            )
        return latents.to(device).float() * initial_noise_sigma(self.scheduler if scheduler is None else scheduler)

    @property
    def _latents_layout(self) -> str:
        return "(batch, channels, frames, height, width)" if self.is_video else "(batch, channels, height, width)"

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

    def resolve_extrapolation(
        self,
        height: int | None = None,
        width: int | None = None,
        num_frames: int | None = None,
        entropy_scaling: bool = False,
    ) -> Extrapolation:
        """The `Extrapolation` that `extrapolation="auto"` samples this size with (default: the trained size).

        For the scale s (the largest ratio over the axes of requested to trained tokens): "none" if s <= 1; else
        the method, entropy_scaling and options of the band of `default_extrapolation` (or
        `FALLBACK_EXTRAPOLATION`) that covers s, among those of the nearest aspect where bands record one
        (`axialrope.models.extrapolation_bands.select_extrapolation`), the last band beyond them all. A
        sin-cos model gets "none" with the band's entropy_scaling.
        `entropy_scaling=True` turns entropy scaling on in any case.
        """
        return self._auto_extrapolation(
            self._token_grid(self._sample_shape(height, width, num_frames)), entropy_scaling
        )

    def _auto_extrapolation(self, grid: Sequence[int], entropy_scaling: bool = False) -> Extrapolation:
        """`resolve_extrapolation` for a token grid."""
        if not isinstance(entropy_scaling, bool):
            raise TypeError(f"entropy_scaling must be a bool, got {type(entropy_scaling).__name__}")
        bands = self.config.get("default_extrapolation") or FALLBACK_EXTRAPOLATION
        chosen = select_extrapolation(bands, self.transformer.base_grid, grid)  # by scale and aspect
        if self.transformer.rope is None:
            # DiTExtrapolation refuses RoPE methods on absolute positions; the band's logit scaling still applies
            chosen = Extrapolation("none", entropy_scaling=chosen.entropy_scaling)
        return dataclasses.replace(chosen, entropy_scaling=chosen.entropy_scaling or entropy_scaling)

    def _scheduler(self, scheduler) -> object:
        """The scheduler of one call: the pipeline's own (None), a fresh one by name, or an instance; each
        checked against the model's objective."""
        if scheduler is None:
            scheduler = self.scheduler
        elif isinstance(scheduler, str):
            return make_scheduler(scheduler, self.scheduler)  # unknown or unfitting names: ValueError listing them
        check_scheduler(scheduler, self.config.objective)
        return scheduler

    def _callback_tensor_names(self, callback, tensor_inputs) -> list[str]:
        """The tensor names a `callback_on_step_end` receives, checked; diffusers' callback objects name their own."""
        if isinstance(callback, (PipelineCallback, MultiPipelineCallbacks)):
            tensor_inputs = callback.tensor_inputs
        if callback is not None and not callable(callback):
            raise TypeError(
                f"callback_on_step_end must be callable as (pipe, step, timestep, callback_kwargs), "
                f"got {type(callback).__name__}"
            )
        if isinstance(tensor_inputs, str) or not isinstance(tensor_inputs, Sequence):
            raise ValueError(
                f"callback_on_step_end_tensor_inputs must be a list of names from "
                f"{self._callback_tensor_inputs}, got {tensor_inputs!r}"
            )
        unknown = [name for name in tensor_inputs if name not in self._callback_tensor_inputs]
        if unknown:
            raise ValueError(
                f"callback_on_step_end_tensor_inputs must be in {self._callback_tensor_inputs}, but found {unknown}"
            )
        return list(tensor_inputs)

    def _run_callback(self, callback, tensor_inputs: list[str], step: int, timestep, latents: torch.Tensor):
        """Call `callback` as diffusers pipelines do; a "latents" it returns replaces the sampler state."""
        available = {"latents": latents}
        outputs = callback(self, step, timestep, {name: available[name] for name in tensor_inputs})
        if outputs is None:
            return latents
        if not isinstance(outputs, dict):
            raise TypeError(
                f"callback_on_step_end must return a dict of tensors (or None), got {type(outputs).__name__}"
            )
        replaced = outputs.pop("latents", latents)
        if not isinstance(replaced, torch.Tensor) or replaced.shape != latents.shape:
            got = tuple(replaced.shape) if isinstance(replaced, torch.Tensor) else type(replaced).__name__
            raise ValueError(
                f"callback_on_step_end returned latents of shape {got}; they must keep {tuple(latents.shape)}"
            )
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
        num_images_per_prompt: int = 1,
        generator: torch.Generator | None = None,
        latents: torch.Tensor | None = None,
        output_type: str = "pil",
        return_dict: bool = True,
        callback_on_step_end=None,
        callback_on_step_end_tensor_inputs: Sequence[str] = ("latents",),
        batch_size: int = 1,
        extrapolation: str | Extrapolation | None = AUTO,
        entropy_scaling: bool = False,
        scheduler=None,
    ) -> AxialDiTPipelineOutput | tuple:
        """Sample images (or videos) of one size; diffusers' arguments first, axialrope's own after them.

        Args:
            class_labels: ids or names; None samples unconditionally (`batch_size` x num_images_per_prompt).
            height, width, num_frames: pixels (frames); default the trained size. num_frames only for video.
            num_inference_steps, guidance_scale (0 .. 100; 1: none), num_images_per_prompt, generator (draws
                the noise on the CPU, and a stochastic scheduler's), output_type ("pil", "np", "pt", "latent"),
                return_dict, callback_on_step_end, callback_on_step_end_tensor_inputs: as in diffusers.
            latents: the initial noise (b, c, h, w) or (b, c, t, h, w), standard normal, instead of drawing it.
            batch_size: samples when class_labels is None.
            extrapolation: "auto" (`resolve_extrapolation`), a method name of `axialrope.extrapolation`, either
                with "+entropy" (as the CLI's --extrapolation), or an `Extrapolation`.
            entropy_scaling: also scale attention logits by sqrt(log N / log N_train).
            scheduler: a name of `schedulers.SCHEDULERS` for the model's objective or a diffusers scheduler
                instance; default the pipeline's own.
        """
        # 1. Check inputs, before any work
        shape = self._checked_shape(
            class_labels,
            height,
            width,
            num_frames,
            num_inference_steps,
            guidance_scale,
            num_images_per_prompt,
            latents,
            output_type,
            callback_on_step_end,
            callback_on_step_end_tensor_inputs,
            batch_size,
        )
        tensor_inputs = self._callback_tensor_names(callback_on_step_end, callback_on_step_end_tensor_inputs)
        guidance_scale = float(guidance_scale)
        labels, batch = self.prepare_class_labels(class_labels, batch_size, num_images_per_prompt)
        grid = self._token_grid(shape)
        method = make_extrapolation(
            extrapolation, entropy_scaling, auto=lambda entropy_scaling: self._auto_extrapolation(grid, entropy_scaling)
        )
        sampler = self._scheduler(scheduler)
        transformer, device = self.transformer, self._execution_device
        # checks the method against the model and the grid now; t = timestep / num_train_timesteps, 1 = pure noise
        plan = DiTExtrapolation(transformer, method, Timestep(at_noise=sampler.config.num_train_timesteps), grid)

        # 2. Timesteps and initial noise (a scheduler's init_noise_sigma may depend on its timesteps)
        sampler.set_timesteps(num_inference_steps, device=device)
        timesteps = sampler.timesteps
        latents = self.prepare_latents(
            (batch, transformer.config.in_channels, *shape), generator, device, latents, sampler
        )
        labels = None if labels is None else labels.to(device)
        step_kwargs = scheduler_step_kwargs(sampler, generator)

        # 3. Denoising loop: the guided prediction (each forward plans the RoPE of its grid and timestep), the
        # scheduler's step; the method is on the model for this loop only
        with plan.attach(), self.progress_bar(total=num_inference_steps) as progress_bar:
            for i, t in enumerate(timesteps):
                latent_model_input = scaled_model_input(sampler, latents, t)
                noise_pred = guided_prediction(
                    transformer, latent_model_input, t, labels, guidance_scale, transformer.null_class
                )
                latents = sampler.step(noise_pred, t, latents, **step_kwargs).prev_sample
                if callback_on_step_end is not None:
                    latents = self._run_callback(callback_on_step_end, tensor_inputs, i, t, latents)
                # a second-order scheduler (Heun) calls the model twice per step: the bar counts steps
                if i == len(timesteps) - 1 or (i + 1) % sampler.order == 0:
                    progress_bar.update()

        # 4. Check and convert the result
        if not torch.isfinite(latents).all():
            raise ValueError(
                f"sampling gave values that are not finite (NaN or inf) with guidance_scale={guidance_scale}, "
                f"extrapolation {method.method}{' + entropy scaling' if method.entropy_scaling else ''} and "
                f"{num_inference_steps} steps of {type(sampler).__name__}: lower guidance_scale, or check latents "
                "and the model's weights"
            )
        result = self.postprocess(latents, output_type)
        self.maybe_free_model_hooks()
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

__all__ = ["AxialDiTPipeline", "AxialDiTPipelineOutput", "OUTPUT_TYPES"]
