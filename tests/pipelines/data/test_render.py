"""The procedural scenes: deterministic from a seed, one scene at every resolution, shapes that bounce."""

import pytest
import torch
import torch.nn.functional as F

from axialrope.pipelines.data.render import render_images, render_videos, shape_centres
from axialrope.pipelines.data.scenes import SHAPE_KINDS, SceneConfig, sample_scenes


def test_same_seed_and_index_give_the_same_pixels_whatever_the_batch():
    alone = render_images(sample_scenes(7, [5]), 24, 24)
    in_batch = render_images(sample_scenes(7, [3, 5, 9]), 24, 24)[1:2]
    assert torch.equal(alone, in_batch)


def test_other_seed_or_index_gives_other_scenes():
    a = render_images(sample_scenes(0, range(8)), 16, 16)
    b = render_images(sample_scenes(1, range(8)), 16, 16)
    assert (a - b).abs().amax(dim=(1, 2, 3)).min() > 0.05
    assert (a[:-1] - a[1:]).abs().amax(dim=(1, 2, 3)).min() > 0.05


def test_a_32_and_a_96_rendering_of_one_scene_agree_after_downsampling():
    scenes = sample_scenes(3, range(32))
    small = render_images(scenes, 32, 32)
    large = F.avg_pool2d(render_images(scenes, 96, 96), 3)
    difference = (small - large).abs()
    # Only edge pixels differ (two approximations of pixel coverage); the picture is the same.
    assert difference.mean() < 3e-3
    assert (difference > 0.1).float().mean() < 2e-3


def test_non_square_frames_keep_shapes_round_and_inside():
    scenes = sample_scenes(0, range(64))
    wide = render_images(scenes, 32, 64)
    assert wide.shape == (64, 3, 32, 64)
    # A circle main shape spans as many pixels across as down in a 2:1 frame.
    circle = next(i for i, k in enumerate(scenes.labels.tolist()) if SHAPE_KINDS[k] == "circle")
    centres = shape_centres(scenes, torch.zeros(1), 32, 64)[circle, 0, 0]
    radius_px = scenes.radius[circle, 0] * 32
    row = wide[circle, :, int(centres[0] * 32)]  # (3, 64)
    col = wide[circle, :, :, int(centres[1] * 64)]  # (3, 32)
    colour = scenes.colour[circle, 0, :, None]
    across = ((row - colour).abs().amax(0) < 1e-3).sum()
    down = ((col - colour).abs().amax(0) < 1e-3).sum()
    assert abs(int(across) - int(down)) <= 2 and abs(int(across) - 2 * radius_px) <= 3


def test_values_in_unit_range_and_labels_are_the_main_shape_kind():
    scenes = sample_scenes(0, range(200))
    images = render_images(scenes, 16, 16)
    assert images.min() >= 0 and images.max() <= 1
    assert torch.equal(scenes.labels, scenes.kind[:, 0])
    assert set(scenes.labels.tolist()) == set(range(len(SHAPE_KINDS)))
    assert scenes.present[:, 0].all()
    others = scenes.radius[:, 1:][scenes.present[:, 1:]]
    assert others.max() < scenes.radius[:, 0].min()


def test_video_frame_zero_is_the_image_and_shapes_move():
    scenes = sample_scenes(2, range(6))
    video = render_videos(scenes, 5, 24, 32)
    assert video.shape == (6, 3, 5, 24, 32)
    assert torch.equal(video[:, :, 0], render_images(scenes, 24, 32))
    assert ((video[:, :, 1:] - video[:, :, :-1]).abs().amax(dim=(1, 2, 3, 4)) > 0.05).all()


def test_a_longer_video_is_longer_not_slower():
    scenes = sample_scenes(4, range(3))
    short, long = render_videos(scenes, 4, 16, 16), render_videos(scenes, 12, 16, 16)
    assert torch.equal(short, long[:, :, :4])


def test_shapes_bounce_and_stay_inside_the_frame():
    scenes = sample_scenes(5, range(50), SceneConfig(speed=(0.2, 0.3)))
    centres = shape_centres(scenes, torch.arange(60.0), 32, 48)  # (b, t, k, 2)
    extent = torch.stack([scenes.radius * 32 / 32, scenes.radius * 32 / 48], dim=-1)[:, None]
    assert (centres >= extent - 1e-5).all() and (centres <= 1 - extent + 1e-5).all()
    step = centres[:, 1:] - centres[:, :-1]
    assert (step[:, 1:] * step[:, :-1] < 0).any()  # some coordinate reversed: a bounce
    speed_y = scenes.velocity[..., 0].abs()[:, None]
    assert (step[..., 0].abs() <= speed_y + 1e-5).all()


def test_rotation_narrows_only_the_angles_and_scenes_are_upright_by_default():
    anywhere, upright = sample_scenes(3, range(20), SceneConfig(rotation=1)), sample_scenes(3, range(20))
    assert anywhere.angle.max() > 3.5 and (upright.angle == 0).all()
    assert torch.allclose(sample_scenes(3, range(20), SceneConfig(rotation=0.25)).angle, anywhere.angle / 4)
    for name in ("kind", "place", "radius", "colour", "present", "velocity", "background"):
        assert torch.equal(getattr(upright, name), getattr(anywhere, name)), name


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sample_scenes(-1, [0]), "seed"),
        (lambda: sample_scenes(0, []), "indices"),
        (lambda: sample_scenes(0, [-3]), "indices"),
        (lambda: render_images(sample_scenes(0, [0]), 0, 8), "height"),
        (lambda: render_images(sample_scenes(0, [0]), 8, 2.5), "width"),
        (lambda: render_videos(sample_scenes(0, [0]), 0, 8, 8), "num_frames"),
        (lambda: SceneConfig(max_shapes=0), "max_shapes"),
        (lambda: SceneConfig(main_radius=(0.3, 0.6)), "main_radius"),
        (lambda: SceneConfig(speed=(0.2, 0.1)), "speed"),
        (lambda: SceneConfig(rotation=1.5), "rotation"),
        (lambda: SceneConfig(rotation=True), "rotation"),
    ],
)
def test_bad_inputs_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
