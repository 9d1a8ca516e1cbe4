"""diffusers schedulers by name, for the objective a model was trained with.

    scheduler = make_scheduler("unipc", pipe.scheduler)      # UniPC in flow mode for a flow model
    pipe(class_labels=[0], scheduler="dpm++")                  # the same through the pipeline

A flow-matching model (velocity target, sigma in [0, 1], timestep = 1000 * sigma; see
`pipelines.objectives`) samples with diffusers' flow-matching Euler and Heun, or with
DPM-Solver++ and UniPC in their flow mode (`use_flow_sigmas`, `prediction_type="flow_prediction"`).
A DDPM model (epsilon target, linear betas) samples with DDPM, DDIM, Euler, DPM-Solver++ and
UniPC on its betas. A named scheduler is built from the pipeline's own scheduler (its betas,
or its flow shift), so it samples the schedule the model was trained on.
"""

from __future__ import annotations

from diffusers import (
    DDIMScheduler,
    DDPMScheduler,
    DPMSolverMultistepScheduler,
    EulerDiscreteScheduler,
    FlowMatchEulerDiscreteScheduler,
    FlowMatchHeunDiscreteScheduler,
    SchedulerMixin,
    UniPCMultistepScheduler,
)

OBJECTIVE_NAMES = {"flow": "flow-matching", "ddpm": "DDPM (epsilon)"}

# objective -> scheduler name -> diffusers class; the first name is what a pipeline of that objective starts with
SCHEDULERS: dict[str, dict[str, type]] = {
    "flow": {
        "euler": FlowMatchEulerDiscreteScheduler,
        "heun": FlowMatchHeunDiscreteScheduler,
        "dpm++": DPMSolverMultistepScheduler,
        "unipc": UniPCMultistepScheduler,
    },
    "ddpm": {
        "ddpm": DDPMScheduler,
        "ddim": DDIMScheduler,
        "euler": EulerDiscreteScheduler,
        "dpm++": DPMSolverMultistepScheduler,
        "unipc": UniPCMultistepScheduler,
    },
}

# what a DDPM-type scheduler takes over from the pipeline's scheduler: the training noise schedule
_BETA_KEYS = ("num_train_timesteps", "beta_start", "beta_end", "beta_schedule", "trained_betas")


def scheduler_objective(scheduler) -> str | None:
    """ "flow" or "ddpm": the objective a scheduler instance samples; None if it samples neither."""
    config = scheduler.config
    if type(scheduler).__name__.startswith("FlowMatch"):
        return "flow"
    prediction = config.get("prediction_type")
    if config.get("use_flow_sigmas") and prediction == "flow_prediction":
        return "flow"
    if prediction == "epsilon" and not config.get("use_flow_sigmas"):
        return "ddpm"
    return None


def scheduler_name(scheduler) -> str:
    """The short name of a scheduler instance (as `make_scheduler` takes it), else its class name."""
    objective = scheduler_objective(scheduler)
    for name, cls in SCHEDULERS.get(objective, {}).items():
        if type(scheduler) is cls:
            return name
    return type(scheduler).__name__


def _valid(objective: str) -> str:
    names = SCHEDULERS[objective]
    return ", ".join(f"{name} ({cls.__name__})" for name, cls in names.items())


def _lookup(name: str, objective: str) -> type | None:
    """The class `name` means for `objective`: a short name or a diffusers class name, any case,
    "Scheduler" optional."""
    key = name.lower().removesuffix("scheduler")
    for short, cls in SCHEDULERS[objective].items():
        if key in (short, cls.__name__.lower().removesuffix("scheduler")):
            return cls
    return None


def scheduler_class(name: str, objective: str) -> type:
    """The diffusers class of scheduler `name` (short or diffusers class name) for `objective`.

    ValueError listing the valid names if `name` is unknown or does not sample that objective.
    """
    if not isinstance(name, str):
        raise TypeError(f"scheduler must be a name or a diffusers scheduler, got {name!r}")
    cls = _lookup(name, objective)
    if cls is not None:
        return cls
    other = next(o for o in SCHEDULERS if o != objective)
    if _lookup(name, other) is not None:
        reason = (
            f"scheduler {name!r} samples {OBJECTIVE_NAMES[other]} models, not this {OBJECTIVE_NAMES[objective]} model"
        )
    else:
        reason = f"unknown scheduler {name!r}"
    raise ValueError(f"{reason}; for a {OBJECTIVE_NAMES[objective]} model choose one of {_valid(objective)}")


def make_scheduler(name: str, base: SchedulerMixin) -> SchedulerMixin:
    """A fresh scheduler `name` for the model that `base` (the pipeline's scheduler) samples.

    Args:
        name: a short name of `SCHEDULERS` or a diffusers class name (case-insensitive, "Scheduler" optional).
        base: a scheduler instance of the model's objective; its noise schedule is carried over
            (betas for DDPM, the shift for flow matching); the same class as `name` keeps every setting.
    """
    objective = scheduler_objective(base)
    if objective is None:
        raise ValueError(f"cannot tell which objective {type(base).__name__} samples, so no scheduler can be named")
    cls = scheduler_class(name, objective)
    if type(base) is cls:
        return cls.from_config(base.config)
    config = base.config
    if objective == "ddpm":
        betas = {key: config[key] for key in _BETA_KEYS if key in config}
        return cls(**betas, prediction_type="epsilon")
    steps, shift = config.get("num_train_timesteps", 1000), config.get("shift", config.get("flow_shift", 1.0))
    if cls in (FlowMatchEulerDiscreteScheduler, FlowMatchHeunDiscreteScheduler):
        return cls(num_train_timesteps=steps, shift=shift)
    return cls(num_train_timesteps=steps, use_flow_sigmas=True, prediction_type="flow_prediction", flow_shift=shift)


def check_scheduler(scheduler, objective: str) -> None:
    """ValueError unless the scheduler instance samples `objective` ("flow" or "ddpm")."""
    found = scheduler_objective(scheduler)
    if found != objective:
        what = f"samples {OBJECTIVE_NAMES[found]} models" if found else "samples neither flow-matching nor DDPM models"
        raise ValueError(
            f"scheduler {type(scheduler).__name__} {what}, but this is a {OBJECTIVE_NAMES[objective]} model; "
            f"choose one of {_valid(objective)}"
        )


__all__ = [
    "OBJECTIVE_NAMES",
    "SCHEDULERS",
    "check_scheduler",
    "make_scheduler",
    "scheduler_class",
    "scheduler_name",
    "scheduler_objective",
]
