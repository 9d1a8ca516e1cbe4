"""Sampling: the diffusers pipeline, output writers and the bundled models (assets/)."""
