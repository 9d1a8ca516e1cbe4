"""Sampling beyond the DiT pipeline itself: writing a call's images and videos (`outputs.py`) and running
diffusers' own pipelines of the registered families (`diffusers_families.py`)."""
