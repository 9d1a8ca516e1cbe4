"""Kinds of rope module, one small module each; a family declaration names its kind.

- `ids`: FluxPosEmbed and its copies (ids passed to the transformer; Flux.2, Flux3 too).
- `qwen`: QwenEmbedRope (image shapes; complex tables for images and text).
- `grid`: ropes called with the latent video (Wan, HunyuanVideo).
- `ltx`: LTX-Video's rope (omega (2 g - 1) over the inner dimension).
- `pipeline_tables`: tables the pipeline builds and passes in (CogVideoX).
- `fitted`: grid tables by the family's position rule, from the pipeline or a rope module, most
  fitted into a fixed extent (HunyuanDiT, EasyAnimate, CogView4; GLM-Image).
- `lumina2`: Lumina2's caption-indexed complex tables (caption, image and joint).
- `lumina_next`: Lumina-Next's complex table from the pipeline, its axes' pairs alternating.
- `allegro`: Allegro's per-axis tables from the pipeline, with each token's rows.
- `mrope`: interleaved MRoPE over position ids, one frequency list dealt to the axes (Ideogram 4).
- `frame_indices`: ropes given frame indices, height and width (Framepack).
- `anyflow`: AnyFlow's layout-driven complex tables, FAR's compressed context included.
- `mochi`: learned frequencies mixing the axes (Mochi): methods that move positions only.
- `cosmos`: a theta per axis, time in frame-rate units, the half of pairs repeated (Cosmos).
- `helios`: frame indices per stream, one tensor of cos and sin channels (Helios).
- `sana_wm`: grid sizes in, a complex table out (SANA-WM).
- `joyimage`: a rope that is a method of the model, shadowed on the instance (JoyImage Edit).
- `ltx2`: LTX-2's video rope at the pipeline's coordinates, t, y and x extrapolated.
- `embed_nd`: EmbedND ropes given batched ids built in the forward (HiDream, PRX, ERNIE-Image's angles).
- `qwen21`: Qwen-Image 2.1's rope over the joint text and image sequence.
- `rope_embedder`: Z-Image's RopeEmbedder (a plain object) and its copies (ControlNet, BriaFibo 2.0).
- `kandinsky`: Kandinsky 5 and 6's rotation matrices over positions divided by a scale factor.
- `cosmos3`: interleaved MRoPE over Cosmos 3's packed omni sequence, the vision grid extrapolated.
`base` holds what they share; `references` the rule for reference images (the `reference` option).
"""
