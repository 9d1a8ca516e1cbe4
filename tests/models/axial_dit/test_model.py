"""The DiT for images and video: shapes, independence, gradients, init, compile, bad input."""

import pytest
import torch

from axialrope.models import DiT, DiTOutput, create_dit


@pytest.mark.parametrize(
    "overrides, shape",
    [
        ({}, (2, 3, 8, 8)),  # the trained size
        ({}, (2, 3, 8, 20)),  # non-square, wider than trained
        ({}, (1, 3, 14, 6)),  # non-square, taller
        ({"position_encoding": "sincos"}, (2, 3, 12, 8)),
        ({"num_frames": 4}, (2, 3, 5, 8, 6)),  # odd frame count with temporal patch 1
        ({"num_frames": 4, "temporal_patch_size": 2}, (1, 3, 6, 8, 10)),  # 3 latent frames
        ({"num_frames": 4, "position_encoding": "sincos"}, (2, 3, 3, 6, 8)),
        ({"out_channels": 5}, (2, 3, 8, 8)),
    ],
)
def test_output_has_the_input_grid(make_model, overrides, shape):
    model = make_model(**overrides)
    labels = torch.zeros(shape[0], dtype=torch.long)
    out = model(torch.randn(shape), timestep=torch.tensor([3.0] * shape[0]), class_labels=labels)
    assert isinstance(out, DiTOutput)
    expected = (shape[0], overrides.get("out_channels", 3), *shape[2:])
    assert out.sample.shape == expected
    assert torch.isfinite(out.sample).all()


def test_return_dict_false_gives_a_tuple_as_diffusers_models_do(make_model):
    model = make_model()
    x = torch.randn(2, 3, 8, 8)
    (sample,) = model(x, 10, return_dict=False)
    torch.testing.assert_close(sample, model(x, 10).sample, rtol=0, atol=0)


def test_grid_order_follows_the_input_layout(make_model):
    """A patch that moves in the input moves to the same place in the output, when the
    model cannot see positions (RoPE with every coordinate ~0): patchify and unpatchify
    put each token back where it came from, for a non-square grid."""
    from axialrope.models import RopeConfig

    model = make_model()
    model.rope_config = RopeConfig(scale=1e-30)  # a spacing of 0 is refused; this one rotates by < 1e-26
    x = torch.randn(1, 3, 8, 12)
    rolled = torch.roll(x, shifts=(2, 4), dims=(2, 3))  # whole patches (patch 2)
    out, out_rolled = model(x, 5).sample, model(rolled, 5).sample
    torch.testing.assert_close(torch.roll(out, shifts=(2, 4), dims=(2, 3)), out_rolled, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("overrides", [{}, {"position_encoding": "sincos"}, {"num_frames": 4}, {"text_dim": 6}])
def test_a_sample_does_not_depend_on_the_rest_of_the_batch(make_model, overrides):
    model = make_model(**overrides).double()
    shape = (3, 3, 4, 8, 8) if "num_frames" in overrides else (3, 3, 8, 8)
    x = torch.randn(shape, dtype=torch.float64)
    t = torch.tensor([1.0, 500.0, 999.0], dtype=torch.float64)
    y = torch.tensor([0, 3, 4])
    text = torch.randn(3, 5, 6, dtype=torch.float64) if "text_dim" in overrides else None
    full = model(x, t, y, encoder_hidden_states=text).sample
    for i in range(3):
        alone = model(
            x[i : i + 1], t[i : i + 1], y[i : i + 1], encoder_hidden_states=None if text is None else text[i : i + 1]
        ).sample
        torch.testing.assert_close(alone[0], full[i], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "overrides", [{"qk_norm": True, "text_dim": 6}, {"num_frames": 4, "position_encoding": "sincos"}]
)
def test_gradients_reach_every_parameter(make_model, overrides):
    model = make_model(**overrides).train()
    shape = (2, 3, 2, 8, 8) if "num_frames" in overrides else (2, 3, 8, 8)
    text = torch.randn(2, 4, 6) if "text_dim" in overrides else None
    labels = torch.tensor([1, model.null_class])  # the null class row is a parameter too
    out = model(torch.randn(shape), torch.tensor([10.0, 700.0]), labels, encoder_hidden_states=text).sample
    out.square().mean().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, f"{name} got no gradient"
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, f"{name} has an all-zero gradient"


def test_gradient_checkpointing_gives_the_same_gradients(make_model):
    grads = []
    for checkpointing in (False, True):
        model = make_model().train()
        if checkpointing:
            model.enable_gradient_checkpointing()
        model(torch.ones(2, 3, 8, 8), 3).sample.sum().backward()
        grads.append([p.grad for p in model.parameters()])
    for plain, checkpointed in zip(*grads, strict=True):
        torch.testing.assert_close(plain, checkpointed)


@pytest.mark.parametrize("overrides", [{}, {"num_frames": 4, "qk_norm": True}])
def test_at_init_every_block_is_the_identity_and_the_output_is_zero(overrides):
    torch.manual_seed(0)
    model = create_dit("tiny", sample_size=8, in_channels=3, num_classes=4, **overrides)
    grid = model.base_grid
    x = torch.randn(2, int(torch.tensor(grid).prod()), 64)
    c = torch.randn(2, 64)
    rope = model.rope.table(grid)
    for block in model.blocks:
        assert torch.equal(block(x, c, rope), x)
    shape = (2, 3, 4, 8, 8) if "num_frames" in overrides else (2, 3, 8, 8)
    assert torch.equal(model(torch.randn(shape), 5).sample, torch.zeros(shape))


def test_class_labels_none_means_the_null_class(make_model):
    model = make_model()
    x = torch.randn(2, 3, 8, 8)
    null = torch.full((2,), model.null_class)
    torch.testing.assert_close(model(x, 5).sample, model(x, 5, null).sample, rtol=0, atol=0)
    assert not torch.allclose(model(x, 5, torch.tensor([0, 1])).sample, model(x, 5).sample)


def test_timestep_as_number_or_scalar_or_batch_agree(make_model):
    model = make_model()
    x = torch.randn(2, 3, 8, 8)
    a = model(x, 250).sample
    torch.testing.assert_close(model(x, torch.tensor(250.0)).sample, a, rtol=0, atol=0)
    torch.testing.assert_close(model(x, torch.tensor([250.0, 250.0])).sample, a, rtol=0, atol=0)


@pytest.mark.parametrize(
    "overrides", [{}, {"num_frames": 4, "text_dim": 6, "qk_norm": True}, {"position_encoding": "sincos"}]
)
def test_torch_compile_fullgraph_has_no_graph_break(make_model, overrides):
    # the "eager" backend runs dynamo's tracing (where graph breaks happen) without codegen
    torch._dynamo.reset()
    model = make_model(**overrides)
    shape = (2, 3, 2, 8, 8) if "num_frames" in overrides else (2, 3, 8, 12)
    x = torch.randn(shape)
    text = torch.randn(2, 3, 6) if "text_dim" in overrides else None
    labels = torch.tensor([0, 2])
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    expected = model(x, torch.tensor([4.0, 9.0]), labels, encoder_hidden_states=text).sample
    got = compiled(x, torch.tensor([4.0, 9.0]), labels, encoder_hidden_states=text).sample
    torch.testing.assert_close(got, expected)


@pytest.mark.slow
def test_torch_compile_inductor_matches_eager(make_model):
    torch._dynamo.reset()
    model = make_model()
    x = torch.randn(2, 3, 8, 12)
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(x, 7).sample, model(x, 7).sample, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("overrides", [{"qk_norm": True}, {"position_encoding": "sincos"}])
def test_bfloat16_weights_give_a_bfloat16_output_close_to_float32(make_model, overrides):
    model = make_model(**overrides)
    x = torch.randn(2, 3, 8, 12)
    expected = model(x, 40).sample
    got = model.to(torch.bfloat16)(x.bfloat16(), 40).sample
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), expected, rtol=0.05, atol=0.05)


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, shape, match",
    [
        ({}, (1, 3, 8, 7), "width 7 is not divisible by the patch size 2"),
        ({}, (1, 3, 9, 8), "height 9 is not divisible"),
        ({}, (1, 4, 8, 8), "4 channels, the model expects in_channels=3"),
        ({"num_frames": 4, "temporal_patch_size": 2}, (1, 3, 5, 8, 8), "frames 5 is not divisible by the patch size 2"),
        ({}, (1, 3, 2, 8, 8), r"\(b, c, h, w\) for this image model \(2 grid axes\)"),
        ({"num_frames": 4}, (1, 3, 8, 8), r"\(b, c, t, h, w\) for this video model"),
    ],
)
def test_bad_input_shapes_are_rejected_clearly(make_model, overrides, shape, match):
    model = make_model(**overrides)
    with pytest.raises(ValueError, match=match):
        model(torch.randn(shape), 1)


@pytest.mark.parametrize("labels", [[0, 5], [-1, 0]])
def test_class_ids_out_of_range_are_rejected(make_model, labels):
    model = make_model()  # 4 classes: ids 0..3, null class 4
    with pytest.raises(ValueError, match=r"class_labels must be in 0 \.\. 4"):
        model(torch.randn(2, 3, 8, 8), 1, torch.tensor(labels))


def test_other_bad_conditioning_is_rejected(make_model):
    model = make_model()
    x = torch.randn(2, 3, 8, 8)
    with pytest.raises(TypeError, match="class_labels must be an integer tensor"):
        model(x, 1, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"class_labels must have shape \(2,\)"):
        model(x, 1, torch.tensor([0]))
    with pytest.raises(ValueError, match=r"timestep must be a scalar or have shape \(2,\)"):
        model(x, torch.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="text_dim=None"):
        model(x, 1, encoder_hidden_states=torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match="unconditional"):
        make_model(num_classes=0)(x, 1, torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="hidden_states must be a torch.Tensor"):
        model(x.numpy(), 1)
    with pytest.raises(ValueError, match=r"encoder_hidden_states must have shape \(2, n_text, 6\)"):
        make_model(text_dim=6)(x, 1, encoder_hidden_states=torch.randn(2, 3, 5))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"position_encoding": "learned"}, ValueError, "position_encoding must be one of"),
        ({"hidden_size": 60, "num_heads": 8}, ValueError, "divisible by num_heads=8"),
        ({"sample_size": 9}, ValueError, "size 9 along height is not divisible by the patch size 2"),
        ({"num_frames": 5, "temporal_patch_size": 2}, ValueError, "along frames is not divisible"),
        ({"num_classes": -1}, ValueError, "num_classes must be a non-negative integer"),
        ({"depth": 0}, ValueError, "depth must be a positive integer"),
        ({"rope_axes_dims": (16, 16)}, ValueError, "more than head_dim"),
        ({"frame_noise_correlation": 0.5}, ValueError, "needs a video model"),
        ({"num_frames": 4, "frame_noise_correlation": 1.0}, ValueError, r"in \[0, 1\)"),
        ({"num_frames": 4, "frame_noise_correlation": "0.5"}, ValueError, r"in \[0, 1\)"),
    ],
)
def test_bad_configs_are_rejected_at_construction(kwargs, error, match):
    base = dict(hidden_size=64, depth=1, num_heads=4, sample_size=8, in_channels=3)
    base.update(kwargs)
    with pytest.raises(error, match=match):
        DiT(**base)
