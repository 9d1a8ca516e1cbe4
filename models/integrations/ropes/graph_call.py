"""A replacement rope inside a torch.compile graph: one opaque operator that runs the rope outside it.

A replacement rope's tables depend on the call's grid and, for the dype-* and kappa-* methods, on its
diffusion time: host-side float64 work over Python numbers (the plan's scalings, kappa(t), band edges)
that change every step. Traced, every such number is a guard and every step a recompile. So while
torch.compile traces a transformer, the rope's call becomes the custom operator `axialrope::rope_tables`:

    tables = torch.ops.axialrope.rope_tables(key, tensors, ints, device)   # in the graph, opaque

The graph holds the operator and never looks into it. At run time the operator calls the rope eagerly
(its plan, its table cache, the call's state from the transformer's pre-hook, which runs outside the
graph too) and hands the graph copies of its tables, so the graph guards on nothing that changes per
step. The rope kind says how a call travels (`ExtrapolatedRope.graph_arguments`: its tensors, Python
integers and device) and the shapes of its tables (`fake_tables`, what the compiler traces with). A kind
without them runs eagerly behind a graph break (`torch.compiler.disable`): correct, one break per call.

The operator is marked nondeterministic (its tables follow the call's diffusion time, not only its
arguments: no compiler may fold it into a constant or merge two calls of it) and unsafe for CUDA graphs
(a replayed graph would skip it and reuse one step's tables).
"""

from __future__ import annotations

import itertools
import weakref

import torch

_ROPES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key -> the rope module it stands for
_KEYS = itertools.count()


def register(rope) -> int:
    """A new key for `rope` (each module and each copy of it its own), the operator's first argument."""
    key = next(_KEYS)
    _ROPES[key] = rope
    return key


def _rope(key: int):
    rope = _ROPES.get(int(key))
    if rope is None:
        raise RuntimeError(f"axialrope::rope_tables: the rope module of key {key} no longer exists")
    return rope


@torch.library.custom_op(
    "axialrope::rope_tables",
    mutates_args=(),
    tags=(torch.Tag.nondeterministic_seeded, torch.Tag.cudagraph_unsafe),
)
def rope_tables(key: int, tensors: list[torch.Tensor], ints: list[int], device: torch.device) -> list[torch.Tensor]:
    """The tables of the rope `key` for one call, as contiguous copies (the graph may reuse their memory; the
    rope's cache keeps its own)."""
    rope = _rope(key)
    args, kwargs = rope.from_graph_arguments(list(tensors), [int(n) for n in ints], device)
    output = rope(*args, **kwargs)
    return [_as_built(t).clone(memory_format=torch.contiguous_format) for t in rope.graph_outputs(output)]


def _as_built(table: torch.Tensor) -> torch.Tensor:
    """A table in the dtype the replacement builds (float32, complex64), which `fake_tables` declares: the
    family's own module, called where a plan changes nothing, may hold its tables in the model's dtype."""
    if table.is_complex():
        return table.to(torch.complex64)
    return table.to(torch.float32) if table.is_floating_point() else table


@rope_tables.register_fake
def _fake_rope_tables(key, tensors, ints, device):
    return _rope(key).fake_tables(list(tensors), list(ints), device)


@torch.compiler.disable(reason="a replacement rope whose kind has no graph operator runs eagerly")
def _eager_call(rope, args: tuple, kwargs: dict):
    return rope(*args, **kwargs)


def traced_call(rope, args: tuple, kwargs: dict):
    """What a rope call is while torch.compile traces: the operator, or an eager call behind a graph break
    where the kind has no operator form or diffusers hooks (context parallelism) reshape its output."""
    if rope.original is not None and rope.within_trained(args, kwargs):
        return rope.original(*args, **kwargs)  # the trained encoding: the family's own module, traced as untouched
    graph = None if hasattr(rope, "_diffusers_hook") else rope.graph_arguments(args, kwargs)
    if graph is None:
        return _eager_call(rope, args, kwargs)
    tensors, ints, device = graph
    return rope.from_graph_outputs(torch.ops.axialrope.rope_tables(rope.graph_key, tensors, ints, device))


__all__ = ["register", "rope_tables", "traced_call"]
