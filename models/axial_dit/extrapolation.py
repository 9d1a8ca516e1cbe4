"""An extrapolation method on the DiT for each forward: the call's `RopeConfig` from its grid and time.

    plan = DiTExtrapolation(model, Extrapolation("dype-yarn"), grid=(16, 16))   # refuses a misfit now
    with plan.attach():                                                          # `call_plan.attach`
        model(hidden_states, timestep)   # RoPE planned for this input's grid and this timestep

Each forward's pre-hook plans the method for the token grid of `hidden_states` and, for a
timestep-dependent method, the diffusion time of `timestep` (t = timestep / 1000 by default, as the
DiT is trained; `AxialDiTPipeline` passes its scheduler's num_train_timesteps) and, for sega, the
spectrum of `hidden_states` itself (the latent (B, C, H, W) or (B, C, T, H, W) of this step), and the
forward reads the result as `model.rope_config`. The model's own `rope_config` is never assigned: the plan is the
call's (`models/call_plan.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from axialrope import Extrapolation
from axialrope.sega import SegaSpectrum

from ..call_plan import AttachedPlan, CallPlan, StepTime, Timestep, argument, attach, forward_parameters
from .position_encoding import RopeConfig

# the DiT sees the timestep on diffusers' 0 .. 1000 scale: flow matching's 1000 * sigma, DDPM's step index
DIT_TIMESTEP = Timestep(at_noise=1000.0, source="the DiT's training objectives (pipelines/objectives.py)")


class DiTExtrapolation(CallPlan):
    """Plans `extrapolation` for each forward of a DiT, from the forward's own input and timestep.

    Args:
        model: a DiT (`base_grid`, `own_rope_config`; `rope` is None for sin-cos).
        extrapolation: the method; a sin-cos model takes only "none" (entropy scaling acts on its logits).
        time: how the forward's `timestep` becomes t in [0, 1] (`DIT_TIMESTEP`: timestep / 1000).
        grid: the token grid to be sampled, (h, w) or (t, h, w): planned once here, so that a method that
            does not suit it raises now; None checks only the model.
    """

    def __init__(
        self,
        model,
        extrapolation: Extrapolation,
        time: Timestep = DIT_TIMESTEP,
        grid: Sequence[int] | None = None,
    ):
        if model.rope is None and extrapolation.method != "none":
            raise ValueError(
                f"extrapolation {extrapolation.method!r} changes RoPE frequencies, but this model uses absolute "
                "sin-cos positions; use 'none' (optionally with entropy_scaling)"
            )
        if model.rope is not None:
            extrapolation.check_axes(model.rope.embedding.axes_dims)  # e.g. riflex_index beyond the time axis
        self.reader, self.extrapolation, self.time = model, extrapolation, time
        self._configs: dict = {}
        if grid is not None:
            self.config_for(model.own_rope_config, grid, 1.0 if extrapolation.is_timestep_dependent else None)

    def attach(self) -> AttachedPlan:
        """Puts the plan on its model until `remove()` (a context manager)."""
        return attach(self.reader, self)

    def config_for(
        self, own: RopeConfig, grid: Sequence[int], time: float | None, spectrum: SegaSpectrum | None = None
    ) -> RopeConfig:
        """The `RopeConfig` for a token grid at diffusion time `time` (None for a static method) and, for sega,
        the latent's `spectrum`, from the model's own config `own`: `own` itself where the plan changes nothing
        (the trained encoding, not an equivalent copy), else `own` with the plan's scalings and logit scale.
        The same object for the same (own, grid, time, spectrum)."""
        key = (own, tuple(grid), time, spectrum)
        config = self._configs.get(key)
        if config is None:
            plan = self.extrapolation.plan(self.reader.base_grid, grid, time, spectrum=spectrum)
            if all(s is None for s in plan.scalings) and plan.logit_scale == 1.0:
                config = own
            else:
                attention_scale = own.attention_scale * plan.logit_scale
                if self.reader.rope is None:
                    config = dataclasses.replace(own, attention_scale=attention_scale)
                else:
                    config = dataclasses.replace(own, scaling=plan.scalings, attention_scale=attention_scale)
            if len(self._configs) >= 64:  # timestep-dependent methods plan every step: keep it bounded
                self._configs = {}
            self._configs[key] = config
        return config

    def state(self, module, args: tuple, kwargs: dict) -> RopeConfig:
        """The call's config: the grid of its `hidden_states`, its `timestep` read by `time` (clipped to [0, 1]),
        and for sega the spectrum of `hidden_states` on that grid (only beyond the trained grid)."""
        parameters = forward_parameters(type(module))
        latent = argument("hidden_states", args, kwargs, parameters)
        grid = module.token_grid(latent)
        time = spectrum = None
        if self.extrapolation.is_timestep_dependent:
            time = StepTime(self.time, argument(self.time.argument, args, kwargs, parameters)).value()
        beyond = any(n > trained for n, trained in zip(grid, self.reader.base_grid, strict=True))
        if self.extrapolation.is_latent_dependent and beyond:
            spectrum = self.extrapolation.spectrum(latent, grid)
        return self.config_for(module.own_rope_config, grid, time, spectrum)


__all__ = ["DIT_TIMESTEP", "DiTExtrapolation"]
