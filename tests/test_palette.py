"""The rank colours stay apart on a washed-out projector: every pair of the eight differs by at least 15
in CIEDE2000 (about what a room of people tells apart at a glance), and none is the pass/fail green or red,
the colour of summed data, or a process group's highlight."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

PALETTE = (Path(__file__).resolve().parent.parent / "app" / "static" / "js" / "palette.js").read_text()


def _array(name: str) -> list[str]:
    body = re.search(rf"export const {name} = \[(.*?)\];", PALETTE, re.S).group(1)
    return re.findall(r'"(#[0-9a-fA-F]{6})"', body)


def _object(name: str) -> dict[str, str]:
    body = re.search(rf"export const {name} = \{{(.*?)\}};", PALETTE, re.S).group(1)
    return dict(re.findall(r'(\w+): "(#[0-9a-fA-F]{6})"', body))


def _lab(colour: str) -> tuple[float, float, float]:
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92 for c in rgb]
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = [v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116 for v in xyz]
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def ciede2000(c1: str, c2: str) -> float:
    (l1, a1, b1), (l2, a2, b2) = _lab(c1), _lab(c2)
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar ** 7 / (c_bar ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p, h2p = math.degrees(math.atan2(b1, a1p)) % 360, math.degrees(math.atan2(b2, a2p)) % 360
    dh = 0.0 if c1p * c2p == 0 else (h2p - h1p + 180) % 360 - 180
    d_hp = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_bar, c_bar_p = (l1 + l2) / 2, (c1p + c2p) / 2
    h_bar = h1p + h2p if c1p * c2p == 0 else (h1p + h2p) / 2 if abs(h1p - h2p) <= 180 else (h1p + h2p + 360 * (1 if h1p + h2p < 360 else -1)) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_bar - 30)) + 0.24 * math.cos(math.radians(2 * h_bar))
         + 0.32 * math.cos(math.radians(3 * h_bar + 6)) - 0.20 * math.cos(math.radians(4 * h_bar - 63)))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / math.sqrt(20 + (l_bar - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_bar_p, 1 + 0.015 * c_bar_p * t
    r_t = (-math.sin(math.radians(60 * math.exp(-((h_bar - 275) / 25) ** 2)))
           * 2 * math.sqrt(c_bar_p ** 7 / (c_bar_p ** 7 + 25 ** 7)))
    return math.sqrt(((l2 - l1) / s_l) ** 2 + ((c2p - c1p) / s_c) ** 2 + (d_hp / s_h) ** 2
                     + r_t * ((c2p - c1p) / s_c) * (d_hp / s_h))


def test_ciede2000_spans_the_usual_scale():
    assert ciede2000("#123456", "#123456") == 0
    assert abs(ciede2000("#000000", "#ffffff") - 100) < 0.01


def test_eight_rank_colours_that_a_room_tells_apart():
    ranks = _array("RANK_COLOURS")
    assert len(ranks) == 8
    closest = min((ciede2000(a, b), a, b) for a, b in itertools.combinations(ranks, 2))
    assert closest[0] >= 15, closest


def test_no_rank_colour_is_an_outcome_a_sum_or_a_group_highlight():
    ranks = _array("RANK_COLOURS")
    outcome = _object("OUTCOME")
    others = [outcome["pass"], outcome["fail"], *_object("GROUP_COLOURS").values(),
              re.search(r'SUM_COLOUR = "(#\w{6})"', PALETTE).group(1)]
    closest = min((ciede2000(a, b), a, b) for a in ranks for b in others)
    assert closest[0] >= 12, closest
