"""diffusers' ropes, a module each: the rope's kind (`RopeKind`), its replacement and the families that use it.

- `flux`: FluxPosEmbed and its copies, ids passed to the transformer (Chroma, Krea2, Bria, ..., Flux.2, Flux3).
- `qwen_image`: QwenEmbedRope (Qwen-Image, NucleusMoE-Image) and Qwen-Image 2.1's rope over the joint sequence.
- `wan_hunyuan_video`: ropes called with the latent video (Wan, HunyuanVideo and their copies, HunyuanImage).
- `ltx_video`: LTX-Video's rope (omega (2 g - 1) over the inner dimension).
- `cogvideox`: tables the pipeline builds and passes in (CogVideoX, ConsisID).
- `fitted`: grid tables by the family's position rule, most fitted into a fixed extent (HunyuanDiT, EasyAnimate,
  CogView4; GLM-Image).
- `lumina`: Lumina2's caption-indexed complex tables; Lumina-Next's complex table from the pipeline.
- `allegro`: Allegro's per-axis tables from the pipeline, with each token's rows.
- `ideogram4`: interleaved MRoPE over position ids, one frequency list dealt to the axes (Ideogram 4).
- `framepack`: HunyuanVideo's rope given frame indices, height and width (Framepack).
- `anyflow`: AnyFlow's layout-driven complex tables, FAR's compressed context included.
- `mochi`: learned frequencies mixing the axes (Mochi): methods that move positions only.
- `cosmos`: a theta per axis, time in frame-rate units, the half of pairs repeated (Cosmos 1.0, 2, 2.5).
- `helios`: frame indices per stream, one tensor of cos and sin channels (Helios).
- `sana_wm`: grid sizes in, a complex table out (SANA-WM).
- `joyimage`: a rope that is a method of the model, shadowed on the instance (JoyImage Edit, Edit Plus).
- `ltx2`: LTX-2's video rope at the pipeline's coordinates, t, y and x extrapolated.
- `embed_nd`: EmbedND ropes given batched ids built in the forward (HiDream, PRX, ERNIE-Image's angles).
- `z_image`: Z-Image's RopeEmbedder (a plain object) and its copies (ControlNet, BriaFibo 2.0).
- `kandinsky`: Kandinsky 5 and 6's rotation matrices over positions divided by a scale factor.
- `cosmos3`: interleaved MRoPE over Cosmos 3's packed omni sequence, the vision grid extrapolated.
`base` holds what they share; `references` the rule for reference images (the `reference` option).
"""
