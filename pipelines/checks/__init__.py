"""The factorization checks' subjects: axialrope and peers' rotary embeddings, adapted to one interface."""
