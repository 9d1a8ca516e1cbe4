"""FLUX.1 (diffusers `FluxTransformer2DModel`): `pos_embed` (`FluxPosEmbed`) replaced.

Flux's ids are (seq, 3) coordinates (text/reference index, y, x); text tokens sit at 0.
`FluxPosEmbed(ids)` returns cos, sin (seq, 128), each pair's value twice (interleaved layout),
float32 from float64 angles, rebuilt at every call. The replacement gives the same format: axis 0
as trained, y and x with the method, per axis s_a = max(1, L_a / L_a_train), where L_a comes from
the whole image's ids as the transformer received them (under context parallelism the rope sees
a shard of the ids, but the transformer's forward pre-hook sees them all).

Time: FluxPipeline passes the transformer timestep = sigma (t / 1000) and the transformer
multiplies by 1000 itself, so t = timestep.

DyPE's pipeline also caps the schedule's shift: it computes mu with max_image_seq_len set to the
image's own sequence length, so mu is max_shift at any size beyond it (diffusers extrapolates the
line and shifts far more at 4K). `install_extras` does the same through the scheduler's
`set_timesteps` (on by default for dype-* methods when a pipeline is given; `shift_cap=False`
turns it off). Below max_image_seq_len it leaves mu alone (their pipeline raises it to max_shift
there too; every method is the trained encoding at those sizes anyway).
"""

from __future__ import annotations

import functools

import torch

from .base import ExtrapolatedRope, Family, ids_table, plan_key, tensor_key


class FluxRope(ExtrapolatedRope):
    """forward(ids (seq, 3)) -> cos, sin (seq, sum(axes_dim)) float32, as `FluxPosEmbed`."""

    def __init__(self, original, *args, **kwargs):
        super().__init__(original, *args, **kwargs)
        self.axes_dims = tuple(original.axes_dim)
        self.theta = float(original.theta)
        self.image_ids = self.text_ids = None  # the forward's whole ids, set by the pre-hook
        self._grid_of: tuple = (None, -1, None)  # (ids, version, (h, w)): steps reuse it, no host read

    def planned_axes(self):
        return [(self.axes_dims[1], self.theta), (self.axes_dims[2], self.theta)]

    def global_grid(self, ids: torch.Tensor) -> tuple[int, int]:
        """(h, w) = largest y and x + 1 over the forward's whole image ids (over `ids` if the
        transformer's pre-hook saw none, e.g. when this module is called on its own)."""
        source = self.image_ids if self.image_ids is not None else ids
        anchor, version, grid = self._grid_of
        if anchor is not source or version != source._version:
            longest = source.detach()[:, 1:3].amax(dim=0) + 1  # one host read per new set of ids
            grid = tuple(int(n) for n in longest.tolist())
            self._grid_of = (source, source._version, grid)
        return grid

    def forward(self, ids: torch.Tensor):
        plan = self.plan(self.global_grid(ids))
        if plan is None:
            return self.original(ids)
        scalings = (None, *plan.scalings)  # the text / reference-image axis stays as trained

        def build():
            return ids_table(self.axes_dims, (self.theta,) * 3, scalings, plan.logit_scale, ids)

        whole = (self.text_ids, self.image_ids)
        if all(t is not None for t in whole) and ids.shape[0] == sum(t.shape[0] for t in whole):
            # the transformer's cat(txt_ids, img_ids): cache by those tensors (kept alive in the key)
            key = (*(tensor_key(t) for t in whole), ids.device, plan_key(plan))
            return self.cached(key, build, anchors=whole)
        return build()  # a shard of the ids (context parallelism): its own rows, same global plan


def capped_shift(mu: float, config) -> float:
    """DyPE's shift for a schedule diffusers gave `mu`: beyond max_image_seq_len, diffusers'
    calculate_shift with max_seq_len = the image's own length (so mu = max_shift, computed as
    their pipeline computes it); unchanged at and below."""
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift

    base_len, max_len = config.get("base_image_seq_len", 256), config.get("max_image_seq_len", 4096)
    base_shift, max_shift = config.get("base_shift", 0.5), config.get("max_shift", 1.15)
    if mu is None or mu <= max_shift:
        return mu
    # the image's length from diffusers' linear mu (an integer: the number of latent tokens)
    seq_len = round(base_len + (mu - base_shift) * (max_len - base_len) / (max_shift - base_shift))
    return calculate_shift(seq_len, base_len, seq_len, base_shift, max_shift)


class Flux(Family):
    name = "flux"
    class_names = ("FluxTransformer2DModel",)
    rope_attr = "pos_embed"
    timestep_scale = 1.0

    def make_rope(self, transformer, extrapolation, trained_grid, time, cache_size):
        return FluxRope(transformer.pos_embed, extrapolation, trained_grid, time, cache_size)

    def before_forward(self, rope: FluxRope, args, kwargs):
        rope.image_ids = _argument(kwargs, args, "img_ids", 4)
        rope.text_ids = _argument(kwargs, args, "txt_ids", 5)
        for name in ("image_ids", "text_ids"):  # the deprecated 3D form: the transformer takes [0]
            ids = getattr(rope, name)
            if ids is not None and ids.ndim == 3:
                setattr(rope, name, ids[0])
        return None

    def install_extras(self, pipeline, extrapolation, options):
        shift_cap = options.pop("shift_cap", None)
        if shift_cap is not None and not isinstance(shift_cap, bool):
            raise TypeError(f"shift_cap must be True, False or None, got {shift_cap!r}")
        wanted = extrapolation.method.startswith("dype-") if shift_cap is None else shift_cap
        if not wanted:
            return []
        scheduler = getattr(pipeline, "scheduler", None)
        if scheduler is None or not hasattr(scheduler, "set_timesteps"):
            if shift_cap:
                raise ValueError("shift_cap=True needs the pipeline (its scheduler's shift is capped); "
                                 "pass the pipeline, not its transformer")
            return []  # a bare transformer: there is no schedule to cap
        had_own = "set_timesteps" in vars(scheduler)
        original = scheduler.set_timesteps

        @functools.wraps(original)  # retrieve_timesteps inspects the signature for `sigmas`
        def set_timesteps(*args, **kwargs):
            if kwargs.get("mu") is not None:
                kwargs["mu"] = capped_shift(kwargs["mu"], scheduler.config)
            return original(*args, **kwargs)

        scheduler.set_timesteps = set_timesteps

        def undo():
            if had_own:
                scheduler.set_timesteps = original
            else:
                del scheduler.set_timesteps

        return [undo]


def _argument(kwargs: dict, args: tuple, name: str, index: int):
    """A forward argument given by name or at its position (0-based, after self)."""
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else None
