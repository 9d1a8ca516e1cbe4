"""`axialrope train`: every TrainConfig field as a flag, optionally on top of a YAML/JSON config.

axialrope train                                   # tiny image DiT on shapes at 32x32 -> outputs/shapes-tiny
axialrope train --config run.yaml --max-steps 50  # a file, with flags overriding it
accelerate launch --num_processes 2 -m axialrope.pipelines.cli train --max-steps 100
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from pathlib import Path

import yaml

from ..training.checkpoints import latest_checkpoint
from ..training.config import INVOCATION_FIELDS, TrainConfig, read_config_file
from .interrupts import interrupted
from .preflight import PREFLIGHT_ERRORS, usage_error


def _flag_kwargs(hint) -> dict:
    """argparse keyword arguments for a field of type `hint`."""
    args = typing.get_args(hint)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), hint) if optional else hint
    if base is bool:
        return {"action": argparse.BooleanOptionalAction}
    if typing.get_origin(base) is list:
        return {"nargs": "+", "type": typing.get_args(base)[0]}
    if optional:  # "none" spells None on the command line
        return {"type": lambda text, cast=base: None if text.lower() == "none" else cast(text)}
    return {"type": base}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="a .yaml/.yml/.json file of config fields; flags override it")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    hints = typing.get_type_hints(TrainConfig)
    for field in dataclasses.fields(TrainConfig):
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            dest=field.name,
            default=argparse.SUPPRESS,  # only flags actually given override the file and the defaults
            help=f"{field.metadata.get('help', '')} (default: {default})",
            **_flag_kwargs(hints[field.name]),
        )


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Defaults, then (on a resume) the run's config.yaml, then the config file, then the flags given."""
    values = read_config_file(args.config) if args.config else {}
    values.update({name: getattr(args, name) for name in TrainConfig.field_names() if hasattr(args, name)})
    if values.get("resume") is not None:  # a resume continues the run: what is not given again is the run's
        recorded = Path(values.get("output_dir", TrainConfig.output_dir)) / "config.yaml"
        if recorded.is_file():
            values = {**{k: v for k, v in read_config_file(recorded).items() if k not in INVOCATION_FIELDS}, **values}
    return TrainConfig.from_dict(values)


def run(args: argparse.Namespace) -> int:
    from ..training.loop import train  # heavy: keeps --help fast

    try:  # the pre-flight: every field, --output-dir, --init-from's files and --resume, before any work
        config = config_from_args(args).validate()
    except PREFLIGHT_ERRORS as error:
        return usage_error("train", error)
    if args.print_config:
        print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
        return 0
    try:
        result = train(config)
    except PREFLIGHT_ERRORS as error:  # train checks the folder, the data, the resume and memory before any work
        return usage_error("train", error)
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: say what the run kept
        return interrupted("train", stop, kept_by_run(config))
    except (RuntimeError, OSError) as error:  # during the run: a non-finite loss, a write that failed
        message = " ".join(str(error).split())
        if isinstance(error, OSError) and error.strerror:
            where = f" {error.filename!r}" if error.filename else ""
            message = (
                f"could not write{where}: {error.strerror}; the checkpoints already written are kept: "
                "continue with --resume latest once this is fixed"
            )
        print(f"axialrope train: {message}", file=sys.stderr)
        return 1
    if result.is_main_process:
        print(result_line(result))
    return 0


def kept_by_run(config) -> str:
    """What a stopped run kept: its last good checkpoint (and how to go on from it), or that it had none."""
    last = latest_checkpoint(Path(config.output_dir) / "checkpoints")
    if last is None:
        return f"no checkpoint had been saved yet; nothing half-written is left in {config.output_dir!r}"
    return (
        f"the last good checkpoint is {str(last)!r}; continue with --resume latest (nothing half-written is left, "
        "and the steps after that checkpoint will be trained again)"
    )


def result_line(result) -> str:
    """What a run did: this invocation's steps and time, and (after a resume) the run's totals."""
    done = f"final loss {result.final_loss:.4f}; outputs in {result.output_dir}"
    if not result.start_step:
        return f"trained {result.steps} steps in {result.seconds:.0f} s, {done}"
    return (
        f"trained {result.invocation_steps} steps (resumed at step {result.start_step}) in {result.seconds:.0f} s; "
        f"the run: {result.steps} steps in {result.total_seconds:.0f} s, {done}"
    )
