"""The DiT's diffusers pipeline and the folders it lives in: `AxialDiTPipeline` (`pipeline.py`), its
schedulers and default extrapolation, model, pipeline and training-run folders read as models, and the
bundled models (`assets/`). Training builds and saves these pipelines; sampling and evaluation call them."""
