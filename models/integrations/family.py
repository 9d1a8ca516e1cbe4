"""A diffusers model family as data: what `apply_extrapolation` needs to know about it.

A `Family` names the model classes it covers, the rope kind that replaces their rope module
(`ropes/`), the role of each rope axis, how the rope's dims and theta are read from the
model's config, how its `timestep` becomes t in [0, 1], its trained grids with their sources,
and RIFLEx's k where its authors publish one. Declarations live beside their rope kind in
`ropes/`; the registry (`registry.py`) lists them. Nothing here imports a rope kind or diffusers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..call_plan import Timestep  # the timestep rule, shared with the project's DiT

ROLES = ("temporal", "spatial", "reference")  # reference: an index axis (text, reference images) kept as trained
# softmax: a gain on the tables scales the logits; linear: it would scale the attention's output (no softmax)
ATTENTIONS = ("softmax", "linear")


def _normal(value):
    """Config values read from JSON are lists where the constructor's defaults are tuples."""
    return tuple(value) if isinstance(value, list) else value


def _matches(config: Mapping, when: tuple[tuple[str, object], ...]) -> bool:
    return all(_normal(config.get(key)) == _normal(value) for key, value in when)


def describe_when(when: tuple[tuple[str, object], ...]) -> str:
    """ "in_channels=48" for a config condition, "" for none."""
    return ", ".join(f"{key}={value}" for key, value in when)


@dataclass(frozen=True)
class TrainedGrid:
    """A trained token grid, (h, w) or (t, h, w), with where the numbers come from.

    pipeline_default: the grid the family's pipeline samples at when no size is given, where it
        differs from the trained one (shown beside it in the docs).
    when: config entries that select this grid (empty: the family's default).
    """

    grid: tuple[int, ...]
    source: str
    pipeline_default: tuple[int, ...] | None = None
    when: tuple[tuple[str, object], ...] = ()
    label: str = ""


@dataclass(frozen=True)
class RiflexK:
    """RIFLEx's intrinsic pair k (1-based) for the configs `when` selects, with its source.

    k None: the authors' code applies no k to these models, so riflex leaves the table as trained.
    """

    k: int | None
    source: str
    when: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class RopeAxes:
    """A rope's per-axis channels and theta, read from the model's config.

    dims: a config key holding the per-axis channels, or a function of the config returning them.
    theta: a config key, or the constant the model's constructor passes (with `theta_source`).
    on_rope: the keys name plain attributes of the rope object instead (numbers, not buffers: Z-Image's
        ControlNet has none in its config and uses the transformer's RopeEmbedder).
    """

    dims: str | Callable[[Mapping], Sequence[int]]
    theta: str | float = 10000.0
    theta_source: str = ""
    on_rope: bool = False

    def resolve(self, config: Mapping) -> tuple[tuple[int, ...], float]:
        dims = config[self.dims] if isinstance(self.dims, str) else self.dims(config)
        theta = config[self.theta] if isinstance(self.theta, str) else self.theta
        return tuple(int(d) for d in dims), float(theta)


@dataclass(frozen=True)
class LatentRead:
    """Where a family's forward takes its latent, for sega (`axialrope.sega`), which plans every call from it.

    argument: the forward argument holding it. layout: "first" (channels before the grid axes, or packed
    tokens whose first tokens are the grid's), "last" (channels last: (B, T, H, W, C)), or "list" (a list of
    per-image (C, F, H, W) tensors at one size, stacked).
    """

    argument: str = "hidden_states"
    layout: str = "first"


@dataclass(frozen=True)
class Family:
    """One family of diffusers models whose rope `apply_extrapolation` replaces.

    Attributes:
        name, title: short name ("flux") and the docs' name; classes: the model classes it covers, by name.
        kind: the rope kind (`ropes/`) that replaces the rope and knows its table format.
        axes: each rope axis's role ("temporal", "spatial", "reference"); the trained grid has one
            size per temporal and spatial axis, in that order. rope_axes: dims and theta from the config.
        trained: trained grids, the first whose `when` matches the config; time: `timestep` to t.
        rope_attr: the attribute holding the rope module (None: tables passed in by the pipeline);
            rope_classes: the rope module classes accepted there, by name.
        riflex: published ks (first match wins; none matching: k derived); requires: config entries
            the model must have (else ValueError `requires_reason`); extras: pipeline-level changes
            with their option (Flux's shift cap); pipelines: for the docs.
        attention: "softmax", or "linear" where the rope rotates a linear attention's q and k (a gain
            on the tables would scale its output). no_gain: why the tables cannot carry a gain, a clause (a table
            of angles), refusing the methods with one and entropy scaling ("" where they can). methods:
            the only methods with a meaning for the family, with why (`methods_reason`; empty: every
            method). makes_video: the pipeline's
            output is video (default: a temporal axis); no_time_axis: why riflex does not apply
            (default: an image model). latent: where sega reads the call's latent; no_latent: why it cannot
            (a clause; "" where it can), refusing sega.
    """

    name: str
    title: str
    classes: tuple[str, ...]
    kind: object
    axes: tuple[str, ...]
    rope_axes: RopeAxes
    trained: tuple[TrainedGrid, ...]
    time: Timestep
    rope_attr: str | None = None
    rope_classes: tuple[str, ...] = ()
    riflex: tuple[RiflexK, ...] = ()
    pipelines: tuple[str, ...] = ()
    requires: tuple[tuple[str, object], ...] = ()
    requires_reason: str = ""
    extras: tuple = ()
    attention: str = "softmax"
    no_gain: str = ""
    makes_video: bool | None = None
    no_time_axis: str = "is an image model"
    methods: tuple[str, ...] = ()
    methods_reason: str = ""
    latent: LatentRead = LatentRead()
    no_latent: str = ""

    def __post_init__(self):
        if any(role not in ROLES for role in self.axes):
            raise ValueError(f"{self.name}: axis roles must be among {ROLES}, got {self.axes}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"{self.name}: attention must be one of {ATTENTIONS}, got {self.attention!r}")
        for grid in self.trained:
            if len(grid.grid) != len(self.planned_axes):
                raise ValueError(
                    f"{self.name}: trained grid {grid.grid} must have one size per temporal or "
                    f"spatial axis ({len(self.planned_axes)})"
                )

    @property
    def planned_axes(self) -> tuple[int, ...]:
        """Indices of the rope axes the method acts on (temporal and spatial), in the trained grid's order."""
        return tuple(i for i, role in enumerate(self.axes) if role != "reference")

    @property
    def gain_refused(self) -> str:
        """Why the tables cannot carry a gain (YaRN's temperature, Dy-YaRN's, entropy scaling), a clause, or "":
        a linear attention (no softmax for a logit scale to sharpen), or the family's `no_gain`."""
        if self.attention == "linear":
            return "its attention is linear (no softmax), where a gain would scale its output instead"
        return self.no_gain

    @property
    def video(self) -> bool:
        """Whether the family's pipelines make video (riflex needs a temporal axis: `temporal_axis`)."""
        return "temporal" in self.axes if self.makes_video is None else self.makes_video

    @property
    def temporal_axis(self) -> int | None:
        """The temporal axis's index in the trained grid, or None."""
        roles = [self.axes[i] for i in self.planned_axes]
        return roles.index("temporal") if "temporal" in roles else None

    def trained_grid(self, config: Mapping) -> TrainedGrid:
        return next((g for g in self.trained if _matches(config, g.when)), self.trained[-1])

    def published_riflex(self, config: Mapping) -> RiflexK | None:
        return next((r for r in self.riflex if _matches(config, r.when)), None)

    def options(self) -> tuple[str, ...]:
        """The family's own keyword options of `apply_extrapolation` (its kind's and its extras')."""
        return (*getattr(self.kind, "options", ()), *(extra.option for extra in self.extras))
