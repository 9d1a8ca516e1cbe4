"""The reference-free score on constructed models: framed scenes and a stationary process, each with a right and
a wrong picture at twice the size; repetition and loops counted; bad input named."""

import pytest
import torch
import torch.nn.functional as F

from axialrope.pipelines.evaluation.self_reference import self_reference_score, stationarity, window_weight

from .test_repetition import disc, moving_square


def scenes(count: int, side: int, seed: int, objects: int = 1, scale: float = 1.0) -> torch.Tensor:
    """Framed scenes: `objects` discs per picture inside the frame, radius and place in units of the side
    (scale < 1 draws them smaller); (count, 3, side, side)."""
    g = torch.Generator().manual_seed(seed)
    pictures = []
    for _ in range(count):
        picture = None
        for _ in range(objects):
            radius = (0.15 + 0.1 * torch.rand(1, generator=g).item()) * side * scale
            centre = [side * (0.3 + 0.4 * torch.rand(1, generator=g).item()) for _ in range(2)]
            if objects > 1:  # spread over the canvas
                centre = [radius + (side - 2 * radius) * torch.rand(1, generator=g).item() for _ in range(2)]
            colour = torch.rand(3, generator=g).tolist()
            drawn = disc(side, tuple(centre), radius, colour)
            picture = drawn if picture is None else torch.where((drawn - picture).abs() > 0.05, drawn, picture)
        pictures.append(picture)
    return torch.stack(pictures)


def texture(count: int, side: int, seed: int, feature: int = 4) -> torch.Tensor:
    """A stationary process at a fixed scale in pixels (features of `feature` pixels), windows of a larger field
    (so no window has an edge of its own): (count, 3, side, side)."""
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(count, 3, side // feature + 4, side // feature + 4, generator=g)
    field = F.interpolate(base, scale_factor=feature, mode="bicubic", align_corners=False).clamp(0, 1)
    return field[..., 2 * feature : 2 * feature + side, 2 * feature : 2 * feature + side]


def test_framed_scenes_shrink_and_a_stationary_process_takes_windows():
    assert stationarity(scenes(16, 32, 0)) < 0.5 and window_weight(stationarity(scenes(16, 32, 0))) == 0
    assert stationarity(texture(16, 32, 0)) > 0.9 and window_weight(stationarity(texture(16, 32, 0))) == 1


def test_the_same_scene_finer_beats_many_small_objects():
    own = scenes(8, 32, 0)
    finer = self_reference_score(scenes(4, 64, 1), own)  # what a real 64x64 picture of such scenes is
    fragments = self_reference_score(scenes(4, 64, 1, objects=4, scale=0.5), own)  # objects of the trained size
    assert finer.window_weight == 0 and finer.value < fragments.value


def test_a_wider_window_beats_a_blurred_zoom():
    own = texture(8, 32, 0)
    wider = self_reference_score(texture(4, 64, 1), own)
    zoomed = F.interpolate(texture(4, 32, 1), size=(64, 64), mode="bilinear", align_corners=False)
    blurred = self_reference_score(zoomed, own)
    assert wider.window_weight == 1 and wider.value < blurred.value
    assert blurred.spectrum < wider.spectrum - 0.5 and blurred.spectrum < 0  # the zoom lost its fine detail


def test_a_tiled_canvas_is_counted_as_repeated():
    own = scenes(8, 32, 0)
    tiled = self_reference_score(scenes(4, 32, 1).repeat(1, 1, 2, 2), own)
    assert tiled.repetition > 0.5 and tiled.penalty > 0 and tiled.value > tiled.distance


def test_a_looped_clip_is_counted_and_a_continuing_one_is_not():
    own = torch.cat([moving_square(8, None, side=16), moving_square(8, None, side=16).flip(-1)])
    looped = self_reference_score(moving_square(16, loop=4, side=16).repeat(2, 1, 1, 1, 1), own)
    continuing = self_reference_score(moving_square(16, None, side=16).repeat(2, 1, 1, 1, 1), own)
    assert looped.loop > 0.5 and looped.penalty > continuing.penalty == 0
    assert continuing.loop is not None and continuing.loop < 0.5


@pytest.mark.parametrize(
    "samples, own, error, word",
    [
        (torch.rand(2, 3, 32, 32) * 2 - 1, torch.rand(4, 3, 32, 32), ValueError, r"samples .*\[0, 1\]"),
        (torch.rand(2, 3, 32, 32), torch.rand(4, 3, 8, 32, 32), ValueError, "both be pictures or both clips"),
        (torch.rand(2, 3, 32, 32), torch.rand(4, 3, 6, 6), ValueError, "8x8"),
        (torch.rand(2, 3, 16, 32), torch.rand(4, 3, 32, 32), ValueError, "at least own's size"),
        (torch.rand(2, 3, 32, 32), torch.zeros(4, 3, 32, 32, dtype=torch.uint8), ValueError, "own must be a float"),
        ("pictures", torch.rand(4, 3, 32, 32), ValueError, "samples must be a float"),
    ],
)
def test_bad_input_is_named(samples, own, error, word):
    with pytest.raises(error, match=word):
        self_reference_score(samples, own)


def test_a_framed_scene_framed_wider_beats_two_copies_side_by_side():
    """At another aspect (32x64 from 32x32) a real wider frame of the procedural scenes scores better than two
    scenes side by side, each of which a 32x32 window would find right."""
    from axialrope.pipelines.data.render import render_images
    from axialrope.pipelines.data.scenes import sample_scenes

    own = render_images(sample_scenes(7, range(8)), 32, 32)
    wider = self_reference_score(render_images(sample_scenes(8, range(4)), 32, 64), own)
    single = render_images(sample_scenes(9, range(8)), 32, 32)
    twice = self_reference_score(torch.cat([single[:4], single[4:]], dim=-1), own)
    assert wider.window_weight == 0 and wider.value < twice.value
    assert twice.window < wider.window  # what windows alone would have picked
