"""Reference formulas of the extrapolation methods' authors, written out independently (shared fixtures).

Read for the formula only from: guyyariv/DyPE flux/transformer_flux.py (get_1d_rotary_pos_embed's
yarn/dype branch and FluxPosEmbed's ntk branch) and thu-ml/RIFLEx riflex_utils.py
(get_1d_rotary_pos_embed_riflex and identify_k).
"""

import math
import types

import numpy as np
import pytest


def dype_yarn(dim, theta, scale, trained, t):
    """Per pair: Dy-YaRN's inverse frequency (float64) and the cos/sin gain, as DyPE's Flux code has it."""
    kappa = t**2
    i = np.arange(0, dim, 2) / dim
    base = theta ** -i
    linear = base / scale
    ntk = (theta * scale ** (dim / (dim - 2))) ** -i

    def edge(rotations):  # fractional pair index where r_i = rotations
        return dim * math.log(trained / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    def mask(fast, slow):  # their band edges: floor/ceil, then clamped twice
        low = max(np.floor(edge(fast * kappa)), 0)
        high = min(np.ceil(edge(slow * kappa)), dim - 1, dim // 2)
        if low == high:
            high += 0.001
        return np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)

    ramp = mask(1.25, 0.75)
    freqs = linear * ramp + ntk * (1 - ramp)
    ramp = mask(16, 2)
    freqs = freqs * ramp + base * (1 - ramp)
    return freqs, 0.1 * math.log(scale) + 1


def dype_ntk(dim, theta, scale, t):
    """Dy-NTK's inverse frequencies: the base times (s^(d/(d-2)))^(2 t^2)."""
    return (theta * (scale ** (dim / (dim - 2))) ** (2 * t**2)) ** -(np.arange(0, dim, 2) / dim)


def riflex(dim, theta, k, length):
    """RIFLEx's temporal frequencies: pair k (1-based) set to 0.9 * 2 pi / L_test."""
    freqs = theta ** -(np.arange(0, dim, 2) / dim)
    freqs[k - 1] = 0.9 * 2 * math.pi / length
    return freqs


def identify_k(theta, dim, repetition):
    """RIFLEx's identify_k: the 1-based pair whose rounded period is closest to the repetition frame, and N_k."""
    periods = [round(2 * math.pi * theta ** (2 * (j - 1) / dim)) for j in range(1, dim // 2 + 1)]
    k = int(np.argmin([abs(p - repetition) for p in periods])) + 1
    return k, periods[k - 1]


@pytest.fixture
def authors():
    """The authors' formulas: dype_yarn, dype_ntk, riflex, identify_k."""
    return types.SimpleNamespace(dype_yarn=dype_yarn, dype_ntk=dype_ntk, riflex=riflex, identify_k=identify_k)
