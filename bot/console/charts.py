"""Server-rendered SVG charts for the console: a stacked bar per day, drawn with presentation
attributes only (fill=, x=, ...), since the CSP refuses inline style. Each chart is an image
with a name (`role="img"`, `<title>`, `<desc>` summing it up); the page shows the same numbers
in a table for anyone who cannot see it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

# Okabe and Ito's palette (told apart with the common colour blindnesses), grey for the rest.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00")
OTHER = "#8c8c8c"

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 8, 12, 40


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    values: Sequence[int]  # one per label
    colour: str


def colour(i: int, *, other: bool = False) -> str:
    return OTHER if other else PALETTE[i % len(PALETTE)]


def compact(n: float) -> str:
    """1234 -> 1.2k, 5_000_000 -> 5M: axis labels stay short."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= size:
            text = f"{n / size:.1f}".removesuffix(".0")
            return text + suffix
    return f"{n:g}"  # 0.5 on the axis of a chart whose top is 1


def nice_max(n: int) -> int:
    """The axis top: the smallest of 1, 2, 2.5, 5 times a power of ten that holds `n`."""
    if n <= 0:
        return 1
    power = 1
    while power * 10 <= n:
        power *= 10
    for step in (1, 2, 2.5, 5, 10):
        top = int(step * power)
        if top >= n:
            return top
    return 10 * power


def _el(tag: str, text: str | None = None, inner: str = "", **attributes: object) -> str:
    """One SVG element: attribute names in Python spelling (`font_size`, `class_`), values
    and text escaped; `inner` is markup already built."""
    attrs = "".join(
        f' {k.rstrip("_").replace("_", "-")}="{escape(str(v))}"' for k, v in attributes.items()
    )
    body = (escape(text) if text is not None else "") + inner
    return f"<{tag}{attrs}>{body}</{tag}>" if body else f"<{tag}{attrs}/>"


MUTED = "#5b6475"
GRID = "#d9dde5"


def _label(x: float, y: float, text: str, anchor: str = "middle", **more: str) -> str:
    return _el(
        "text",
        text,
        x=f"{x:.1f}",
        y=f"{y:.1f}",
        text_anchor=anchor,
        font_size=12,
        fill=MUTED,
        **more,
    )


def stacked_bars(
    chart_id: str, title: str, labels: Sequence[str], series: Sequence[Series], unit: str
) -> Markup:
    """A bar per label (a day), each stacked from `series` in order; a y axis with three
    ticks, the first, middle and last labels under the x axis."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    top = nice_max(max(totals, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    floor = TOP + plot_h
    slot = plot_w / max(1, len(labels))
    bar = max(1.0, slot * 0.7)
    parts = [
        _el("title", title, id=f"{chart_id}-t"),
        _el("desc", _describe(labels, totals, unit), id=f"{chart_id}-d"),
    ]
    for frac in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - frac)
        parts.append(
            _el("line", x1=LEFT, x2=WIDTH - RIGHT, y1=f"{y:.1f}", y2=f"{y:.1f}", stroke=GRID)
        )
        parts.append(_label(LEFT - 6, y + 4, compact(top * frac), "end"))
    # One path per series, a rectangle per day: a chart of 90 days by six series stays a
    # few elements, not hundreds.
    bases = [float(floor)] * len(labels)
    for s in series:
        d = []
        for i, value in enumerate(s.values):
            if value <= 0:
                continue
            h = plot_h * value / top
            bases[i] -= h
            x = LEFT + slot * i + (slot - bar) / 2
            d.append(f"M{x:.1f} {bases[i]:.1f}h{bar:.1f}v{h:.1f}h{-bar:.1f}z")
        if d:
            parts.append(_el("path", inner=_el("title", s.name), d="".join(d), fill=s.colour))
    parts.append(_el("line", x1=LEFT, x2=WIDTH - RIGHT, y1=floor, y2=floor, stroke=MUTED))
    for i in sorted({0, len(labels) // 2, len(labels) - 1}) if labels else []:
        parts.append(_label(LEFT + slot * i + slot / 2, floor + 16, labels[i][5:]))
    parts.append(_label(LEFT + plot_w / 2, HEIGHT - 4, "day (UTC, month-day)"))
    middle = TOP + plot_h / 2
    parts.append(_label(12, middle, unit, transform=f"rotate(-90 12 {middle:.1f})"))
    svg = _el(
        "svg",
        inner="".join(parts),
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {WIDTH} {HEIGHT}",
        role="img",
        aria_labelledby=f"{chart_id}-t {chart_id}-d",
        class_="ua-chart",
        id=chart_id,
    )
    return Markup(svg)


def _describe(labels: Sequence[str], totals: Sequence[int], unit: str) -> str:
    if not labels:
        return "No days."
    peak = max(range(len(labels)), key=lambda i: totals[i])
    return (
        f"{sum(totals):,} {unit} from {labels[0]} to {labels[-1]}; "
        f"the most on {labels[peak]}: {totals[peak]:,}."
    )
