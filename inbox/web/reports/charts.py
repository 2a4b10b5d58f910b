"""Two small server-drawn SVG charts for the reports page: bars and lines.

Inline SVG with presentation geometry only; colours and type come from classes in
static/inbox/reports.css (the CSP allows no inline style). Every bar and point carries a
<title> (the tooltip), and the chart a role="img" with an aria-label; the page shows the same
figures in a table next to it.
"""

from __future__ import annotations

from html import escape

from django.utils.safestring import SafeString, mark_safe

WIDTH = 640
BAR_HEIGHT = 22
BAR_GAP = 8
LABEL_WIDTH = 200
LINE_HEIGHT = 220
PAD = 32
SERIES_CLASSES = 6


def bar_chart(items: list[tuple[str, int]], *, label: str) -> SafeString:
    """Horizontal bars, one per (name, value), scaled to the largest value."""
    if not items:
        return mark_safe("")
    top = max(value for _, value in items) or 1
    span = WIDTH - LABEL_WIDTH - 60
    height = len(items) * (BAR_HEIGHT + BAR_GAP) + BAR_GAP
    parts = [
        f'<svg class="chart chart-bars" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for n, (name, value) in enumerate(items):
        y = BAR_GAP + n * (BAR_HEIGHT + BAR_GAP)
        width = max(1, round(span * value / top))
        tip = escape(f"{name}: {value}")
        parts.append(
            f'<g class="bar series-{n % SERIES_CLASSES}"><title>{tip}</title>'
            f'<text class="chart-label" x="{LABEL_WIDTH - 8}" y="{y + 15}" '
            f'text-anchor="end">{escape(name)}</text>'
            f'<rect x="{LABEL_WIDTH}" y="{y}" width="{width}" height="{BAR_HEIGHT}" rx="3"/>'
            f'<text class="chart-value" x="{LABEL_WIDTH + width + 6}" y="{y + 15}">{value}</text>'
            "</g>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308  (every text above is escaped)


def line_chart(days: list[str], series: dict[str, list[int]], *, label: str) -> SafeString:
    """One line per series over the days (x), from zero to the largest value (y)."""
    if not days or not series:
        return mark_safe("")
    top = max((max(values) for values in series.values()), default=0) or 1
    plot_w, plot_h = WIDTH - 2 * PAD, LINE_HEIGHT - 2 * PAD
    step = plot_w / max(1, len(days) - 1)
    height = LINE_HEIGHT + 24 + 14 * ((len(series) - 1) // 3)

    def x(i: int) -> float:
        return round(PAD + i * step, 1)

    def y(v: int) -> float:
        return round(PAD + plot_h - plot_h * v / top, 1)

    parts = [
        f'<svg class="chart chart-lines" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f'<line class="axis" x1="{PAD}" y1="{PAD + plot_h}" x2="{PAD + plot_w}" '
        f'y2="{PAD + plot_h}"/>',
        f'<text class="chart-value" x="{PAD - 6}" y="{PAD + 4}" text-anchor="end">{top}</text>',
        f'<text class="chart-value" x="{PAD - 6}" y="{PAD + plot_h + 4}" '
        'text-anchor="end">0</text>',
        f'<text class="chart-label" x="{PAD}" y="{PAD + plot_h + 18}">{escape(days[0])}</text>',
        f'<text class="chart-label" x="{PAD + plot_w}" y="{PAD + plot_h + 18}" '
        f'text-anchor="end">{escape(days[-1])}</text>',
    ]
    for n, (name, values) in enumerate(series.items()):
        css = f"series-{n % SERIES_CLASSES}"
        points = " ".join(f"{x(i)},{y(v)}" for i, v in enumerate(values))
        parts.append(f'<g class="line {css}"><title>{escape(name)}</title>')
        parts.append(f'<polyline points="{points}" fill="none"/>')
        for i, v in enumerate(values):
            tip = escape(f"{name}, {days[i]}: {v}")
            parts.append(f'<circle cx="{x(i)}" cy="{y(v)}" r="3"><title>{tip}</title></circle>')
        parts.append("</g>")
        legend_x = PAD + (n % 3) * 200
        legend_y = LINE_HEIGHT + 6 + (n // 3) * 14
        parts.append(
            f'<g class="legend {css}"><rect x="{legend_x}" y="{legend_y - 8}" width="10" '
            f'height="10"/><text class="chart-label" x="{legend_x + 14}" y="{legend_y + 1}">'
            f"{escape(name)}</text></g>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308  (every text above is escaped)
