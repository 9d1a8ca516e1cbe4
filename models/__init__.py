"""DiT models built on the axialrope core (installed as `axialrope.models`)."""
