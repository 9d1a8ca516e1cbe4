"""The DiT (Peebles and Xie) with axial RoPE: model, blocks, input layers, position encodings, sizes, inflation.

Not named `dit/`: diffusers takes a class whose parent folder shares a name with one of its own
pipeline folders (diffusers.pipelines.dit) for that pipeline's, and writes a model_index.json
entry that cannot be loaded.
"""
