"""Kinds of rope module, one small module each; a family declaration names its kind.

- `ids`: FluxPosEmbed and its copies (ids passed to the transformer; Flux.2, Flux3 too).
- `qwen`: QwenEmbedRope (image shapes; complex tables for images and text).
- `grid`: ropes called with the latent video (Wan, HunyuanVideo).
- `ltx`: LTX-Video's rope (omega (2 g - 1) over the inner dimension).
- `pipeline_tables`: tables the pipeline builds and passes in (CogVideoX).
- `frame_indices`: ropes given frame indices, height and width (Framepack).
- `anyflow`: AnyFlow's layout-driven complex tables, FAR's compressed context included.
- `embed_nd`: EmbedND ropes given batched ids built in the forward (HiDream, PRX, ERNIE-Image's angles).
- `qwen21`: Qwen-Image 2.1's rope over the joint text and image sequence.
- `rope_embedder`: Z-Image's RopeEmbedder (a plain object) and its copies (ControlNet, BriaFibo 2.0).
- `kandinsky`: Kandinsky 5 and 6's rotation matrices over positions divided by a scale factor.
`base` holds what they share; `references` the rule for reference images (the `reference` option).
"""
