"""Evaluation: sliced Wasserstein distance and video metrics; perplexity and passkey retrieval for text."""
