"""DiT models built on the axialrope core (installed as `axialrope.models`)."""

from .text_lm import TextLMConfig, TinyCausalLM

__all__ = ["TextLMConfig", "TinyCausalLM"]
