"""Training, sampling, data and metrics on top of `axialrope.models` (installed as `axialrope.pipelines`)."""
