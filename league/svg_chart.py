"""Every picture sparring draws, as SVG with no plotting library: line charts (with labelled marks and flat
reference levels), a payoff heatmap, a timeline of events and the colour of a win rate.

The report page inlines them (its charts must work in a base install, and their ``<title>`` tooltips name each
point and cell); :mod:`sparring.league.plots` writes the same pictures as files (:func:`svg_file`)."""
from __future__ import annotations

import html
import math
import re
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

PALETTE = ('#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22',
           '#17becf')
# Flat reference levels (the bots' ratings): a colour and a dash pattern each, unlike the players' solid lines.
LEVEL_STYLES = (('#555555', '6 3'), ('#8c564b', '2 3'), ('#bcbd22', '10 3 2 3'), ('#17becf', '12 5'),
                ('#e377c2', '1 3'), ('#7f7f7f', '6 2 1 2 1 2'))
Point = Tuple[float, float]
Mark = Tuple[float, float, str, str]  # (x, y, label, name): a dot with its label above, its name in the tooltip
MAX_DOTS = 200  # a series with more points is drawn as a line only: its dots would hide it
MAX_ANNOTATED = 30  # with more players a side the win rates would not fit in their cells
UNKNOWN_GREY = 224  # the grey of a win rate from too few games

# The charts' styles, by class: the report page puts them in its <style>, a picture file in its own.
CHART_CSS = """
svg { margin: 8px 16px 8px 0; font-family: sans-serif; } svg .title { font-size: 13px; font-weight: bold; }
svg .tick { font-size: 10px; fill: #444; } svg .label { font-size: 11px; fill: #222; }
svg .axis { stroke: #444; } svg .grid { stroke: #eee; } svg .cell { font-size: 10px; }
"""


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def win_rate_rgb(rates) -> np.ndarray:
    """``[..., 3]`` RGB floats (0-255): red at 0 through white at 0.5 to blue at 1; grey where a rate is NaN."""
    rate = np.clip(np.asarray(rates, dtype=np.float64), 0.0, 1.0)[..., None]
    red, white, blue = (np.array(c, np.float64) for c in ((214, 39, 40), (255, 255, 255), (31, 119, 180)))
    rgb = np.where(rate < 0.5, red + (white - red) * (rate / 0.5), white + (blue - white) * ((rate - 0.5) / 0.5))
    return np.where(np.isnan(rate), float(UNKNOWN_GREY), rgb)


def win_rate_colour(rate: Optional[float]) -> str:
    """``win_rate_rgb`` of one rate as ``#rrggbb``; light grey for an unknown rate."""
    rgb = win_rate_rgb(np.nan if rate is None else rate)
    return '#%02x%02x%02x' % tuple(int(round(c)) for c in rgb)


def _ticks(low: float, high: float, count: int = 5) -> List[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw), default=raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _number(value: float) -> str:
    if abs(value) >= 1e6:
        return f'{value / 1e6:g}M'
    if abs(value) >= 1e3:
        return f'{value / 1e3:g}k'
    return f'{value:g}'


def x_range_of(low: float, high: float) -> Tuple[float, float]:
    """The x axis for data from ``low`` to ``high``: a lone value (one evaluation) gets a span from 0 (or
    around it), so the axis reads 0 ... x rather than one number repeated, and the points keep off the y axis."""
    if high > low:
        return low, high
    if high > 0:
        return 0.0, high * 1.05
    return low - 1.0, high + 1.0


class Frame:
    """The plot area of a chart: maps data to pixels and draws the axes."""

    def __init__(self, x_range: Tuple[float, float], y_range: Tuple[float, float], width: int = 640,
                 height: int = 260, left: int = 56, right: int = 150, top: int = 28, bottom: int = 40) -> None:
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = left, right, top, bottom
        self.x0, self.x1 = x_range_of(*x_range)
        y0, y1 = y_range
        # A lone value (one evaluation's Elo of 1474) gets a span of 5 % of its size, which reads in round ticks.
        pad = (y1 - y0) * 0.05 if y1 > y0 else max(abs(y0) * 0.05, 1.0)
        self.y0, self.y1 = y0 - pad, y1 + pad

    def x(self, value: float) -> float:
        span = self.width - self.left - self.right
        return self.left + (value - self.x0) / (self.x1 - self.x0) * span

    def y(self, value: float) -> float:
        span = self.height - self.top - self.bottom
        return self.height - self.bottom - (value - self.y0) / (self.y1 - self.y0) * span

    def axes(self, title: str, x_label: str, y_label: str) -> List[str]:
        bottom, right = self.height - self.bottom, self.width - self.right
        parts = [f'<text x="{self.left}" y="16" class="title">{html.escape(title)}</text>',
                 f'<line x1="{self.left}" y1="{bottom}" x2="{right}" y2="{bottom}" class="axis"/>',
                 f'<line x1="{self.left}" y1="{self.top}" x2="{self.left}" y2="{bottom}" class="axis"/>']
        for tick in _ticks(self.x0, self.x1):
            x = self.x(tick)
            parts.append(f'<text x="{x:.1f}" y="{bottom + 14}" class="tick" text-anchor="middle">{_number(tick)}</text>')
        for tick in _ticks(self.y0, self.y1):
            y = self.y(tick)
            parts.append(f'<line x1="{self.left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" class="grid"/>')
            parts.append(f'<text x="{self.left - 4}" y="{y + 4:.1f}" class="tick" text-anchor="end">{_number(tick)}</text>')
        parts.append(f'<text x="{(self.left + right) / 2:.0f}" y="{self.height - 6}" class="label" '
                     f'text-anchor="middle">{html.escape(x_label)}</text>')
        parts.append(f'<text x="12" y="{(self.top + bottom) / 2:.0f}" class="label" text-anchor="middle" '
                     f'transform="rotate(-90 12 {(self.top + bottom) / 2:.0f})">{html.escape(y_label)}</text>')
        return parts

    def legend_entry(self, index: int, name: str, swatch: str, line: bool = False) -> List[str]:
        """The ``index``-th line of the legend, right of the plot: a swatch (its SVG attributes: a square, or with
        ``line`` a short stroke, as the chart draws it) and the name."""
        x, y = self.width - self.right + 10, self.top + 14 * index
        mark = (f'<line x1="{x - 4}" y1="{y + 5}" x2="{x + 11}" y2="{y + 5}" stroke-width="2" {swatch}/>' if line
                else f'<rect x="{x}" y="{y}" width="10" height="10" {swatch}/>')
        return [mark, f'<text x="{x + 14}" y="{y + 9}" class="tick">{html.escape(name)}</text>']

    def svg(self, parts: Sequence[str]) -> str:
        return _svg(self.width, self.height, parts)


def line_chart(series: Mapping[str, Sequence[Point]], title: str, x_label: str, y_label: str,
               y_range: Optional[Tuple[float, float]] = None, bands: Optional[Mapping[str, Sequence[Point]]] = None,
               width: int = 640, height: int = 260, x_from_zero: bool = False,
               marks: Optional[Mapping[str, Sequence[Mark]]] = None,
               levels: Optional[Mapping[str, float]] = None) -> str:
    """One line per named series of ``(x, y)`` points; ``bands[name]`` (``(low, high)`` per point of the
    series) shades a spread around a line, ``marks[name]`` adds labelled dots in its colour and ``levels`` draws
    named flat lines (e.g. the reference players' ratings), each in its own colour and dash pattern
    (``LEVEL_STYLES``), its legend swatch drawn alike. Empty series are left out; no series at all:
    a note. ``x_from_zero``: the x axis starts at 0 (env steps: a run's course is read from its start)."""
    series = {name: list(points) for name, points in series.items() if points}
    if not series:
        return f'<p class="note">{html.escape(title)}: nothing recorded yet.</p>'
    marks, levels = marks or {}, levels or {}
    xs = [p[0] for points in series.values() for p in points] + [m[0] for dots in marks.values() for m in dots]
    ys = [p[1] for points in series.values() for p in points] + [m[1] for dots in marks.values() for m in dots]
    ys += list(levels.values())
    for spread in (bands or {}).values():
        ys += [v for pair in spread for v in pair]
    legend_width = 34 + 6 * max(len(name) for name in list(series) + list(levels))  # ~6 px a character at 10 px
    low = min(0.0, min(xs)) if x_from_zero else min(xs)
    high = max(xs)
    margin = (high - low) * 0.03  # the first and last points keep off the axes
    frame = Frame((low - (margin if low == min(xs) else 0.0), high + margin), y_range or (min(ys), max(ys)),
                  width + legend_width - 150, height, right=legend_width)
    parts = frame.axes(title, x_label, y_label)
    for index, (name, points) in enumerate(series.items()):
        stroke = colour(index)
        band = (bands or {}).get(name)
        if band:
            upper = ' '.join(f'{frame.x(x):.1f},{frame.y(hi):.1f}' for (x, _), (_, hi) in zip(points, band))
            lower = ' '.join(f'{frame.x(x):.1f},{frame.y(lo):.1f}' for (x, _), (lo, _) in reversed(list(zip(points, band))))
            parts.append(f'<polygon points="{upper} {lower}" fill="{stroke}" opacity="0.15"/>')
        path = ' '.join(f'{frame.x(x):.1f},{frame.y(y):.1f}' for x, y in points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{stroke}" stroke-width="2"/>')
        for x, y in points if len(points) <= MAX_DOTS else ():
            parts.append(f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="2.5" fill="{stroke}">'
                         f'<title>{html.escape(name)}: {y:.4g} at {x:g}</title></circle>')
        for x, y, label, mark_name in marks.get(name, ()):
            parts.append(f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="4" fill="white" stroke="{stroke}" '
                         f'stroke-width="1.5"><title>{html.escape(mark_name)}: {y:.4g} at {x:g}</title></circle>')
            parts.append(f'<text x="{frame.x(x):.1f}" y="{frame.y(y) - 7:.1f}" class="tick" text-anchor="middle" '
                         f'fill="{stroke}">{html.escape(label)}</text>')
        parts += frame.legend_entry(index, name, f'fill="{stroke}"')
    for offset, (name, level) in enumerate(levels.items()):
        y = frame.y(level)
        ink, dashes = LEVEL_STYLES[offset % len(LEVEL_STYLES)]
        style = f'stroke="{ink}" stroke-dasharray="{dashes}"'
        parts.append(f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.width - frame.right}" y2="{y:.1f}" '
                     f'stroke-width="1.5" {style}><title>{html.escape(name)}: {level:.4g}</title></line>')
        parts += frame.legend_entry(len(series) + offset, name, style, line=True)
    return frame.svg(parts)


def heatmap(row_ids: Sequence[str], col_ids: Sequence[str], rates: np.ndarray, games: np.ndarray,
            min_games: float, title: str) -> str:
    """The win rate of each row player against each column player as a coloured cell (``win_rate_colour``;
    grey where the pair played fewer than ``min_games`` games, or none), written in the cell when no side
    has more than ``MAX_ANNOTATED`` players; each cell's tooltip gives its games and rate."""
    if not len(row_ids) or not len(col_ids):
        return f'<p class="note">{html.escape(title)}: no players yet.</p>'
    cell = max(6, min(38, 1400 // max(len(row_ids), len(col_ids))))  # a big league's map stays on a screen
    annotate = max(len(row_ids), len(col_ids)) <= MAX_ANNOTATED
    left = 12 + 6 * max(len(pid) for pid in row_ids)  # ~6 px a character at 10 px
    top = 30 + 6 * max(len(pid) for pid in col_ids)
    # Wide enough for the colour scale's words under a small map.
    width, height = max(left + cell * len(col_ids) + 16, left + 420), top + cell * len(row_ids) + 40
    parts = [f'<text x="4" y="16" class="title">{html.escape(title)}</text>']
    for j, away in enumerate(col_ids):
        x, y = left + cell * j + cell / 2 + 3, top - 4
        parts.append(f'<text x="{x:.1f}" y="{y}" class="tick" transform="rotate(-90 {x:.1f} {y})">'
                     f'{html.escape(away)}</text>')
    for i, home in enumerate(row_ids):
        y = top + cell * i
        parts.append(f'<text x="{left - 4}" y="{y + cell / 2 + 3:.1f}" class="tick" text-anchor="end">'
                     f'{html.escape(home)}</text>')
        for j, away in enumerate(col_ids):
            n = float(games[i, j])
            rate = float(rates[i, j]) if n > 0 and n >= min_games else None
            tip = f'{home} vs {away}: {n:.0f} games' + ('' if rate is None else f', win rate {rate:.3f}')
            x = left + cell * j
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{win_rate_colour(rate)}" '
                         f'stroke="#fff"><title>{html.escape(tip)}</title></rect>')
            if annotate and rate is not None:
                ink = '#fff' if abs(rate - 0.5) > 0.3 else '#222'
                parts.append(f'<text x="{x + cell / 2}" y="{y + cell / 2 + 3.5}" class="cell" text-anchor="middle" '
                             f'fill="{ink}">{rate:.2f}</text>')
    legend_y = top + cell * len(row_ids) + 14
    for k in range(11):  # the colour scale, 0 to 1 by tenths
        parts.append(f'<rect x="{left + 16 * k}" y="{legend_y}" width="16" height="10" '
                     f'fill="{win_rate_colour(k / 10)}"/>')
    parts.append(f'<text x="{left - 4}" y="{legend_y + 9}" class="tick" text-anchor="end">0</text>')
    parts.append(f'<text x="{left + 180}" y="{legend_y + 9}" class="tick">1 (win rate; grey: too few games)</text>')
    return _svg(width, height, parts)


def _svg(width: int, height: int, parts: Sequence[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">' + ''.join(parts) + '</svg>')


def svg_file(svg: str) -> str:
    """A chart as a stand-alone SVG document: its styles inside, on a white ground (a chart with nothing to
    draw, which is a page's note, becomes a picture of the note's words)."""
    if not svg.startswith('<svg'):
        words = html.escape(html.unescape(re.sub(r'<[^>]+>', '', svg)))
        svg = _svg(12 + 7 * len(words), 40, [f'<text x="6" y="24" class="label">{words}</text>'])
    head, rest = svg.split('>', 1)
    return (f'<?xml version="1.0" encoding="utf-8"?>\n{head}><style>{CHART_CSS}</style>'
            f'<rect width="100%" height="100%" fill="#fff"/>{rest}\n')


def timeline(rows: Dict[str, List[dict]], end: float, title: str, x_label: str, width: int = 640) -> str:
    """One row per name with events ``dict(x, label, kind)`` on it: ``kind`` 'snapshot' (a labelled
    dot) or 'reset' (a red bar)."""
    if not rows:
        return f'<p class="note">{html.escape(title)}: nothing recorded yet.</p>'
    height = 68 + 34 * len(rows)
    xs = [e['x'] for events in rows.values() for e in events] + [0.0, end]
    frame = Frame((min(xs), max(xs)), (0, len(rows)), width, height, left=130, right=30)
    parts = [f'<text x="{frame.left}" y="16" class="title">{html.escape(title)}</text>']
    bottom = height - frame.bottom
    parts.append(f'<line x1="{frame.left}" y1="{bottom}" x2="{width - frame.right}" y2="{bottom}" class="axis"/>')
    for tick in _ticks(frame.x0, frame.x1):
        parts.append(f'<text x="{frame.x(tick):.1f}" y="{bottom + 14}" class="tick" text-anchor="middle">'
                     f'{_number(tick)}</text>')
    parts.append(f'<text x="{(frame.left + width - frame.right) / 2:.0f}" y="{height - 6}" class="label" '
                 f'text-anchor="middle">{html.escape(x_label)}</text>')
    for index, (name, events) in enumerate(rows.items()):
        y = frame.top + 17 + 34 * index
        stroke = colour(index)
        parts.append(f'<text x="{frame.left - 8}" y="{y + 4}" class="tick" text-anchor="end">{html.escape(name)}</text>')
        parts.append(f'<line x1="{frame.left}" y1="{y}" x2="{frame.x(end):.1f}" y2="{y}" stroke="{stroke}" '
                     f'stroke-width="2"/>')
        for event in events:
            x = frame.x(event['x'])
            tip = html.escape(f'{event["label"]}: {event.get("detail", "")}')
            if event['kind'] == 'reset':
                parts.append(f'<rect x="{x - 2:.1f}" y="{y - 10}" width="4" height="20" fill="#d62728">'
                             f'<title>{tip}</title></rect>')
            else:
                parts.append(f'<circle cx="{x:.1f}" cy="{y}" r="5" fill="{stroke}"><title>{tip}</title></circle>')
                parts.append(f'<text x="{x:.1f}" y="{y - 9}" class="tick" text-anchor="middle">'
                             f'{html.escape(str(event.get("short", "")))}</text>')
    return frame.svg(parts)
