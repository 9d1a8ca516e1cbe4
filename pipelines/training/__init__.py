"""Training: the config, the accelerate loop, checkpoints, logs and pictures; the text LM's trainer."""
