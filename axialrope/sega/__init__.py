"""SEGA, spectral-energy guided attention (arXiv 2605.22668): the latent's spectrum and the per-pair magnitudes
(`spectrum.py`), and its part of `Extrapolation.plan` (`plan.py`)."""

from .plan import check_sega_options, sega_scalings, spatial_axes
from .spectrum import (
    DEFAULT_KAPPA,
    SEGA_REFERENCES,
    SegaSpectrum,
    axis_energy_profile,
    latent_spectrum,
    pair_magnitudes,
    radial_energy_profile,
    reference_magnitude,
    spectral_spread,
    token_map,
)

__all__ = [
    "DEFAULT_KAPPA",
    "SEGA_REFERENCES",
    "SegaSpectrum",
    "axis_energy_profile",
    "check_sega_options",
    "latent_spectrum",
    "pair_magnitudes",
    "radial_energy_profile",
    "reference_magnitude",
    "sega_scalings",
    "spatial_axes",
    "spectral_spread",
    "token_map",
]
