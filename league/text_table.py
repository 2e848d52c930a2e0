"""Plain-text tables with aligned columns, shared by the payoff and the league report."""
from __future__ import annotations

from typing import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence], right_align_from: int = 1) -> str:
    """Columns padded to their widest cell; columns from ``right_align_from`` on are numbers."""
    cells = [list(map(str, headers))] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row):
        return '  '.join(c.rjust(w) if i >= right_align_from else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    rule = '  '.join('-' * w for w in widths)
    return '\n'.join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def _cell(value) -> str:
    if value is None:
        return '-'
    if isinstance(value, float):
        return f'{value:.3f}' if abs(value) < 10 else f'{value:.1f}'
    return str(value)
