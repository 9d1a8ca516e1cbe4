"""Checks of a model folder before anything loads it: JSON that parses, safetensors that are whole,
weights that fit their config.json.

    check_model_folder("outputs/run/model_ema", "init_from")    # a DiT folder (save_pretrained)
    check_pipeline_folder("outputs/pipe", "--model")              # a pipeline folder (model_index.json)

Weights are read from safetensors only: a folder that holds only pickle weights (`*.bin`,
`*.pt`, `*.ckpt`) is refused, never unpickled. Only headers are read (names, shapes, sizes;
the file is never mapped), so the checks cost little even for a large model, and weights
that would not fit in memory are refused. A config.json whose depth disagrees with the
weights is refused before any model is built; then the config is built on the meta device
(no memory) to compare its tensors with the file's. Every failure is a ValueError naming
the argument, the file and what was expected.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import torch

from ..limits import MAX_SAFETENSORS_HEADER, read_small_file
from ..memory import check_fits

WEIGHTS = "diffusion_pytorch_model.safetensors"
WEIGHTS_INDEX = "diffusion_pytorch_model.safetensors.index.json"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
_BLOCK = re.compile(r"blocks\.(\d+)\.")


def read_json(path: Path, argument: str) -> Any:
    """The JSON in `path`; ValueError naming `argument` and the file if it is missing, malformed or too large
    (`limits.MAX_TEXT_FILE_BYTES`)."""
    if not path.is_file():
        raise ValueError(f"{argument}: {str(path)!r} is missing")
    try:
        return json.loads(read_small_file(path, argument).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{argument}: {str(path)!r} is not valid JSON: {error}") from None
    except RecursionError:
        raise ValueError(f"{argument}: {str(path)!r} is nested too deeply") from None


_DTYPE_BYTES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}


def safetensors_header(file: Path, argument: str) -> dict[str, tuple[tuple[int, ...], int]]:
    """Tensor name -> (shape, bytes) from a safetensors file's header, read without mapping the file.

    ValueError naming `argument` for a header that is not safetensors' (its length past
    `limits.MAX_SAFETENSORS_HEADER` or the file, malformed JSON, entries whose bytes do not match
    their shape) and for a file that is shorter (truncated) or longer than its tensors."""
    size = file.stat().st_size
    bad = f"{argument}: {str(file)!r} is truncated or corrupt"
    with file.open("rb") as handle:
        prefix = handle.read(8)
        length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
        if not 0 < length <= min(MAX_SAFETENSORS_HEADER, size - 8):
            raise ValueError(f"{bad} (a header of {length} bytes in a file of {size})")
        try:
            header = json.loads(handle.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise ValueError(f"{bad} (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise ValueError(f"{bad} (its header is not a JSON object)")
    tensors, end = {}, 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            shape, (start, stop) = tuple(entry["shape"]), entry["data_offsets"]
            count = math.prod(shape)
            valid = all(isinstance(n, int) and n >= 0 for n in (*shape, start, stop)) and (
                stop - start == count * _DTYPE_BYTES.get(entry["dtype"], (stop - start) // max(1, count))
            )
        except (TypeError, KeyError, ValueError):
            valid = False
        if not valid:
            raise ValueError(f"{bad} (its header entry for {name!r} is malformed)")
        tensors[name], end = (shape, stop - start), max(end, stop)
    if end != size - 8 - length:
        what = "truncated" if end > size - 8 - length else "longer than its tensors"
        raise ValueError(
            f"{argument}: {str(file)!r} is {what}: its tensors take {end} bytes after the header, the "
            f"file holds {size - 8 - length}"
        )
    return tensors


def weight_shapes(folder: Path, argument: str) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape from the safetensors header(s) of a diffusers model folder (headers only, never
    mapped); ValueError if the weights would not fit in memory."""
    if (folder / WEIGHTS_INDEX).is_file():
        index = read_json(folder / WEIGHTS_INDEX, argument)
        shards = sorted(set(index.get("weight_map", {}).values())) if isinstance(index, dict) else []
        if not shards or any(Path(s).name != s for s in shards):
            raise ValueError(f"{argument}: {str(folder / WEIGHTS_INDEX)!r} lists no safetensors shards")
        files = [folder / shard for shard in shards]
    elif (folder / WEIGHTS).is_file():
        files = [folder / WEIGHTS]
    else:
        pickles = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES) if folder.is_dir() else []
        hint = (
            (
                f"; it holds only pickle weights ({', '.join(pickles)}), which are never loaded because unpickling "
                "can run code: convert them to safetensors"
            )
            if pickles
            else ""
        )
        raise ValueError(f"{argument}: {str(folder)!r} has no {WEIGHTS}{hint}")
    shapes: dict[str, tuple[int, ...]] = {}
    total = 0
    for file in files:
        if not file.is_file():
            raise ValueError(f"{argument}: weights shard {str(file)!r} is missing")
        for key, (shape, size) in safetensors_header(file, argument).items():
            shapes[key], total = shape, total + size
    check_fits(total, "cpu", f"{argument}: the weights in {str(folder)!r}", "load them on a machine with more memory")
    return shapes


def check_model_folder(folder: str | Path, argument: str = "model") -> dict[str, Any]:
    """ValueError unless `folder` holds a DiT that loads as its config.json says; returns the config.

    Checked: config.json is a JSON object naming a DiT that can be built; the weights are
    safetensors, whole; and they fit the config (`check_config_fits`).
    """
    folder = Path(folder)
    config = read_json(folder / "config.json", argument)
    if not isinstance(config, dict):
        raise ValueError(f"{argument}: {str(folder / 'config.json')!r} must hold a JSON object")
    if config.get("_class_name", "DiT") != "DiT":
        raise ValueError(f"{argument}: {str(folder)!r} holds a {config.get('_class_name')!r}, not an axialrope DiT")
    check_config_fits(config, weight_shapes(folder, argument), argument, folder / "config.json", str(folder))
    return config


def check_config_fits(
    config: dict[str, Any], shapes: dict[str, tuple[int, ...]], argument: str, config_file: Path, weights: str
) -> None:
    """ValueError naming `argument` unless a DiT `config` (a config.json's dict) builds exactly the tensors
    `shapes` (name -> shape of the weights, `weights` naming where they are). A depth that disagrees is named
    before any model is built; then the config is built on the meta device (no memory) to compare shapes."""

    from axialrope.models import DiT  # heavy: keeps --help fast

    blocks = {int(m.group(1)) for k in shapes if (m := _BLOCK.match(k))}
    if blocks and len(blocks) != config.get("depth"):  # before a model of that depth is built
        raise ValueError(
            f"{argument}: {str(config_file)!r} says depth {config.get('depth')} but the weights hold "
            f"{len(blocks)} blocks; the config does not belong to these weights"
        )
    try:
        with torch.device("meta"):  # shapes only: no memory, no initialisation cost
            model = DiT.from_config({k: v for k, v in config.items() if not k.startswith("_")})
    except (TypeError, ValueError) as error:
        raise ValueError(f"{argument}: {str(config_file)!r} does not describe a valid DiT: {error}") from None
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    if shapes == expected:
        return
    missing, unexpected = sorted(set(expected) - set(shapes)), sorted(set(shapes) - set(expected))
    reshaped = sorted(k for k in set(expected) & set(shapes) if expected[k] != shapes[k])
    details = []
    if missing:
        details.append(f"{len(missing)} tensors missing from the weights (e.g. {missing[0]})")
    if unexpected:
        details.append(f"{len(unexpected)} tensors the config has no place for (e.g. {unexpected[0]})")
    if reshaped:
        key = reshaped[0]
        details.append(f"{len(reshaped)} of another shape (e.g. {key}: weights {shapes[key]}, config {expected[key]})")
    raise ValueError(f"{argument}: the weights in {weights!r} do not fit {str(config_file)!r}: {'; '.join(details)}")


def check_pipeline_folder(folder: str | Path, argument: str = "--model") -> None:
    """ValueError unless `folder` is a pipeline folder whose JSON parses and whose transformer passes
    `check_model_folder`."""
    folder = Path(folder)
    index = read_json(folder / "model_index.json", argument)
    if not isinstance(index, dict):
        raise ValueError(f"{argument}: {str(folder / 'model_index.json')!r} must hold a JSON object")
    for component in ("transformer", "scheduler"):
        entry = index.get(component)
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(e, str) for e in entry)):
            raise ValueError(f"{argument}: model_index.json must name its {component} as [library, class]")
    library = index["transformer"][0]
    if library != "axialrope" and not library.startswith("axialrope."):
        raise ValueError(
            f"{argument}: model_index.json names a transformer from {library!r}; "
            "an axialrope pipeline's transformer comes from axialrope.models"
        )
    if index["scheduler"][0] != "diffusers":
        raise ValueError(
            f"{argument}: model_index.json names a scheduler from {index['scheduler'][0]!r}, not diffusers"
        )
    scheduler = folder / "scheduler" / "scheduler_config.json"
    if not isinstance(read_json(scheduler, argument), dict):
        raise ValueError(f"{argument}: {str(scheduler)!r} must hold a JSON object")
    check_model_folder(folder / "transformer", argument)


__all__ = ["check_config_fits", "check_model_folder", "check_pipeline_folder", "read_json", "weight_shapes"]
