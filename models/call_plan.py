"""Per-call state: what one forward of a model asks of its positions, read from that forward's own arguments.

Some of what a model computes belongs to a call, not to the model. An extrapolation method plans
the positions for the token grid being sampled, and a timestep-dependent one (DyPE, kappa-*) for
the diffusion time too. Both are in the forward's arguments: the grid in the input's shape, the
time in its `timestep`. A `CallPlan` attached to a model turns them into the call's state:

    handle = attach(model, plan)       # a forward pre-hook and a forward hook on `model`
    model(hidden_states, timestep)     # pre-hook: state = plan.state(model, args, kwargs), pushed for plan.reader
                                       # during the forward: current(plan.reader) is this call's state
                                       # forward hook (also when the forward raises): the state is popped
    handle.remove()                    # or: with attach(model, plan): ...

The state lives in a context variable, keyed by its reader (the object that reads it), and never
on a shared module, so:
- a call in another thread sees only its own state (each thread has its own context);
- a call nested in another (the model run again from a hook inside its own forward) pushes on top,
  and the outer call finds its own state again when the inner one returns;
- a deep copy of a model copies its plan with it, and the copy's reader is the copy's module: the
  two never see each other's calls.

The pre-hook runs before every other pre-hook of the model, so whatever runs inside the call (other
hooks included) sees its state. It is host-side work (a timestep read, a plan per grid and time),
kept out of the forward itself so that the forward only reads the result; under torch.compile both
hooks run eagerly, outside the graph (`torch.compiler.disable`), so the graph never sees the state. A
model carries one plan at a time; `remove()` also drops a state that an interrupted forward left
behind (a KeyboardInterrupt skips the forward hook).

The two users:
- the project's DiT (`axial_dit/extrapolation.py`): the state is the call's `RopeConfig`, and
  `AxialDiTPipeline` attaches the method for the duration of one sampling call;
- the diffusers families (`integrations/extrapolation.py`): the state is the call's timestep and the
  inputs the family's replacement rope reads (the reader), attached by `apply_extrapolation`.

`Timestep` is the rule that turns a forward's timestep argument into the diffusion time t in [0, 1]
(t = 1 pure noise); `StepTime` is one timestep read by such a rule.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType

import torch
from torch import nn

PLAN_ATTRIBUTE = "_axialrope_call_plan"  # where a model keeps its plan (in its own __dict__, not as a child)


@dataclass(frozen=True)
class Timestep:
    """How the transformer's timestep argument becomes t in [0, 1], t = 1 pure noise:
    t = (timestep - at_clean) / (at_noise - at_clean) (Mochi's pipeline counts up: at_noise 0, at_clean 1000;
    Lumina's, Ideogram 4's and Z-Image's pass 1 - sigma: at_noise 0, at_clean 1).

    argument: the forward argument holding it ("timesteps" for HiDream, "t" for Z-Image).
    """

    at_noise: float
    source: str = ""
    at_clean: float = 0.0
    argument: str = "timestep"

    def to_t(self, timestep: float) -> float:
        return min(max((timestep - self.at_clean) / (self.at_noise - self.at_clean), 0.0), 1.0)

    def timestep_at(self, t: float) -> float:
        """The `timestep` argument that stands for t."""
        return self.at_clean + t * (self.at_noise - self.at_clean)


class StepTime:
    """A forward's `timestep` argument and the diffusion time t it stands for, per sample.

    Args:
        rule: the `Timestep` (t from the timestep by its rule, clamped to [0, 1]).
        timestep: the argument (a number, or a tensor whose first axis is the batch's), or None until `set`.
    """

    def __init__(self, rule: Timestep, timestep=None):
        self.rule = rule
        self.set(timestep)

    def set(self, timestep) -> None:
        """Records the transformer's `timestep` argument (read only when needed)."""
        self.timestep, self._values = timestep, None

    def raws(self) -> tuple[float, ...]:
        """Per sample, its timestep as a number: the largest entry of its row (Wan 2.2's per-token
        timesteps, diffusion forcing's per-frame ones); one number for a scalar. One host read, the
        first time only."""
        if self._values is None:
            if self.timestep is None:
                raise RuntimeError(
                    "a timestep-dependent extrapolation needs the diffusion time: call the transformer with its "
                    "`timestep` argument (its forward pre-hook passes it on), or set handle.time.set(timestep)"
                )
            timestep = self.timestep
            if torch.is_tensor(timestep):
                rows = timestep.detach().reshape(timestep.shape[0], -1) if timestep.ndim else timestep.reshape(1, 1)
                values = tuple(float(v) for v in rows.amax(dim=1).tolist())
            else:
                values = (float(timestep),)
            if not all(math.isfinite(v) for v in values):
                raise ValueError(f"timestep must be finite, got {values}")
            self._values = values
        return self._values

    def raw(self) -> float:
        """The batch's one timestep; ValueError where its samples are at different times (one plan for
        the batch would give each but one of them the wrong time)."""
        values = self.raws()
        if any(v != values[0] for v in values):
            raise ValueError(
                f"the samples of this batch are at different diffusion times (timesteps "
                f"{', '.join(f'{v:g}' for v in values)}), and this "
                "model's rope encodes the whole batch with one table, so a timestep-dependent method cannot "
                "give each sample its own time: call the model once per time"
            )
        return values[0]

    def value(self) -> float:
        """t in [0, 1] by the rule, the batch's one."""
        return self.rule.to_t(self.raw())

    def values(self) -> tuple[float, ...]:
        """t in [0, 1] by the rule, per sample."""
        return tuple(self.rule.to_t(v) for v in self.raws())


# -- the calls under way ----------------------------------------------------------------------------------


class _Call:
    """One call under way: its state, and the token of its push, which its pop resets to."""

    __slots__ = ("state", "token")

    def __init__(self, state):
        self.state, self.token = state, None


_CALLS: ContextVar[Mapping[object, _Call]] = ContextVar("axialrope_calls", default=MappingProxyType({}))


def push_call(reader, state) -> None:
    """Makes `state` the state that `reader` reads until `pop_call(reader)` (this thread and context only)."""
    call = _Call(state)
    call.token = _CALLS.set({**_CALLS.get(), reader: call})


def pop_call(reader) -> None:
    """Ends the latest call of `reader`: the state before its push is back (an outer call's, or none)."""
    calls = _CALLS.get()
    call = calls.get(reader)
    if call is None:
        return
    try:
        _CALLS.reset(call.token)
    except (ValueError, RuntimeError):  # pushed in another context: drop just this reader's state
        _CALLS.set({key: value for key, value in calls.items() if key is not reader})


def current(reader, default=None):
    """The state of `reader`'s call under way in this thread and context, or `default` outside one."""
    call = _CALLS.get().get(reader)
    return default if call is None else call.state


# -- plans and hooks --------------------------------------------------------------------------------------


class CallPlan:
    """What a model does at the start of each forward: derive the call's state from its arguments.

    Attributes:
        reader: whom the state is for (the model, or the module inside it that reads it), the key of
            `current`. Keep it an attribute, so a deep copy of the plan follows the copied model.

    Subclasses implement `state`; `inputs` may rewrite the forward's arguments once the state is current.
    """

    reader: object = None

    def state(self, module: nn.Module, args: tuple, kwargs: dict):
        """The state of the call `module(*args, **kwargs)`; may raise (the forward then does not run)."""
        raise NotImplementedError

    def inputs(self, state, module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
        """New (args, kwargs) for the forward, with `state` already current; None keeps them."""
        return None


class AttachedPlan:
    """A plan on a model; `remove()` takes it off (hooks and plan), also as a context manager's exit."""

    def __init__(self, model: nn.Module, plan: CallPlan, hooks: Sequence):
        self.model, self.plan, self.hooks = model, plan, tuple(hooks)

    @property
    def removed(self) -> bool:
        return vars(self.model).get(PLAN_ATTRIBUTE) is not self.plan

    def remove(self) -> None:
        if self.removed:
            return
        for hook in self.hooks:
            hook.remove()
        del vars(self.model)[PLAN_ATTRIBUTE]
        # a forward interrupted by a non-Exception (KeyboardInterrupt) skips the forward hook: drop its state here
        pop_call(self.plan.reader)

    def __enter__(self) -> AttachedPlan:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def attach(model: nn.Module, plan: CallPlan) -> AttachedPlan:
    """Gives `model` the per-call state of `plan` (see the module's docstring); ValueError if it has one."""
    if PLAN_ATTRIBUTE in vars(model):
        raise ValueError(
            f"this {type(model).__name__} already carries a call plan (an extrapolation, or a sampling call "
            "under way in another thread); remove it first"
        )
    hooks = (
        model.register_forward_pre_hook(_begin_call, with_kwargs=True, prepend=True),
        model.register_forward_hook(_end_call, with_kwargs=True, always_call=True),
    )
    vars(model)[PLAN_ATTRIBUTE] = plan  # not nn.Module.__setattr__: a plan is no submodule
    return AttachedPlan(model, plan, hooks)


@torch.compiler.disable(reason="a call plan is host-side work; the forward reads its result")
def _begin_call(module: nn.Module, args: tuple, kwargs: dict):
    """Every plan's forward pre-hook. It reads the plan from the module it is called on, so a deep copy
    uses its own."""
    plan = vars(module).get(PLAN_ATTRIBUTE)
    if plan is None:
        return None
    state = plan.state(module, args, kwargs)
    push_call(plan.reader, state)
    return plan.inputs(state, module, args, kwargs)


@torch.compiler.disable(reason="a call plan is host-side work; the forward reads its result")
def _end_call(module: nn.Module, args: tuple, kwargs: dict, output):
    plan = vars(module).get(PLAN_ATTRIBUTE)
    if plan is not None:
        pop_call(plan.reader)
    return None


# -- the forward's arguments ------------------------------------------------------------------------------

_PARAMETERS: dict[type, list[str]] = {}


def forward_parameters(cls: type) -> list[str]:
    """A model class's forward argument names after self."""
    if cls not in _PARAMETERS:
        _PARAMETERS[cls] = list(inspect.signature(cls.forward).parameters)[1:]
    return _PARAMETERS[cls]


def argument(name: str, args: tuple, kwargs: dict, parameters: Sequence[str]):
    """A forward argument given by name or at its position (`parameters`: forward's names after self)."""
    if name in kwargs:
        return kwargs[name]
    index = parameters.index(name) if name in parameters else None
    return args[index] if index is not None and len(args) > index else None


__all__ = [
    "AttachedPlan",
    "CallPlan",
    "PLAN_ATTRIBUTE",
    "StepTime",
    "Timestep",
    "argument",
    "attach",
    "current",
    "forward_parameters",
    "pop_call",
    "push_call",
]
