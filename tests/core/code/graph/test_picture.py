"""The code graph's picture (`/graph SYMBOL --image`): a PNG Pillow decodes, of a sensible size,
with the focus highlighted, edge kinds in their colours, guesses dashed or hidden, and a large
graph trimmed to the nodes nearest the focus with a note."""

from __future__ import annotations

import io
from types import SimpleNamespace

from PIL import Image

from core.code.graph.model import Edge, EdgeKind
from core.code.graph.picture import COLOURS, draw
from core.code.graph.query import Neighbourhood, Step, Symbol

FOCUS = Symbol("api", "core/retry.py", "RetryPolicy.next_delay", "method", 10, 30)
FOCUS_KEY = ("core/retry.py", "RetryPolicy.next_delay")


def edge(
    kind: EdgeKind,
    source: tuple[str, str],
    target: tuple[str, str] | str,
    confidence: float = 1.0,
) -> Edge:
    if isinstance(target, str):
        return Edge(kind, *source, 3, None, None, None, target, confidence)
    return Edge(kind, *source, 3, *target, 7, target[1], confidence)


def view(**sections: list[Step]) -> Neighbourhood:
    out = Neighbourhood(FOCUS, 2)
    for name in ("extends", "extended_by", "imports", "callers", "callees"):
        out.sections[name] = sections.get(name, [])
        out.truncated[name] = False
    return out


def small() -> Neighbourhood:
    return view(
        callers=[
            Step(1, edge("calls", ("jobs/run.py", "Job.run"), FOCUS_KEY)),
            Step(2, edge("calls", ("cli.py", "main"), ("jobs/run.py", "Job.run"))),
        ],
        callees=[
            Step(1, edge("calls", FOCUS_KEY, ("core/clock.py", "jitter"))),
            Step(1, edge("calls", FOCUS_KEY, "random.random")),
            Step(1, edge("calls", FOCUS_KEY, ("core/util.py", "clamp"), confidence=0.5)),
        ],
    )


def decode(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    image.load()
    return image


def colours(image: Image.Image) -> set[tuple[int, int, int]]:
    rgb = image.convert("RGB")
    return {rgb.getpixel((x, y)) for x in range(rgb.width) for y in range(rgb.height)}  # type: ignore[misc]


def test_a_small_graph_is_a_png_of_a_sensible_size_with_its_kinds_and_focus() -> None:
    picture = draw(small())
    image = decode(picture.png)
    assert image.format == "PNG"
    assert (image.width, image.height) == (picture.width, picture.height)
    assert 400 <= image.width <= 2_000 and 150 <= image.height <= 1_200
    assert (picture.shown, picture.omitted) == (6, 0)
    seen = colours(image)
    assert COLOURS["calls"] in seen
    assert (254, 243, 199) in seen  # the focus box's fill


def test_hierarchy_goes_above_and_below_and_callers_left_of_callees() -> None:
    base = ("core/retry.py", "Policy")
    sub = ("core/retry.py", "Strict")
    hierarchy = view(
        extends=[Step(1, edge("inherits", FOCUS_KEY, base))],
        extended_by=[Step(1, edge("implements", sub, FOCUS_KEY))],
        callers=small().sections["callers"],
        callees=small().sections["callees"],
    )
    picture = draw(hierarchy)
    image = decode(picture.png)
    seen = colours(image)
    assert {COLOURS["inherits"], COLOURS["implements"], COLOURS["calls"]} <= seen
    assert picture.shown == 8 and image.height > draw(small()).height


def test_a_large_graph_keeps_the_nearest_nodes_and_says_how_many_were_left_out() -> None:
    callers = [Step(1, edge("calls", (f"m{i}.py", f"caller_{i}"), FOCUS_KEY)) for i in range(30)]
    callers += [
        Step(2, edge("calls", (f"far{i}.py", f"far_{i}"), ("m0.py", "caller_0"))) for i in range(30)
    ]
    callees = [Step(1, edge("calls", FOCUS_KEY, (f"c{i}.py", f"callee_{i}"))) for i in range(20)]
    picture = draw(view(callers=callers, callees=callees), max_nodes=40)
    assert picture.shown == 40
    assert picture.omitted == 81 - 40
    image = decode(picture.png)
    assert image.height <= 2_000 and image.width <= 3_000

    # Nearest first: every depth-1 node fits in 60, so only depth-2 nodes are cut.
    wider = draw(view(callers=callers, callees=callees), max_nodes=60)
    assert (wider.shown, wider.omitted) == (60, 21)


def test_low_confidence_edges_can_be_hidden() -> None:
    shown = draw(small())
    hidden = draw(small(), hide_low=True)
    assert hidden.shown == shown.shown - 1  # `clamp` was reached only by a guess
    assert hidden.omitted == 0
    decode(hidden.png)


def test_a_lone_symbol_still_draws() -> None:
    picture = draw(view())
    assert (picture.shown, picture.omitted) == (1, 0)
    assert decode(picture.png).width >= 200


async def test_the_reply_carries_the_picture_and_says_how_many_nodes_it_left_out() -> None:
    from typing import Any, cast

    from core.code.commands import _with_picture

    callers = [Step(1, edge("calls", (f"m{i}.py", f"caller_{i}"), FOCUS_KEY)) for i in range(60)]
    ctx = cast(Any, SimpleNamespace(session=SimpleNamespace(request_id="r1")))
    reply = await _with_picture(ctx, "the text graph", view(callers=callers))
    assert reply.text == (
        "the text graph\n(The picture shows the nodes nearest `RetryPolicy.next_delay` and "
        "leaves out 21 nodes; the text lists them.)"
    )
    (image,) = reply.attachments
    assert image.filename == "graph-RetryPolicy.next_delay.png"
    decode(image.data)

    small_reply = await _with_picture(ctx, "the text graph", small())
    assert small_reply.text == "the text graph" and len(small_reply.attachments) == 1


def test_graph_requests_parse_the_confident_flag() -> None:
    from core.code.commands import GraphArgs
    from core.commands import parse_args

    request = parse_args(GraphArgs, "Job.run --image --confident --depth 3", "/graph")
    assert (request.symbol, request.image, request.confident, request.depth) == (
        "Job.run",
        True,
        True,
        3,
    )
    assert not parse_args(GraphArgs, "Job.run", "/graph").confident
