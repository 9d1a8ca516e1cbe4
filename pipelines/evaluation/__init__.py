"""Evaluation: sliced Wasserstein distance and video metrics, repetition, the reference-free score and calibration;
perplexity and passkey retrieval for text."""
