"""SPA in diffusers' attention: each attention call run once per position variant, its outputs averaged.

HRDiT's spatial position alignment (`Extrapolation("spa")`) bundles the generated image's positions and
slides the bundles' boundary per axis; the attention outputs, not the rotations, are averaged over those
variants. The family's rope (`ropes/`) builds one table per variant for a forward and hands the transformer
the first; `register_variants` records them all on the forward's own call state. `install_averaging` wraps
the processor of every attention module of the model: a call whose rotary argument is a registered table
runs the family's own processor once per variant table, in its place, and returns the mean of the outputs.

A processor's work after the attention is affine in the attention output (the output projection, its bias,
a gate computed from the hidden states), so the mean of the processor's outputs is the processor applied to
the mean of the attention outputs, up to float rounding. The q, k, v projections run once per variant.

A forward that registered variants and ran no attention on them raises (the tables did not reach a
wrapped processor: SPA would silently be plain extrapolation). Under context parallelism the rope builds
the variants of its shard of the ids from the whole grid's layout (Flux), or diffusers shards the rope's
whole tables into views (Qwen-Image, Wan: each variant's table is then sharded alike, `_viewed_alike`), and
every variant's attention gathers the whole sequence as the family's own does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import torch
from torch import nn

from axialrope.models.call_plan import current


class _Variants:
    """The variant tables of one forward's rope call, and whether an attention call used them."""

    __slots__ = ("tables", "used")

    def __init__(self, tables: Sequence):
        self.tables, self.used = tuple(tables), False


def _registry(state) -> dict | None:
    return getattr(state, "spa_variants", None)


def register_variants(rope, tables: Sequence) -> object:
    """Records SPA's variant tables for the forward under way and returns the first (what the transformer gets).

    Args:
        rope: the replacement rope module (the reader of the call state).
        tables: one table per variant, each in the family's own format (a tuple of tensors, or a tensor).

    Outside a forward (the rope called on its own) nothing is recorded: the first variant's table comes back.
    """
    first = tables[0]
    state = current(rope)
    if state is None:
        return first
    registry = _registry(state)
    if registry is None:
        registry = {}
        state.spa_variants = registry
    registry[id(_key_tensor(first))] = _Variants(tables)
    return first


def _key_tensor(table) -> torch.Tensor | None:
    """The tensor a table is known by: itself, or the first tensor of a tuple or list."""
    if isinstance(table, torch.Tensor):
        return table
    if isinstance(table, (tuple, list)) and table and isinstance(table[0], torch.Tensor):
        return table[0]
    return None


def _find(registry: dict, values) -> tuple[object, _Variants, tuple] | None:
    """(where, variants, their tables as this call takes them): the argument (a position or a name) that is a
    registered first table, or a view of one (diffusers' context parallelism shards some families' rope outputs,
    Qwen-Image's and Wan's, into views of them: each variant's table is then viewed alike)."""
    for where, value in values:
        key = _key_tensor(value)
        if key is None:
            continue
        entry = registry.get(id(key))
        if entry is not None and _key_tensor(entry.tables[0]) is key:
            return where, entry, entry.tables
        for entry in registry.values():
            tables = _viewed_alike(value, entry.tables)
            if tables is not None:
                return where, entry, tables
    return None


def _parts(table) -> tuple:
    return tuple(table) if isinstance(table, (tuple, list)) else (table,)


def _viewed_alike(value, tables: tuple) -> tuple | None:
    """Each variant's table viewed as `value` views the first variant's (every tensor of `value` a view of the
    first table's tensor in its place, all variants laid out alike), or None where `value` is no such view."""
    parts, first = _parts(value), _parts(tables[0])
    if len(parts) != len(first) or not all(isinstance(t, torch.Tensor) for t in (*parts, *first)):
        return None
    for part, own in zip(parts, first, strict=True):
        if part.dtype != own.dtype or part.device != own.device:
            return None
        if part.untyped_storage().data_ptr() != own.untyped_storage().data_ptr():
            return None
    for table in tables[1:]:
        for variant, own in zip(_parts(table), first, strict=True):
            if variant.shape != own.shape or variant.stride() != own.stride():
                return None
            if variant.untyped_storage().nbytes() != own.untyped_storage().nbytes():
                return None
    viewed = []
    for table in tables:
        views = tuple(
            variant
            if part is own
            else variant.as_strided(
                part.size(), part.stride(), variant.storage_offset() + part.storage_offset() - own.storage_offset()
            )
            for part, own, variant in zip(parts, first, _parts(table), strict=True)
        )
        viewed.append(type(value)(views) if isinstance(value, (tuple, list)) else views[0])
    return tuple(viewed)


def _mean(outputs: list):
    """The mean of processor outputs (tensors, or tuples of tensors and None), summed in float32 at least."""
    first = outputs[0]
    if isinstance(first, (tuple, list)):
        return type(first)(_mean([o[i] for o in outputs]) for i in range(len(first)))
    if not isinstance(first, torch.Tensor):
        return first
    total = None
    for out in outputs:
        out = out.to(torch.promote_types(out.dtype, torch.float32))
        total = out if total is None else total + out
    return (total / len(outputs)).to(first.dtype)


class AveragingProcessor:
    """A family's attention processor that SPA runs once per position variant (module docstring).

    Args:
        processor: the module's own processor; rope: the model's replacement rope (whose forwards register).
    """

    def __init__(self, processor, rope: nn.Module):
        self.processor, self.rope = processor, rope
        # diffusers' Attention passes a processor only the keyword arguments its __call__'s signature names
        # (`inspect.signature(processor.__call__)`): show it the wrapped processor's
        self.__call__ = functools.wraps(processor.__call__)(functools.partial(type(self).__call__, self))

    _OWN = ("processor", "rope", "__call__")

    def __getattr__(self, name: str):  # the wrapped processor's attributes (diffusers reads some)
        if name in self._OWN:
            raise AttributeError(name)
        return getattr(self.processor, name)

    def __setattr__(self, name: str, value) -> None:
        """Sets the wrapped processor's attributes (diffusers' `enable_parallelism` sets `_parallel_config` on
        each processor, which the wrapped one must see), the wrapper's own on itself."""
        if name in self._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.processor, name, value)

    def __call__(self, attn, *args, **kwargs):
        registry = _registry(current(self.rope))
        if not registry:
            return self.processor(attn, *args, **kwargs)
        if torch.compiler.is_compiling():
            raise RuntimeError("spa runs its attention variants eagerly; it does not run under torch.compile")
        found = _find(registry, [*enumerate(args), *kwargs.items()])
        if found is None:  # an attention without this forward's rope table (a cross-attention)
            return self.processor(attn, *args, **kwargs)
        where, entry, tables = found
        entry.used = True
        outputs = []
        for table in tables:
            if isinstance(where, int):
                call_args, call_kwargs = (*args[:where], table, *args[where + 1 :]), kwargs
            else:
                call_args, call_kwargs = args, {**kwargs, where: table}
            outputs.append(self.processor(attn, *call_args, **call_kwargs))
        return _mean(outputs)


def _check_used(rope: nn.Module) -> Callable:
    """A forward hook (run before the call plan drops the state): raises where registered variants went unused."""

    def hook(module, args, kwargs, output):
        registry = _registry(current(rope))
        if registry and not any(entry.used for entry in registry.values()):
            raise RuntimeError(
                f"spa: the rope of this {type(module).__name__} built position variants, but no attention call "
                "received them (its processors were replaced after apply_extrapolation, or its tables reach the "
                "attention through code the wrapper does not follow); nothing was averaged"
            )
        return None

    return hook


def install_averaging(model: nn.Module, rope: nn.Module) -> Callable[[], None]:
    """Wraps the processor of every attention module of `model` in an `AveragingProcessor` for `rope`, and
    adds the unused-variants check; returns the undo (each processor still wrapped gets its own back)."""
    wrapped = []
    for module in model.modules():
        processor = getattr(module, "processor", None)
        if processor is None or isinstance(module, type(rope)) or not callable(processor):
            continue
        wrapper = AveragingProcessor(processor, rope)
        module.processor = wrapper
        wrapped.append((module, processor, wrapper))
    if not wrapped:
        raise ValueError(f"spa: {type(model).__name__} has no attention module with a processor to average")
    hook = model.register_forward_hook(_check_used(rope), with_kwargs=True, prepend=True, always_call=False)

    def undo():
        hook.remove()
        for module, processor, wrapper in wrapped:
            if module.processor is wrapper:
                module.processor = processor

    return undo


__all__ = ["AveragingProcessor", "install_averaging", "register_variants"]
