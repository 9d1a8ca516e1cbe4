"""Training state as safetensors and JSON, never pickle: optimizer, LR schedule, EMA, RNG states.

    write_state(folder / "optimizer.safetensors", optimizer.state_dict())
    optimizer.load_state_dict(read_state(folder / "optimizer.safetensors"))

`write_state` stores nested dicts, lists, tuples, numbers, strings, None, numpy arrays and
tensors: the tensors in a safetensors file, the rest as JSON in which a tensor is a reference
(`{"__tensor__": "3"}`), in the file's own metadata (a `.json` path: no tensors). `read_state`
builds only these node types: reading a file can fail, never run code (no pickle, no type named
in a file is looked up). `rng_states` / `set_rng_states` capture and restore a process's global
generators (torch CPU and CUDA, Python, numpy); `check_rng_states` refuses a corrupt state
before anything changes.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

_TENSOR, _TUPLE, _ITEMS, _ARRAY = "__tensor__", "__tuple__", "__items__", "__ndarray__"
_STRUCTURE = "structure"  # the safetensors metadata key holding the JSON structure
_ARRAY_KINDS = "biuf"  # numpy arrays of bools, ints, unsigned ints and floats only


class StateFileError(ValueError):
    """A state file is missing, truncated, corrupt or not one `write_state` wrote."""


def encode(value: Any, tensors: dict[str, torch.Tensor], path: str = "", seen: dict[int, str] | None = None) -> Any:
    """`value` as a JSON-able structure; its tensors are moved (CPU, contiguous) into `tensors`.

    A tensor is stored under its path in `value` ("state.0.exp_avg", a parameter's own name
    for a state dict), so a checkpoint's safetensors files read well with any tool. The same
    tensor object met twice is stored once (safetensors refuses aliases).
    """
    seen = {} if seen is None else seen  # id(tensor) -> its key
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor):
        if id(value) not in seen:
            key = path or "tensor"
            if key in tensors:  # "a.b" the key and "a" -> "b" nested would collide
                key = f"{key}#{len(tensors)}"
            tensors[key], seen[id(value)] = value.detach().cpu().contiguous(), key
        return {_TENSOR: seen[id(value)]}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(f"cannot store a numpy array of dtype {value.dtype} without pickle")
        return {_ARRAY: value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        return encode(value.item(), tensors, path, seen)
    join = (lambda part: f"{path}.{part}") if path else str
    if isinstance(value, tuple):
        return {_TUPLE: [encode(v, tensors, join(i), seen) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, tensors, join(i), seen) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: encode(v, tensors, join(k), seen) for k, v in value.items()}
        return {
            _ITEMS: [
                [encode(k, tensors, join(f"key{i}"), seen), encode(v, tensors, join(k), seen)]
                for i, (k, v) in enumerate(value.items())
            ]
        }
    raise TypeError(f"cannot store a {type(value).__name__} without pickle")


def decode(node: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """The inverse of `encode`; StateFileError for anything `encode` does not write."""
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [decode(n, tensors) for n in node]
    if not isinstance(node, dict):
        raise StateFileError(f"unexpected {type(node).__name__} in a state structure")
    if _TENSOR in node:
        if node[_TENSOR] not in tensors:
            raise StateFileError(f"the structure names tensor {node[_TENSOR]!r}, which the file does not hold")
        return tensors[node[_TENSOR]]
    if _TUPLE in node:
        return tuple(decode(n, tensors) for n in _list(node[_TUPLE]))
    if _ITEMS in node:
        items = [decode(pair, tensors) for pair in _list(node[_ITEMS])]
        if any(not isinstance(pair, list) or len(pair) != 2 for pair in items):
            raise StateFileError("a mapping's items must be [key, value] pairs")
        try:
            return {key: value for key, value in items}
        except TypeError as error:  # an unhashable key
            raise StateFileError(f"bad mapping key: {error}") from None
    if _ARRAY in node:
        dtype = np.dtype(node.get("dtype")) if isinstance(node.get("dtype"), str) else None
        if dtype is None or dtype.kind not in _ARRAY_KINDS:
            raise StateFileError(f"bad numpy dtype {node.get('dtype')!r} in a state structure")
        return np.array(node[_ARRAY], dtype=dtype)
    if any(k.startswith("__") for k in node):
        raise StateFileError(f"unknown tag in a state structure: {sorted(node)}")
    return {k: decode(v, tensors) for k, v in node.items()}


def _list(node) -> list:
    if not isinstance(node, list):
        raise StateFileError(f"expected a list in a state structure, got {type(node).__name__}")
    return node


def write_state(path: str | Path, value: Any) -> Path:
    """Write `value` to `path` (.safetensors: tensors and structure; .json: no tensors). Not atomic:
    checkpoints write into a temporary folder that `checkpoints.publish` renames."""
    path = Path(path)
    tensors: dict[str, torch.Tensor] = {}
    structure = json.dumps(encode(value, tensors))
    if path.suffix == ".json":
        if tensors:
            raise TypeError(f"{path.name}: a .json state cannot hold tensors; use .safetensors")
        path.write_text(structure)
    elif path.suffix == ".safetensors":
        save_file(tensors, str(path), metadata={_STRUCTURE: structure})
        os.chmod(path, 0o644)  # safetensors makes its files private; these are ordinary files
    else:
        raise ValueError(f"state files end in .json or .safetensors, got {path.name!r}")
    return path


def read_state(path: str | Path) -> Any:
    """The value `write_state` wrote to `path`; StateFileError if the file is not such a file."""
    path = Path(path)
    if not path.is_file():
        raise StateFileError(f"{path.name} is missing")
    try:
        if path.suffix == ".json":
            return decode(json.loads(path.read_text()), {})
        if path.suffix != ".safetensors":
            raise StateFileError(f"{path.name}: state files end in .json or .safetensors")
        with safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
            tensors = {key: file.get_tensor(key) for key in file.keys()}
    except StateFileError:
        raise
    except (SafetensorError, OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StateFileError(f"{path.name} is truncated or corrupt: {error}") from None
    if _STRUCTURE not in metadata:
        raise StateFileError(f"{path.name} holds no state structure (not written by write_state)")
    try:
        structure = json.loads(metadata[_STRUCTURE])
    except json.JSONDecodeError as error:
        raise StateFileError(f"{path.name}: its state structure is corrupt: {error}") from None
    return decode(structure, tensors)


# -- random number generators ---------------------------------------------------------------


def rng_states() -> dict[str, Any]:
    """This process's global generators: torch CPU (and CUDA), Python's random, numpy."""
    states = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def check_rng_states(states: Any) -> None:
    """StateFileError unless `states` is what `rng_states` returns (tried on scratch generators)."""
    if not isinstance(states, dict) or not {"torch", "python", "numpy"} <= set(states):
        raise StateFileError("the random states must hold torch, python and numpy generators")
    try:
        torch.Generator().set_state(_byte_tensor(states["torch"], "torch"))
        for index, state in enumerate(states.get("cuda") or []):
            _byte_tensor(state, f"cuda[{index}]")
        random.Random().setstate(_python_state(states["python"]))
        np.random.RandomState().set_state(states["numpy"])
    except StateFileError:
        raise
    except (TypeError, ValueError, RuntimeError, IndexError) as error:
        raise StateFileError(f"the random states are corrupt: {error}") from None


def set_rng_states(states: Any) -> None:
    """Restore the generators of `rng_states()`; StateFileError (nothing changed) if `states` is corrupt.

    CUDA states are restored where this machine has CUDA (a CPU run resumed on a GPU starts
    its CUDA generators from the seed; the loop draws its noise from its own generators)."""
    check_rng_states(states)
    torch.set_rng_state(states["torch"])
    random.setstate(_python_state(states["python"]))
    np.random.set_state(states["numpy"])
    cuda = states.get("cuda") or []
    if cuda and torch.cuda.is_available():
        for index, state in enumerate(cuda[: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(state, index)


def _byte_tensor(value, name: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor) or value.dtype != torch.uint8 or value.ndim != 1:
        raise StateFileError(f"the {name} random state must be a 1-D uint8 tensor")
    return value


def _python_state(value) -> tuple:
    # random.getstate() is (version, tuple of 625 ints, gauss_next); JSON keeps its tuples as tuples
    if not (isinstance(value, tuple) and len(value) == 3 and isinstance(value[1], tuple)):
        raise StateFileError("the python random state must be (version, (625 ints), gauss_next)")
    return value


__all__ = [
    "StateFileError",
    "check_rng_states",
    "decode",
    "encode",
    "read_state",
    "rng_states",
    "set_rng_states",
    "write_state",
]
