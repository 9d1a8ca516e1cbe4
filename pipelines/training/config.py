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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from axialrope.validation import is_int, is_real

from ..data.buckets import Bucket
from ..data.photographs import check_available
from ..data.scenes import SceneConfig
from ..dit.bundled import resolve_model
from ..dit.model_files import check_model_folder
from ..evaluation.calibrate import check_scales, target_sizes
from ..limits import MAX_CONFIG_VALUES, check_count, check_guidance_scale, read_small_file
from ..memory import check_shuffle, check_steps
from ..paths import check_output_folder, check_outside, check_text_path, write_text_atomically
from .checkpoints import checkpoint_step
from .tracking import trackers_for

DATA_KINDS = ("shapes", "textures", "photographs", "moving_shapes", "image_folder", "video_folder")
VIDEO_DATA = ("moving_shapes", "video_folder")
FOLDER_DATA = ("image_folder", "video_folder")
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
        write_text_atomically(path, yaml.safe_dump(self.run_dict(), sort_keys=False))

    # -- checks ------------------------------------------------------------------------------

    def validate(self) -> TrainConfig:
        """ValueError (naming the field) for any bad value; checks that need no data or model. Each field's own
        rule first (FIELD_RULES, in the order of the fields), then the rules between fields (RELATIONS)."""
        for name, rule in FIELD_RULES.items():
            rule(name, getattr(self, name))
        for relation in RELATIONS:
            relation(self)
        return self


# -- the rule of each field: rule(name, value) raises a ValueError naming the field ----------

Rule = Callable[[str, Any], None]


def _one_of(choices: Sequence[str]) -> Rule:
    def rule(name: str, value: Any) -> None:
        if value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")

    return rule


def _data(name: str, value: Any) -> None:
    """One of DATA_KINDS, whose package is installed (photographs: scikit-image)."""
    _one_of(DATA_KINDS)(name, value)
    if value == "photographs":
        check_available()  # a missing package is a line, as for the trackers


def _model_choice(registry: str) -> Rule:
    """One of a registry of `axialrope.models` (DIT_SIZES, POSITION_ENCODINGS), read when a config is checked."""

    def rule(name: str, value: Any) -> None:
        import axialrope.models  # heavy: keeps --help fast

        _one_of(tuple(getattr(axialrope.models, registry)))(name, value)

    return rule


def _integer(minimum: int, optional: bool = False) -> Rule:
    """An integer >= minimum (optional: or None)."""

    def rule(name: str, value: Any) -> None:
        if value is None and optional:
            return
        if not is_int(value) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        check_count(value, name)  # beyond it, float and int64 arithmetic overflow

    return rule


def _steps(optional: bool = False) -> Rule:
    """Sampler steps: an integer >= 1 whose schedule fits in memory (optional: or None)."""

    def rule(name: str, value: Any) -> None:
        _integer(1, optional)(name, value)
        if value is not None:
            check_steps(value, name)

    return rule


def _non_negative(name: str, value: Any) -> None:
    if not is_real(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")


def _positive(name: str, value: Any) -> None:
    _non_negative(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


def _below_one(name: str, value: Any) -> None:
    """A share or a decay: in [0, 1)."""
    _non_negative(name, value)
    if not value < 1:
        raise ValueError(f"{name} must be below 1, got {value!r}")


def _guidance(name: str, value: Any) -> None:
    _non_negative(name, value)
    check_guidance_scale(value)


def _boolean(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")


def _sizes(name: str, value: Any) -> None:
    if not value:
        raise ValueError(f"{name} must name at least one size")


def _scene_rotation(name: str, value: Any) -> None:
    try:
        SceneConfig(rotation=value)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def _frame_noise_correlation(name: str, value: Any) -> None:
    from axialrope.models.axial_dit.model import check_frame_noise_correlation  # heavy: keeps --help fast

    check_frame_noise_correlation(value, is_video=True)


def _init_from(name: str, value: Any) -> None:
    """None, or a bundled model name or a folder whose weights are whole: a truncated or mismatched model fails
    here, not after the data is read."""
    if value is None:
        return
    from ..dit.runs import check_run_part  # heavy: keeps --help fast

    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a model name or folder, got {value!r}")
    check_text_path(value, name)
    folder = resolve_model(value)
    if not folder.is_dir():
        raise ValueError(f"{name} {value!r} is neither a bundled model name nor an existing folder")
    if not check_run_part(folder, name):
        check_model_folder(folder / "transformer" if (folder / "transformer").is_dir() else folder, name)


def _output_dir(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a folder path, got {value!r}")
    check_output_folder(value, name)
    check_output_folder(Path(value) / "checkpoints", name)  # a file there, or read-only


def _resume(name: str, value: Any) -> None:
    if value is None or value == "latest":
        return
    if not isinstance(value, str) or not Path(value).is_dir():
        raise ValueError(f"{name} must be 'latest' or an existing checkpoint folder, got {value!r}")
    checkpoint_step(value)  # a name like checkpoint-000500


def _report_to(name: str, value: Any) -> None:
    """A tracker name whose tracker is installed (`tracking.trackers_for`)."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a tracker name, got {value!r}")
    trackers_for(value)


def _validation_scales(name: str, value: Any) -> None:
    if (
        not isinstance(value, (list, tuple))
        or any(not is_real(s) or not 1 < s < math.inf for s in value)
        or len(set(value)) != len(value)
    ):
        raise ValueError(
            f"{name} must be distinct finite numbers above 1 (multiples of the trained side), got {value!r}"
        )


def _calibrate_scales(name: str, value: Any) -> None:
    if value is not None:
        check_scales(value, name)


def _no_own_rule(name: str, value: Any) -> None:
    """A flag (any value reads as true or false), or a field that only RELATIONS check."""


FIELD_RULES: dict[str, Rule] = {
    "data": _data,
    "data_dir": _no_own_rule,  # RELATIONS: given exactly with the folder data kinds
    "resolution": _sizes,  # RELATIONS: each size parsed, and divisible by the patch
    "frames": _integer(1),
    "random_flip": _no_own_rule,
    "dataset_size": _integer(1),  # RELATIONS: an epoch's order fits in memory
    "scene_rotation": _scene_rotation,
    "num_workers": _integer(0),
    "model_size": _model_choice("DIT_SIZES"),
    "position_encoding": _model_choice("POSITION_ENCODINGS"),
    "rope_theta": _no_own_rule,  # RELATIONS: one number, or one per axis of the data
    "patch_size": _integer(1),
    "temporal_patch_size": _integer(1),
    "init_from": _init_from,
    "class_conditional": _no_own_rule,
    "label_dropout": _below_one,
    "objective": _one_of(OBJECTIVES),
    "timestep_sampling": _one_of(TIMESTEP_SAMPLINGS),
    "frame_noise_correlation": _frame_noise_correlation,
    "max_steps": _integer(1),
    "batch_size": _integer(1),
    "gradient_accumulation_steps": _integer(1),
    "learning_rate": _positive,
    "lr_scheduler": _one_of(LR_SCHEDULERS),
    "lr_warmup_steps": _integer(0),
    "adam_beta1": _below_one,
    "adam_beta2": _below_one,
    "weight_decay": _non_negative,
    "max_grad_norm": _non_negative,
    "mixed_precision": _one_of(MIXED_PRECISIONS),
    "ema_decay": _below_one,
    "output_dir": _output_dir,
    "seed": _integer(0),
    "checkpointing_steps": _integer(1),
    "checkpoints_total_limit": _integer(1, optional=True),
    "resume": _resume,
    "overwrite_output_dir": _boolean,
    "log_every": _integer(1),
    "sample_steps": _steps(),
    "samples_per_class": _integer(1),
    "guidance_scale": _guidance,
    "report_to": _report_to,
    "validation_steps": _integer(1, optional=True),
    "validation_scales": _validation_scales,
    "validation_num_inference_steps": _steps(optional=True),
    "calibrate_scales": _calibrate_scales,
}


# -- the rules between fields, once each field passed its own --------------------------------


def _overwrite_or_resume(config: TrainConfig) -> None:
    if config.overwrite_output_dir and config.resume is not None:
        raise ValueError("overwrite_output_dir starts the run over and resume continues it: give one of them")


def _scene_rotation_needs_shapes(config: TrainConfig) -> None:
    if config.scene_rotation != 0 and config.data not in ("shapes", "moving_shapes"):
        raise ValueError(f"scene_rotation is only read with data=shapes or moving_shapes, got data={config.data!r}")


def _frame_noise_needs_video(config: TrainConfig) -> None:
    if config.frame_noise_correlation and not config.is_video:
        raise ValueError(
            f"frame_noise_correlation needs video data ({', '.join(VIDEO_DATA)}), got data={config.data!r}"
        )


def _rope_theta_per_axis(config: TrainConfig) -> None:
    axes, theta = (3 if config.is_video else 2), config.rope_theta
    if (
        not isinstance(theta, (list, tuple))
        or len(theta) not in (1, axes)
        or any(not is_real(v) or not 1 < v < math.inf for v in theta)
    ):
        raise ValueError(f"rope_theta must be one number above 1 or {axes} (one per axis), got {theta!r}")


def _data_dir_with_folder_data(config: TrainConfig) -> None:
    if config.data in FOLDER_DATA:
        if not config.data_dir:
            raise ValueError(f"data_dir is required with data={config.data!r}")
        check_text_path(config.data_dir, "data_dir")  # config.yaml records it
    elif config.data_dir:
        raise ValueError(f"data_dir is only read with data=image_folder or video_folder, got data={config.data!r}")


def _output_outside_data(config: TrainConfig) -> None:
    if config.data in FOLDER_DATA:  # samples and checkpoints written among the images would be read as data
        check_outside(config.output_dir, "output_dir", config.data_dir, "data_dir")


def _sizes_fit_the_patch(config: TrainConfig) -> None:
    try:
        buckets = config.buckets
    except ValueError as error:
        raise ValueError(f"resolution: {error}") from None
    for bucket in buckets:
        for axis, size in (("height", bucket.height), ("width", bucket.width)):
            if size % config.patch_size:
                raise ValueError(
                    f"resolution {bucket}: {axis} {size} is not divisible by patch_size {config.patch_size}"
                )
        if bucket.frames is not None and bucket.frames % config.temporal_patch_size:
            raise ValueError(
                f"resolution {bucket}: {bucket.frames} frames are not divisible by "
                f"temporal_patch_size {config.temporal_patch_size}"
            )


def _epoch_order_fits(config: TrainConfig) -> None:
    if config.data not in FOLDER_DATA:  # a folder's items are bounded by its files
        check_shuffle(config.dataset_size, config.batch_size, "dataset_size")


def _validation_scales_need_steps(config: TrainConfig) -> None:
    if config.validation_scales and config.validation_steps is None:
        raise ValueError("validation_scales is only read with validation_steps: give --validation-steps N")


def _validation_sizes_differ(config: TrainConfig) -> None:
    from .validation import validation_sizes  # heavy: keeps --help fast

    validation_sizes(config)  # scales that round to the trained size, or to one another's: refused now


def _calibration_sizes_differ(config: TrainConfig) -> None:
    if config.calibrate_scales is not None:
        bucket, patch = config.buckets[0], (config.patch_size, config.patch_size)
        target_sizes((bucket.height, bucket.width), patch, config.calibrate_scales, "calibrate_scales")


def _calibration_needs_image_folder(config: TrainConfig) -> None:
    if config.calibrate_scales is not None and config.data != "image_folder":
        raise ValueError(
            f"calibrate_scales measures on the training folder: it needs data=image_folder, "
            f"got data={config.data!r} (calibrate later with axialrope calibrate --reference-dir)"
        )


RELATIONS: tuple[Callable[[TrainConfig], None], ...] = (
    _overwrite_or_resume,
    _scene_rotation_needs_shapes,
    _frame_noise_needs_video,
    _rope_theta_per_axis,
    _data_dir_with_folder_data,
    _output_outside_data,
    _sizes_fit_the_patch,
    _epoch_order_fits,
    _validation_scales_need_steps,
    _validation_sizes_differ,
    _calibration_sizes_differ,
    _calibration_needs_image_folder,
)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a .yaml/.yml or .json file; ValueError for a file too large, malformed, or whose
    YAML aliases expand past MAX_CONFIG_VALUES values."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise ValueError(f"config file must end in .yaml, .yml or .json, got {str(path)!r}")
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
