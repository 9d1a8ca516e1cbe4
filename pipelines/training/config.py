"""The training configuration: one dataclass, loadable from YAML or JSON, checked before training.

Every field is also a command-line flag of `axialrope train` (`--max-steps 200`); a config
file gives a base (`--config run.yaml`) that flags override. `validate` rejects bad values
with a ValueError naming the field, before any data is read or any model is built.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from axialrope.validation import is_int, is_real

from ..data.buckets import Bucket
from ..paths import check_output_folder

DATA_KINDS = ("shapes", "textures", "photographs", "moving_shapes", "image_folder", "video_folder")
VIDEO_DATA = ("moving_shapes", "video_folder")
OBJECTIVES = ("flow", "ddpm")
TIMESTEP_SAMPLINGS = ("logit_normal", "uniform")
MIXED_PRECISIONS = ("no", "bf16", "fp16")
LR_SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")
# fields that say how this invocation starts, not what the run is: config.yaml and checkpoints record them unset
INVOCATION_FIELDS = ("resume", "overwrite_output_dir")


def _help(text: str, **kwargs) -> Any:
    return field(metadata={"help": text}, **kwargs)


@dataclass
class TrainConfig:
    """Everything a training run depends on. Defaults: a tiny image DiT on shapes at 32x32, a few minutes on CPU."""

    # data
    data: str = _help(f"training data: one of {', '.join(DATA_KINDS)}", default="shapes")
    data_dir: str | None = _help("folder of images or videos (data=image_folder or video_folder)", default=None)
    resolution: list[str] = _help(
        "training size(s) 'N', 'HxW' or 'TxHxW'; several make buckets, each batch from one",
        default_factory=lambda: ["32"],
    )
    frames: int = _help("frames per clip for video data (unless a resolution says TxHxW)", default=8)
    random_flip: bool = _help("flip folder items horizontally at random", default=False)
    dataset_size: int = _help("items per epoch of the procedural data", default=1_000_000)
    scene_rotation: float = _help(
        "procedural data: largest rotation of a shape in turns (0: every shape upright, 1: any angle)", default=0.0
    )
    num_workers: int = _help("DataLoader worker processes", default=0)
    # model
    model_size: str = _help("DiT size from the models registry (tiny, mini, mini-deep, S, B, XL)", default="tiny")
    position_encoding: str = _help("rope (axial RoPE) or sincos (absolute baseline)", default="rope")
    rope_theta: list[float] = _help(
        "RoPE base: one for all axes, or one per axis (y x for images, t y x for video)",
        default_factory=lambda: [10000.0],
    )
    patch_size: int = _help("spatial patch size p (tokens are p x p pixels)", default=2)
    temporal_patch_size: int = _help("temporal patch size r for video", default=1)
    init_from: str | None = _help(
        "start from these weights: a bundled model name, a pipeline or a model folder, a training run (its "
        "pipeline) or one of its checkpoints; an image model is inflated into a video model "
        "(axialrope.models.axial_dit.inflate)",
        default=None,
    )
    class_conditional: bool = _help("condition on class labels when the data has them", default=True)
    label_dropout: float = _help("probability of replacing a label by the null class (for guidance)", default=0.1)
    # objective
    objective: str = _help("flow (rectified flow, velocity target) or ddpm (epsilon target)", default="flow")
    timestep_sampling: str = _help("flow only: logit_normal (SD3) or uniform sigma", default="logit_normal")
    frame_noise_correlation: float = _help(
        "video only: share of the noise variance common to all frames, in [0, 1) (PYoCo's mixed noise "
        "prior; the model's config keeps it for sampling)",
        default=0.0,
    )
    # optimisation
    max_steps: int = _help("optimizer steps", default=1000)
    batch_size: int = _help("batch size per process", default=16)
    gradient_accumulation_steps: int = _help("micro-batches per optimizer step", default=1)
    learning_rate: float = _help("AdamW peak learning rate (suits tiny; lower it for S and up)", default=3e-3)
    lr_scheduler: str = _help(f"one of {', '.join(LR_SCHEDULERS)} (diffusers get_scheduler)", default="cosine")
    lr_warmup_steps: int = _help("linear warmup steps", default=100)
    adam_beta1: float = _help("AdamW beta1", default=0.9)
    adam_beta2: float = _help("AdamW beta2", default=0.999)
    weight_decay: float = _help("AdamW weight decay", default=0.0)
    max_grad_norm: float = _help("gradient clipping norm (0 disables)", default=1.0)
    mixed_precision: str = _help("no, bf16 or fp16 (fp16 needs a GPU)", default="no")
    ema_decay: float = _help("EMA decay ceiling (with EMA warmup); 0 disables EMA", default=0.999)
    # run
    output_dir: str = _help("where checkpoints, models, samples and logs go", default="outputs/shapes-tiny")
    seed: int = _help("seed of data order, noise, initial weights", default=0)
    checkpointing_steps: int = _help("save_state every N optimizer steps", default=250)
    checkpoints_total_limit: int | None = _help("keep at most this many checkpoints (none: keep all)", default=2)
    resume: str | None = _help("'latest' or a checkpoint folder of this run to continue from", default=None)
    overwrite_output_dir: bool = _help(
        "start over in an output_dir that holds a run, deleting that run's files (else it is refused)", default=False
    )
    log_every: int = _help("write the loss log every N steps", default=10)
    sample_steps: int = _help("sampler steps for the final sample grid", default=30)
    samples_per_class: int = _help("samples per class (or per row) in the final grid", default=8)
    guidance_scale: float = _help("classifier-free guidance of the final samples (1: none)", default=1.0)
    # trackers and validation samples (tracking.py, validation.py)
    report_to: str = _help(
        "experiment trackers: tensorboard, wandb, all (those installed), none, or auto (tensorboard where "
        "installed, else none); events in output_dir/logs",
        default="auto",
    )
    validation_steps: int | None = _help(
        "every N steps, sample the validation classes with the EMA weights into output_dir/validation and the "
        "trackers (none: never)",
        default=None,
    )
    validation_scales: list[float] = _help(
        "with validation_steps: also sample at these multiples (> 1) of the trained side, extrapolation auto",
        default_factory=list,
    )
    validation_num_inference_steps: int | None = _help(
        "sampler steps of the validation samples (none: sample_steps)", default=None
    )
    calibrate_scales: list[float] | None = _help(
        "at the end, run `axialrope calibrate` at these scales (side / trained side) on data_dir and record the "
        "picks as the run's default extrapolation (data=image_folder)",
        default=None,
    )

    # -- derived values ----------------------------------------------------------------------

    @property
    def is_video(self) -> bool:
        return self.data in VIDEO_DATA

    @property
    def buckets(self) -> list[Bucket]:
        """The parsed resolutions; video buckets take `frames` unless they say TxHxW."""
        frames = self.frames if self.is_video else None
        buckets = [Bucket.parse(text, frames=frames) for text in self.resolution]
        if not self.is_video and any(b.frames is not None for b in buckets):
            raise ValueError(f"resolution: a TxHxW size needs video data, got data={self.data!r}")
        return buckets

    # -- loading -----------------------------------------------------------------------------

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """A config from a mapping of field names (as a YAML/JSON file holds); unknown keys are an error."""
        if not isinstance(values, dict):
            raise TypeError(f"a training config must be a mapping of field names, got {type(values).__name__}")
        names = cls.field_names()
        for key in values:
            if key not in names:
                close = difflib.get_close_matches(str(key), names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"unknown config key {key!r}{hint}")
        values = dict(values)
        if "resolution" in values:  # YAML reads `resolution: 32` as a number and a single size as a scalar
            sizes = values["resolution"] if isinstance(values["resolution"], list) else [values["resolution"]]
            values["resolution"] = [str(v) for v in sizes]
        return cls(**values)

    @classmethod
    def from_file(cls, path: str | Path) -> TrainConfig:
        """Read a .yaml/.yml or .json file."""
        return cls.from_dict(read_config_file(path))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def run_dict(self) -> dict[str, Any]:
        """What describes the run: every field but the INVOCATION_FIELDS (left at their defaults)."""
        defaults = {f.name: f.default for f in dataclasses.fields(self) if f.name in INVOCATION_FIELDS}
        return {**self.to_dict(), **defaults}

    def save(self, path: str | Path) -> None:
        """Write `run_dict()` as YAML (the file `from_file` reads back), atomically."""
        import yaml

        from ..paths import write_text_atomically

        write_text_atomically(path, yaml.safe_dump(self.run_dict(), sort_keys=False))

    # -- checks ------------------------------------------------------------------------------

    def validate(self) -> TrainConfig:
        """ValueError (naming the field) for any bad value; checks that need no data or model."""
        from axialrope.models import DIT_SIZES, POSITION_ENCODINGS  # the models package is heavy: import late

        choices = {
            "data": DATA_KINDS,
            "objective": OBJECTIVES,
            "timestep_sampling": TIMESTEP_SAMPLINGS,
            "mixed_precision": MIXED_PRECISIONS,
            "lr_scheduler": LR_SCHEDULERS,
            "model_size": tuple(DIT_SIZES),
            "position_encoding": tuple(POSITION_ENCODINGS),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        for name in (
            "frames",
            "dataset_size",
            "patch_size",
            "temporal_patch_size",
            "max_steps",
            "batch_size",
            "gradient_accumulation_steps",
            "checkpointing_steps",
            "log_every",
            "sample_steps",
            "samples_per_class",
        ):
            _check_int(self, name, minimum=1)
        for name in ("num_workers", "lr_warmup_steps", "seed"):
            _check_int(self, name, minimum=0)
        if self.checkpoints_total_limit is not None:
            _check_int(self, "checkpoints_total_limit", minimum=1)
        for name in (
            "learning_rate",
            "adam_beta1",
            "adam_beta2",
            "weight_decay",
            "max_grad_norm",
            "ema_decay",
            "label_dropout",
            "guidance_scale",
        ):
            value = getattr(self, name)
            if not is_real(value) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate!r}")
        for name in ("adam_beta1", "adam_beta2", "ema_decay", "label_dropout"):
            if not getattr(self, name) < 1:
                raise ValueError(f"{name} must be below 1, got {getattr(self, name)!r}")
        from ..limits import check_guidance_scale
        from ..memory import check_shuffle, check_steps

        check_guidance_scale(self.guidance_scale)
        if not isinstance(self.overwrite_output_dir, bool):
            raise ValueError(f"overwrite_output_dir must be true or false, got {self.overwrite_output_dir!r}")
        if self.overwrite_output_dir and self.resume is not None:
            raise ValueError("overwrite_output_dir starts the run over and resume continues it: give one of them")
        from ..data.scenes import SceneConfig

        try:
            SceneConfig(rotation=self.scene_rotation)
        except ValueError as error:
            raise ValueError(f"scene_rotation: {error}") from None
        if self.scene_rotation != 0 and self.data not in ("shapes", "moving_shapes"):
            raise ValueError(f"scene_rotation is only read with data=shapes or moving_shapes, got data={self.data!r}")
        from axialrope.models.axial_dit.model import check_frame_noise_correlation

        check_frame_noise_correlation(self.frame_noise_correlation, is_video=True)
        if self.frame_noise_correlation and not self.is_video:
            raise ValueError(
                f"frame_noise_correlation needs video data ({', '.join(VIDEO_DATA)}), got data={self.data!r}"
            )
        axes = 3 if self.is_video else 2
        if (
            not isinstance(self.rope_theta, (list, tuple))
            or len(self.rope_theta) not in (1, axes)
            or any(not is_real(v) or not 1 < v < math.inf for v in self.rope_theta)
        ):
            raise ValueError(f"rope_theta must be one number above 1 or {axes} (one per axis), got {self.rope_theta!r}")
        if self.data in ("image_folder", "video_folder"):
            if not self.data_dir:
                raise ValueError(f"data_dir is required with data={self.data!r}")
        elif self.data_dir:
            raise ValueError(f"data_dir is only read with data=image_folder or video_folder, got data={self.data!r}")
        if self.init_from is not None:
            from ..sampling.bundled import resolve_model
            from ..sampling.model_files import check_model_folder
            from ..sampling.runs import check_run_part

            if not isinstance(self.init_from, str) or not self.init_from:
                raise ValueError(f"init_from must be a model name or folder, got {self.init_from!r}")
            folder = resolve_model(self.init_from)
            if not folder.is_dir():
                raise ValueError(f"init_from {self.init_from!r} is neither a bundled model name nor an existing folder")
            # a truncated or mismatched model fails here, not after the data is read
            if not check_run_part(folder, "init_from"):
                check_model_folder(folder / "transformer" if (folder / "transformer").is_dir() else folder, "init_from")
        if not isinstance(self.output_dir, str) or not self.output_dir:
            raise ValueError(f"output_dir must be a folder path, got {self.output_dir!r}")
        check_output_folder(self.output_dir, "output_dir")
        check_output_folder(Path(self.output_dir) / "checkpoints", "output_dir")  # a file there, or read-only
        if self.resume is not None and self.resume != "latest":
            from .checkpoints import checkpoint_step

            if not isinstance(self.resume, str) or not Path(self.resume).is_dir():
                raise ValueError(f"resume must be 'latest' or an existing checkpoint folder, got {self.resume!r}")
            checkpoint_step(self.resume)  # a name like checkpoint-000500
        if not self.resolution:
            raise ValueError("resolution must name at least one size")
        try:
            buckets = self.buckets
        except ValueError as error:
            raise ValueError(f"resolution: {error}") from None
        for bucket in buckets:
            for axis, size in (("height", bucket.height), ("width", bucket.width)):
                if size % self.patch_size:
                    raise ValueError(
                        f"resolution {bucket}: {axis} {size} is not divisible by patch_size {self.patch_size}"
                    )
            if bucket.frames is not None and bucket.frames % self.temporal_patch_size:
                raise ValueError(
                    f"resolution {bucket}: {bucket.frames} frames are not divisible by "
                    f"temporal_patch_size {self.temporal_patch_size}"
                )
        if self.data not in ("image_folder", "video_folder"):  # a folder's items are bounded by its files
            check_shuffle(self.dataset_size, self.batch_size, "dataset_size")
        check_steps(self.sample_steps, "sample_steps")
        self._validate_tracking()
        if self.calibrate_scales is not None:
            from ..evaluation.calibrate import check_scales

            check_scales(self.calibrate_scales, "calibrate_scales")
            if self.data != "image_folder":
                raise ValueError(
                    f"calibrate_scales measures on the training folder: it needs data=image_folder, "
                    f"got data={self.data!r} (calibrate later with axialrope calibrate --reference-dir)"
                )
        return self

    def _validate_tracking(self) -> None:
        """The trackers named are installed; the validation settings are whole steps and scales above 1."""
        from ..memory import check_steps
        from .tracking import trackers_for

        if not isinstance(self.report_to, str):
            raise ValueError(f"report_to must be a tracker name, got {self.report_to!r}")
        trackers_for(self.report_to)
        for name in ("validation_steps", "validation_num_inference_steps"):
            if getattr(self, name) is not None:
                _check_int(self, name, minimum=1)
        if self.validation_num_inference_steps is not None:
            check_steps(self.validation_num_inference_steps, "validation_num_inference_steps")
        scales = self.validation_scales
        if (
            not isinstance(scales, (list, tuple))
            or any(not is_real(s) or not 1 < s < math.inf for s in scales)
            or len(set(scales)) != len(scales)
        ):
            raise ValueError(
                f"validation_scales must be distinct finite numbers above 1 (multiples of the trained "
                f"side), got {scales!r}"
            )
        if scales and self.validation_steps is None:
            raise ValueError("validation_scales is only read with validation_steps: give --validation-steps N")


def _check_int(config: TrainConfig, name: str, minimum: int) -> None:
    value = getattr(config, name)
    if not is_int(value) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a .yaml/.yml or .json file; ValueError for a file too large, malformed, or whose
    YAML aliases expand past MAX_CONFIG_VALUES values."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise ValueError(f"config file must end in .yaml, .yml or .json, got {str(path)!r}")
    import yaml

    from ..limits import read_small_file

    data = read_small_file(path, "config file")
    try:
        text = data.decode()
        values = json.loads(text) if suffix == ".json" else _load_yaml(text, str(path))
    except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as error:
        where = " ".join(str(error).split())  # the parser's position, on one line
        raise ValueError(f"config file {str(path)!r} is not valid {suffix[1:].upper()}: {where}") from None
    except RecursionError:
        raise ValueError(f"config file {str(path)!r} is nested too deeply for a config") from None
    if not isinstance(values, dict):
        raise ValueError(f"config file {str(path)!r} must hold a mapping of field names")
    return values


def _load_yaml(text: str, where: str) -> Any:
    """yaml.safe_load, once the document is known to expand to at most MAX_CONFIG_VALUES values: an alias
    repeats a whole value, so a few hundred bytes can stand for billions of them."""
    import yaml

    from ..limits import MAX_CONFIG_VALUES

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        sizes: dict[int, int] = {}

        def size(node, open_nodes: frozenset) -> int:  # values `node` expands to, each alias counted in full
            if id(node) in open_nodes:
                raise ValueError(f"config file {where!r}: a YAML alias refers to a value that holds it")
            if id(node) not in sizes:
                children = (
                    node.value
                    if isinstance(node, yaml.SequenceNode)
                    else ([n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else [])
                )
                inner = open_nodes | {id(node)}
                sizes[id(node)] = min(MAX_CONFIG_VALUES + 1, 1 + sum(size(child, inner) for child in children))
            return sizes[id(node)]

        if size(node, frozenset()) > MAX_CONFIG_VALUES:
            raise ValueError(
                f"config file {where!r} expands to more than {MAX_CONFIG_VALUES} values (YAML aliases "
                "repeat whole values); a training config has a few dozen"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()
