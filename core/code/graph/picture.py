"""The code graph as a picture: the neighbourhood `/graph SYMBOL --image` shows as text, drawn
as a PNG with Pillow — no Graphviz, no system binary.

The layout is layered by distance from the focus: callers in columns to its left (farther is
further left), callees and imports to its right, what it extends in rows above and what extends
it in rows below. Edge kinds have their own colour (and a legend); a low-confidence edge (a
guess by name) is dashed, or left out with `hide_low`. A graph larger than `max_nodes` keeps the
nodes nearest the focus (then the best connected) and says in the picture how many it left out.

Pure and synchronous (CPU-bound): call it through `asyncio.to_thread` from the event loop.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.code.graph.model import Edge
from core.code.graph.query import Neighbourhood

if TYPE_CHECKING:
    from PIL import ImageDraw, ImageFont

    Font = ImageFont.FreeTypeFont | ImageFont.ImageFont

MAX_NODES = 40
LOW_CONFIDENCE = 0.9  # below this an edge is a guess (the text marks it "[confidence ...]")

NodeKey = tuple[str, str]  # (path, symbol); ("", name) for a target outside the repository

# Where each section of the neighbourhood goes: (band, direction away from the focus).
_PLACES = {
    "callers": ("left", -1),
    "callees": ("right", 1),
    "imports": ("right", 1),
    "extends": ("top", -1),
    "extended_by": ("bottom", 1),
}
COLOURS = {
    "calls": (37, 99, 235),
    "inherits": (22, 163, 74),
    "implements": (147, 51, 234),
    "imports": (217, 119, 6),
    "contains": (100, 116, 139),
}
_INK = (30, 41, 59)
_MUTED = (100, 116, 139)
_BOX = (248, 250, 252)
_FOCUS = (254, 243, 199)
_FOCUS_EDGE = (217, 119, 6)
_EXTERNAL = (241, 245, 249)
_PAD = 24
_GAP_X = 70
_GAP_Y = 18
_LABEL_CHARS = 42
_PER_COLUMN = 12


@dataclass(frozen=True, slots=True)
class Picture:
    png: bytes
    width: int
    height: int
    shown: int  # nodes drawn, the focus included
    omitted: int  # nodes left out to keep the picture readable


@dataclass(slots=True)
class _Node:
    key: NodeKey
    title: str
    where: str
    band: str  # "focus", "left", "right", "top", "bottom"
    level: int  # distance from the focus (0 for the focus)
    degree: int = 0
    box: tuple[int, int, int, int] = (0, 0, 0, 0)


@dataclass(slots=True)
class _Graph:
    nodes: dict[NodeKey, _Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)


def _ends(edge: Edge) -> tuple[NodeKey, NodeKey]:
    source = (edge.source_path, edge.source_symbol)
    if edge.target_path is None or edge.target_symbol is None:
        return source, ("", edge.target_name)
    return source, (edge.target_path, edge.target_symbol)


def _short(text: str, limit: int = _LABEL_CHARS) -> str:
    return text if len(text) <= limit else "..." + text[-(limit - 3) :]


def _collect(view: Neighbourhood, hide_low: bool) -> _Graph:
    """Every node and edge of the view; a node sits where it was first reached (nearest)."""
    focus = view.focus
    graph = _Graph()
    focus_key = (focus.path, focus.symbol)
    graph.nodes[focus_key] = _Node(
        focus_key, focus.symbol, f"{focus.path}:{focus.line}", "focus", 0
    )
    seen: set[tuple[str, ...]] = set()
    reached: list[tuple[int, int, str, Edge]] = []
    order = list(_PLACES)
    for name, steps in view.sections.items():
        for step in steps:
            reached.append((step.depth, order.index(name), name, step.edge))
    reached.sort(key=lambda r: (r[0], r[1]))
    for depth, _, name, edge in reached:
        if hide_low and edge.confidence < LOW_CONFIDENCE:
            continue
        source, target = _ends(edge)
        ident = (edge.kind, *source, *target)
        if ident in seen:
            continue
        seen.add(ident)
        band, _direction = _PLACES[name]
        far, near = (source, target) if band in ("left", "bottom") else (target, source)
        if near not in graph.nodes:  # reached only through a hidden edge
            continue
        if far not in graph.nodes:
            if far[0]:
                where = f"{far[0]}:{edge.source_line if far == source else edge.target_line}"
            else:
                where = "outside the repository"
            graph.nodes[far] = _Node(far, far[1], where, band, depth)
        graph.edges.append(edge)
    for edge in graph.edges:
        for key in _ends(edge):
            if key in graph.nodes:
                graph.nodes[key].degree += 1
    return graph


def _trim(graph: _Graph, max_nodes: int) -> int:
    """Keep the `max_nodes` most relevant nodes (nearest, then best connected); returns how
    many were left out."""
    if len(graph.nodes) <= max_nodes:
        return 0
    ranked = sorted(graph.nodes.values(), key=lambda n: (n.level, -n.degree, n.title, n.key[0]))
    keep = {n.key for n in ranked[: max(1, max_nodes)]}
    omitted = len(graph.nodes) - len(keep)
    graph.nodes = {k: n for k, n in graph.nodes.items() if k in keep}
    graph.edges = [e for e in graph.edges if all(k in keep for k in _ends(e))]
    return omitted


def _fonts(size: int) -> tuple[Font, ...]:
    from PIL import ImageFont

    def load(points: int) -> Font:
        try:
            return ImageFont.load_default(size=points)
        except (TypeError, ImportError, OSError):  # Pillow without FreeType: the bitmap font
            return ImageFont.load_default()

    return load(size), load(size - 3), load(size + 2)


def _text_width(font: Font, text: str) -> int:
    return math.ceil(font.getlength(text))


def _height(font: Font) -> int:
    box = font.getbbox("Ag")
    return math.ceil(box[3])


def _chunks(nodes: list[_Node]) -> list[list[_Node]]:
    return [nodes[i : i + _PER_COLUMN] for i in range(0, len(nodes), _PER_COLUMN)] or [[]]


def _layout(graph: _Graph, fonts: tuple[Font, ...]) -> tuple[int, int]:
    """Give every node its box; returns the size of the drawing area (without margins)."""
    title_font, where_font, _ = fonts
    line, small = _height(title_font), _height(where_font)
    box_h = int(line + small + 16)
    size: dict[NodeKey, tuple[int, int]] = {}
    for node in graph.nodes.values():
        w = max(
            _text_width(title_font, _short(node.title)), _text_width(where_font, _short(node.where))
        )
        size[node.key] = (w + 20, box_h)

    def ordered(band: str, level: int) -> list[_Node]:
        group = [n for n in graph.nodes.values() if n.band == band and n.level == level]
        return sorted(group, key=lambda n: (-n.degree, n.title, n.key[0]))

    left = max((n.level for n in graph.nodes.values() if n.band == "left"), default=0)
    right = max((n.level for n in graph.nodes.values() if n.band == "right"), default=0)
    top = max((n.level for n in graph.nodes.values() if n.band == "top"), default=0)
    bottom = max((n.level for n in graph.nodes.values() if n.band == "bottom"), default=0)

    # The middle band: columns of callers | the focus | callees and imports.
    # A level with many nodes takes several columns of at most `_PER_COLUMN`.
    columns: list[list[_Node]] = []
    for lv in range(left, 0, -1):
        columns += _chunks(ordered("left", lv))[::-1]
    focus_col = len(columns)
    columns.append([n for n in graph.nodes.values() if n.band == "focus"])
    for lv in range(1, right + 1):
        columns += _chunks(ordered("right", lv))
    col_w = [max((size[n.key][0] for n in col), default=0) for col in columns]
    col_h = [sum(size[n.key][1] + _GAP_Y for n in col) - _GAP_Y for col in columns]
    middle_w = sum(col_w) + _GAP_X * (len(columns) - 1)
    middle_h = max(col_h)

    rows_top = [ordered("top", lv) for lv in range(top, 0, -1)]
    rows_bottom = [ordered("bottom", lv) for lv in range(1, bottom + 1)]

    def row_width(row: list[_Node]) -> int:
        return sum(size[n.key][0] for n in row) + _GAP_Y * 2 * (len(row) - 1)

    width = max([middle_w] + [row_width(r) for r in rows_top + rows_bottom])
    row_step = box_h + 50
    y_middle = row_step * len(rows_top)
    # Centre the focus column horizontally when the hierarchy rows are wider.
    x = (width - middle_w) // 2
    focus_centre = 0
    for i, col in enumerate(columns):
        y = y_middle + (middle_h - col_h[i]) // 2
        for node in col:
            w, h = size[node.key]
            cx = x + (col_w[i] - w) // 2
            node.box = (cx, y, cx + w, y + h)
            y += h + _GAP_Y
        if i == focus_col:
            focus_centre = x + col_w[i] // 2
        x += col_w[i] + _GAP_X

    def place_rows(rows: list[list[_Node]], y0: int) -> None:
        for r, row in enumerate(rows):
            rw = row_width(row)
            x = min(max(0, focus_centre - rw // 2), width - rw)
            y = y0 + r * row_step
            for node in row:
                w, h = size[node.key]
                node.box = (x, y, x + w, y + h)
                x += w + _GAP_Y * 2

    place_rows(rows_top, 0)
    place_rows(rows_bottom, y_middle + middle_h + 50)
    height = y_middle + middle_h + (row_step * len(rows_bottom) if rows_bottom else 0)
    return width, height


def _anchor(box: tuple[int, int, int, int], towards: tuple[float, float]) -> tuple[float, float]:
    """Where the line from the box's centre to `towards` leaves the box."""
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    dx, dy = towards[0] - cx, towards[1] - cy
    if dx == 0 and dy == 0:
        return cx, cy
    sx = (x1 - x0) / 2 / abs(dx) if dx else math.inf
    sy = (y1 - y0) / 2 / abs(dy) if dy else math.inf
    s = min(sx, sy)
    return cx + dx * s, cy + dy * s


def _line(
    draw: ImageDraw.ImageDraw,
    a: tuple[float, float],
    b: tuple[float, float],
    colour: tuple[int, int, int],
    dashed: bool,
) -> None:
    if not dashed:
        draw.line([a, b], fill=colour, width=2)
        return
    length = math.dist(a, b)
    dash, gap = 7.0, 5.0
    t = 0.0
    while t < length:
        end = min(t + dash, length)
        p = (a[0] + (b[0] - a[0]) * t / length, a[1] + (b[1] - a[1]) * t / length)
        q = (a[0] + (b[0] - a[0]) * end / length, a[1] + (b[1] - a[1]) * end / length)
        draw.line([p, q], fill=colour, width=2)
        t += dash + gap


def _arrow(
    draw: ImageDraw.ImageDraw,
    a: tuple[float, float],
    b: tuple[float, float],
    colour: tuple[int, int, int],
) -> None:
    angle = math.atan2(b[1] - a[1], b[0] - a[0])
    size = 9
    left = (b[0] - size * math.cos(angle - 0.4), b[1] - size * math.sin(angle - 0.4))
    right = (b[0] - size * math.cos(angle + 0.4), b[1] - size * math.sin(angle + 0.4))
    draw.polygon([b, left, right], fill=colour)


def draw(
    view: Neighbourhood,
    *,
    max_nodes: int = MAX_NODES,
    hide_low: bool = False,
    font_size: int = 14,
) -> Picture:
    """The PNG of `view`, at most `max_nodes` nodes (the focus always among them)."""
    from PIL import Image, ImageDraw

    graph = _collect(view, hide_low)
    omitted = _trim(graph, max_nodes)
    fonts = _fonts(font_size)
    title_font, where_font, heading_font = fonts
    width, height = _layout(graph, fonts)

    f = view.focus
    heading = f"{f.symbol} - {f.kind} in {f.repo}: {f.path}:{f.line} (depth {view.depth})"
    kinds = [k for k in COLOURS if any(e.kind == k for e in graph.edges)]
    notes: list[str] = []
    if any(e.confidence < LOW_CONFIDENCE for e in graph.edges):
        notes.append("dashed: low confidence (matched by name only)")
    if hide_low:
        notes.append("low-confidence edges hidden")
    if omitted:
        notes.append(
            f"{omitted} more node{'s' if omitted != 1 else ''} left out "
            f"(showing the {len(graph.nodes)} nearest the focus)"
        )
    if any(view.truncated.values()):
        notes.append("some sections were cut at their edge limit")

    header_h = 34
    legend_h = 26 + 20 * len(notes)
    legend_w = sum(_text_width(where_font, k) + 44 for k in kinds) + 80
    content_w = max(
        width,
        _text_width(heading_font, heading),
        legend_w,
        *(_text_width(where_font, n) for n in notes),
    )
    image_w = content_w + 2 * _PAD
    image_h = header_h + height + legend_h + 3 * _PAD
    shift_x = _PAD + (content_w - width) // 2
    shift_y = _PAD + header_h
    for node in graph.nodes.values():
        x0, y0, x1, y1 = node.box
        node.box = (x0 + shift_x, y0 + shift_y, x1 + shift_x, y1 + shift_y)

    image = Image.new("RGB", (image_w, image_h), (255, 255, 255))
    pen = ImageDraw.Draw(image)
    pen.text((_PAD, _PAD), heading, fill=_INK, font=heading_font)

    for edge in graph.edges:
        source, target = _ends(edge)
        if source == target:
            continue
        a_box, b_box = graph.nodes[source].box, graph.nodes[target].box
        a_centre = ((a_box[0] + a_box[2]) / 2, (a_box[1] + a_box[3]) / 2)
        b_centre = ((b_box[0] + b_box[2]) / 2, (b_box[1] + b_box[3]) / 2)
        a, b = _anchor(a_box, b_centre), _anchor(b_box, a_centre)
        colour = COLOURS[edge.kind]
        _line(pen, a, b, colour, edge.confidence < LOW_CONFIDENCE)
        _arrow(pen, a, b, colour)

    for node in graph.nodes.values():
        focus = node.band == "focus"
        fill = _FOCUS if focus else (_EXTERNAL if not node.key[0] else _BOX)
        outline = _FOCUS_EDGE if focus else _MUTED
        pen.rounded_rectangle(
            node.box, radius=6, fill=fill, outline=outline, width=3 if focus else 1
        )
        x0, y0, _, _ = node.box
        pen.text((x0 + 10, y0 + 6), _short(node.title), fill=_INK, font=title_font)
        line = _height(title_font)
        pen.text((x0 + 10, y0 + 10 + line), _short(node.where), fill=_MUTED, font=where_font)

    y = image_h - _PAD - legend_h + 6
    x = _PAD
    for kind in kinds:
        pen.line([(x, y + 8), (x + 26, y + 8)], fill=COLOURS[kind], width=3)
        pen.text((x + 32, y), kind, fill=_INK, font=where_font)
        x += _text_width(where_font, kind) + 44
    pen.rectangle((x, y + 1, x + 14, y + 15), fill=_FOCUS, outline=_FOCUS_EDGE, width=2)
    pen.text((x + 20, y), "focus", fill=_INK, font=where_font)
    for i, note in enumerate(notes):
        pen.text((_PAD, y + 22 + 20 * i), note, fill=_MUTED, font=where_font)

    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return Picture(out.getvalue(), image_w, image_h, len(graph.nodes), omitted)
