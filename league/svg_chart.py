"""Small pictures as inline SVG and HTML, with no plotting library: line charts, a timeline of events and
the colour of a win rate. They go into the self-contained league report page."""
from __future__ import annotations

import html
import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

PALETTE = ('#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22',
           '#17becf')
Point = Tuple[float, float]


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def win_rate_colour(rate: Optional[float]) -> str:
    """Red (0) through white (0.5) to blue (1); light grey for an unknown rate."""
    if rate is None or rate != rate:
        return '#e0e0e0'
    rate = min(max(rate, 0.0), 1.0)
    if rate < 0.5:
        t = rate / 0.5
        rgb = (214 + (255 - 214) * t, 39 + (255 - 39) * t, 40 + (255 - 40) * t)
    else:
        t = (rate - 0.5) / 0.5
        rgb = (255 - (255 - 31) * t, 255 - (255 - 119) * t, 255 - (255 - 180) * t)
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

    def svg(self, parts: Sequence[str]) -> str:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}">' + ''.join(parts) + '</svg>')


def line_chart(series: Mapping[str, Sequence[Point]], title: str, x_label: str, y_label: str,
               y_range: Optional[Tuple[float, float]] = None, bands: Optional[Mapping[str, Sequence[Point]]] = None,
               width: int = 640, height: int = 260, x_from_zero: bool = False) -> str:
    """One line per named series of ``(x, y)`` points; ``bands[name]`` (``(low, high)`` per point of the
    series) shades a spread around a line. Empty series are left out; no series at all: a note.
    ``x_from_zero``: the x axis starts at 0 (env steps: a run's course is read from its start)."""
    series = {name: list(points) for name, points in series.items() if points}
    if not series:
        return f'<p class="note">{html.escape(title)}: nothing recorded yet.</p>'
    xs = [p[0] for points in series.values() for p in points]
    ys = [p[1] for points in series.values() for p in points]
    for spread in (bands or {}).values():
        ys += [v for pair in spread for v in pair]
    legend_width = 34 + 6 * max(len(name) for name in series)  # about 6 px a character at 10 px
    low = min(0.0, min(xs)) if x_from_zero else min(xs)
    high = max(xs)
    margin = (high - low) * 0.03  # the first and last points keep off the axes
    frame = Frame((low - (margin if low == min(xs) else 0.0), high + margin), y_range or (min(ys), max(ys)),
                  width + legend_width - 150, height, right=legend_width)
    width = frame.width
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
        for x, y in points:
            parts.append(f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="2.5" fill="{stroke}">'
                         f'<title>{html.escape(name)}: {y:.4g} at {x:g}</title></circle>')
        legend_y = frame.top + 14 * index
        parts.append(f'<rect x="{width - frame.right + 10}" y="{legend_y}" width="10" height="10" fill="{stroke}"/>')
        parts.append(f'<text x="{width - frame.right + 24}" y="{legend_y + 9}" class="tick">{html.escape(name)}</text>')
    return frame.svg(parts)


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
