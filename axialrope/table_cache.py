"""The tables a rope module keeps, and what a tensor contributes to their keys.

    cache = TableCache(maxsize=16)
    cos, sin = cache.get(("coords", tensor_key(coords), coords.device), build, anchors=(coords,))
    cache.info()                                   # CacheInfo(hits=0, misses=1, maxsize=16, currsize=1)

A key holds everything a table depends on; a tensor's part of it is `tensor_key`. The entry keeps its
`anchors` (the tensors keyed by identity) alive, so no other tensor can take their id while it is cached.
Under torch.compile callers build the table straight away: a cache is Python state the graph must not see.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import torch

from .validation import is_int


class CacheInfo(NamedTuple):
    """As `functools.lru_cache`'s: lookups that found a table, lookups that built one, the most tables
    kept and the tables kept now."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


def tensor_key(tensor: torch.Tensor) -> tuple:
    """A tensor's part of a cache key: the same key only while the tensor's values cannot have changed.

    An ordinary tensor: its identity and version counter, (id, version); the version moves with every
    in-place change. An inference tensor (made under `torch.inference_mode()`) has no version counter,
    and inside inference_mode it can still be changed in place (outside it, it cannot be changed at all):
    neither its identity nor anything else cheap tells whether its values are still those of the cached
    table, so its values themselves are the key (dtype, shape, device and a digest of the bytes). That
    costs one copy of the tensor to the host per lookup; the tensors keyed are positions, small beside
    the tables they key.
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.is_inference():
        return "values", tensor.dtype, tuple(tensor.shape), tensor.device, _digest(tensor)
    return "version", id(tensor), tensor._version


def _digest(tensor: torch.Tensor) -> bytes:
    # blake2b: a collision of two position tensors would be a wrong table, so a cryptographic digest
    flat = tensor.detach().to("cpu").contiguous().reshape(-1)
    return hashlib.blake2b(flat.view(torch.uint8).numpy(), digest_size=32).digest()


class TableCache:
    """Tables by key, the least recently used dropped first once more than `maxsize` are kept.

    Args:
        maxsize: tables kept (0 keeps none).

    Safe to share between threads in the way the rope modules do (an entry another thread dropped
    meanwhile is rebuilt, never an error). A copy (`copy.deepcopy`, pickling) starts empty: the keys
    of identity-keyed tensors would name the original's tensors.
    """

    def __init__(self, maxsize: int):
        self._entries: OrderedDict = OrderedDict()
        self.hits = self.misses = 0
        self.maxsize = maxsize

    @property
    def maxsize(self) -> int:
        return self._maxsize

    @maxsize.setter
    def maxsize(self, size: int) -> None:
        if not is_int(size) or size < 0:
            raise ValueError(f"cache_size must be a non-negative integer (tables kept), got {size!r}")
        self._maxsize = size
        self._trim()

    def get(self, key: Hashable, build: Callable[[], Any], anchors: tuple = ()) -> Any:
        """The value under `key`, from `build()` the first time; `anchors` are kept alive with it."""
        hit = self._entries.get(key)
        if hit is not None:
            try:
                self._entries.move_to_end(key)
            except KeyError:  # another thread dropped it meanwhile
                pass
            self.hits += 1
            return hit[1]
        self.misses += 1
        value = build()
        if self._maxsize:
            self._entries[key] = (anchors, value)
            self._trim()
        return value

    def clear(self) -> None:
        """Drops every table (the counts of hits and misses stay)."""
        self._entries.clear()

    def info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self._maxsize, len(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def _trim(self) -> None:
        while len(self._entries) > self._maxsize:
            try:
                self._entries.popitem(last=False)
            except KeyError:  # another thread emptied it meanwhile
                break

    def __deepcopy__(self, memo: dict) -> TableCache:
        return TableCache(self._maxsize)

    def __getstate__(self) -> dict:
        return {"maxsize": self._maxsize}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["maxsize"])


__all__ = ["CacheInfo", "TableCache", "tensor_key"]
