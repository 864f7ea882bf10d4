"""Server-side SVG charts: horizontal bars and stacked day columns, drawn from numbers with no script.

Hand-written rather than a chart library's: the strict Content-Security-Policy (no inline script, styles
only from the dashboard's own stylesheet) rules out libraries that embed ``<script>`` and ``<style>`` in
the SVG; here colours are CSS classes (``s0``…``s7`` in ``dashboard.css``), every chart scales with its
``viewBox`` (480 units wide with 16-unit text: at 390 px the text is still ~12 px), and each carries ``<title>``/``<desc>`` plus the
numbers in a table beside it (the text alternative). Pure: numbers in, markup out.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH = 480
BAR = 26
GAP = 8
LABEL = 150
SERIES = 8


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _open(chart_id: str, title: str, desc: str, height: int) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{chart_id}-t {chart_id}-d" preserveAspectRatio="xMinYMin meet">'
        f'<title id="{chart_id}-t">{escape(title)}</title><desc id="{chart_id}-d">{escape(desc)}</desc>'
    )


def bar_chart(chart_id: str, title: str, items: Sequence[tuple[str, float]], unit: str = "") -> Markup:
    """One bar per ``(label, value)``, longest = the largest value; the value (with ``unit``, e.g. " %") is
    written at the bar's end, where the chart's title is not shown."""
    height = max(1, len(items)) * (BAR + GAP) + GAP
    desc = "; ".join(f"{label}: {_fmt(value)}{unit}" for label, value in items) or "no data"
    top = max((v for _, v in items), default=0) or 1
    parts = [_open(chart_id, title, desc, height)]
    if not items:
        parts.append(f'<text x="8" y="{BAR}" class="empty">no data in this range</text>')
    for i, (label, value) in enumerate(items):
        y = GAP + i * (BAR + GAP)
        length = (WIDTH - LABEL - 80) * max(0.0, value) / top
        parts.append(
            f'<text x="{LABEL - 6}" y="{y + BAR * 0.72:.1f}" class="label" text-anchor="end">{escape(label)}</text>'
            f'<rect x="{LABEL}" y="{y}" width="{length:.1f}" height="{BAR}" class="s{i % SERIES}"/>'
            f'<text x="{LABEL + length + 6:.1f}" y="{y + BAR * 0.72:.1f}" class="value">{_fmt(value)}{escape(unit)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def stacked_columns(
    chart_id: str, title: str, days: Sequence[tuple[str, dict[str, int]]], keys: Sequence[str]
) -> Markup:
    """One column per day, stacked by ``keys`` (a legend names each colour); day labels at both ends."""
    height, plot_top, plot_bottom = 300, 10, 200
    desc_days = "; ".join(
        f"{day}: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in keys if counts.get(k))
        for day, counts in days
    )
    parts = [_open(chart_id, title, desc_days or "no data", height)]
    if not days:
        parts.append('<text x="8" y="30" class="empty">no data in this range</text></svg>')
        return Markup("".join(parts))
    top = max(sum(c.values()) for _, c in days) or 1
    step = (WIDTH - 60) / len(days)
    width = max(1.0, step * 0.8)
    for i, (_day, counts) in enumerate(days):
        x = 50 + i * step
        y = float(plot_bottom)
        for k_index, key in enumerate(keys):
            n = counts.get(key, 0)
            if not n:
                continue
            h = (plot_bottom - plot_top) * n / top
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{h:.1f}" class="s{k_index % SERIES}"/>'
            )
    parts.append(f'<text x="44" y="{plot_top + 10}" class="axis" text-anchor="end">{top}</text>')
    parts.append(f'<text x="44" y="{plot_bottom}" class="axis" text-anchor="end">0</text>')
    parts.append(f'<text x="50" y="{plot_bottom + 16}" class="axis">{escape(days[0][0])}</text>')
    parts.append(
        f'<text x="{WIDTH - 10}" y="{plot_bottom + 16}" class="axis" text-anchor="end">{escape(days[-1][0])}</text>'
    )
    for k_index, key in enumerate(keys):
        lx = 50 + (k_index % 3) * 140
        ly = plot_bottom + 36 + (k_index // 3) * 20
        parts.append(
            f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" class="s{k_index % SERIES}"/>'
            f'<text x="{lx + 16}" y="{ly}" class="legend">{escape(key)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
