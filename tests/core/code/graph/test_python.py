"""Python extraction and resolution of the code graph, on small in-memory repositories."""

from __future__ import annotations

import json

import pytest

from core.code.graph.build import graph_of_files
from core.code.graph.model import Edge
from tests.support.paths import ROOT_DIR

FIXTURES = ROOT_DIR / "bench" / "graph_fixtures" / "python"


def calls(sources: dict[str, str]) -> set[tuple[str, str]]:
    edges = graph_of_files({p: t.encode() for p, t in sources.items()})
    return {
        (f"{e.source_path}:{e.source_symbol}", f"{e.target_path}:{e.target_symbol}")
        if e.target_path is not None
        else (f"{e.source_path}:{e.source_symbol}", f"?{e.target_name}")
        for e in edges
        if e.kind == "calls"
    }


def edges_of(sources: dict[str, str]) -> list[Edge]:
    return graph_of_files({p: t.encode() for p, t in sources.items()})


@pytest.mark.parametrize("case", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_bench_fixtures_resolve_exactly(case: str) -> None:
    folder = FIXTURES / case
    expected = json.loads((folder / "expected.json").read_text())
    sources = {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*.py")}
    found = {edge for edge in calls(sources) if not edge[1].startswith("?")}
    assert found == {(a, b) for a, b in expected["calls"]}
    outside = {edge for edge in calls(sources) if edge[1].startswith("?")}
    for source, name in expected.get("external", []):
        assert (source, f"?{name}") in outside


def test_stdlib_names_never_land_on_local_symbols() -> None:
    found = calls(
        {
            "json.py": "def loads(text):\n    return text\n",  # shadows nothing: `import json`
            "app.py": "import json\nimport os\n\ndef go():\n    json.loads('1')\n"
            "    os.getcwd()\n    print(1)\n",
            "util.py": "def print(x):\n    return x\n",
        }
    )
    # `json` is a module of the repository here, so that import resolves to it ...
    assert ("app.py:go", "json.py:loads") in found
    # ... while os stays outside and print is the builtin, not util.print.
    assert ("app.py:go", "?os.getcwd") in found
    assert ("app.py:go", "?print") in found
    assert not any(target == "util.py:print" for _, target in found)


def test_unbound_name_falls_back_to_the_unique_definition_at_low_confidence() -> None:
    edges = edges_of(
        {
            "a.py": "from b import *\n\ndef go():\n    helper()\n    ghost()\n",
            "b.py": "def helper():\n    pass\n",
            "c.py": "def ghost():\n    pass\n",
        }
    )
    by_target = {e.target_name: e for e in edges if e.kind == "calls"}
    assert by_target["helper"].target_path == "b.py"  # through the star import
    assert by_target["helper"].confidence == 1.0
    assert by_target["ghost"].target_path == "c.py"  # bound nowhere: the only `ghost`
    assert by_target["ghost"].confidence == 0.5


def test_two_definitions_of_an_unbound_name_are_not_guessed() -> None:
    found = calls(
        {
            "a.py": "def go():\n    run()\n",
            "b.py": "def run():\n    pass\n",
            "c.py": "def run():\n    pass\n",
        }
    )
    assert found == {("a.py:go", "?run")}


def test_relations_other_than_calls() -> None:
    edges = edges_of(
        {
            "pkg/__init__.py": "",
            "pkg/base.py": "from typing import Protocol\n\nclass Port(Protocol):\n"
            "    def send(self) -> None: ...\n\nclass Base:\n    class Inner:\n        pass\n",
            "pkg/impl.py": "from .base import Base, Port\nimport collections\n\n"
            "class Impl(Base, Port, collections.OrderedDict):\n    def send(self):\n"
            "        def local():\n            pass\n",
        }
    )
    shape = {(e.kind, e.source_path, e.source_symbol, e.target_path, e.target_name) for e in edges}
    assert ("inherits", "pkg/impl.py", "Impl", "pkg/base.py", "Base") in shape
    assert ("implements", "pkg/impl.py", "Impl", "pkg/base.py", "Port") in shape
    assert ("inherits", "pkg/impl.py", "Impl", None, "collections.OrderedDict") in shape
    assert ("imports", "pkg/impl.py", "<module>", "pkg/base.py", "Base") in shape
    assert ("imports", "pkg/impl.py", "<module>", None, "collections") in shape
    assert ("contains", "pkg/base.py", "Base", "pkg/base.py", "Base.Inner") in shape
    assert ("contains", "pkg/impl.py", "Impl.send", "pkg/impl.py", "Impl.send.local") in shape
    assert ("contains", "pkg/impl.py", "<module>", "pkg/impl.py", "Impl") in shape


def test_edge_json_shape() -> None:
    edges = edges_of({"m.py": "import os\n\ndef f():\n    g()\n\ndef g():\n    os.sep\n"})
    call = next(e for e in edges if e.kind == "calls")
    assert call.as_json() == {
        "kind": "calls",
        "source": {"path": "m.py", "symbol": "f", "line": 4},
        "target": {"path": "m.py", "symbol": "g", "line": 6},
        "confidence": 1.0,
    }
    outside = next(e for e in edges if e.kind == "imports")
    assert outside.as_json()["target"] == {"name": "os"}


def test_src_layout_and_module_level_code() -> None:
    found = calls(
        {
            "src/tool/__init__.py": "from .core import main\n",
            "src/tool/core.py": "def main():\n    pass\n",
            "scripts/run.py": "import tool\n\nif __name__ == '__main__':\n    tool.main()\n",
        }
    )
    assert ("scripts/run.py:<module>", "src/tool/core.py:main") in found


def test_broken_source_still_gives_what_parses() -> None:
    found = calls({"x.py": "def a(:\n    pass\n\ndef b():\n    c()\n\ndef c():\n    pass\n"})
    assert ("x.py:b", "x.py:c") in found


def test_unresolved_names_leave_string_literals_out() -> None:
    found = calls({"a.py": "def f():\n    connect('postgres://u:hunter2@db').cursor()\n"})
    assert found == {("a.py:f", '?connect("…").cursor'), ("a.py:f", "?connect")}


def test_values_past_the_cap_are_cut_the_same_way_whatever_their_order() -> None:
    from core.code.graph.model import capped

    values = [("f", f"mod{i}", None) for i in range(40)]
    kept = capped(values, 16)
    assert len(kept) == 16
    assert capped(list(reversed(values)), 16) == kept  # set order varies between processes
    assert capped(values[:5], 16) == values[:5]  # under the cap: untouched, in order


def test_functions_passed_to_a_method_of_an_instance_made_in_the_file_are_followed() -> None:
    found = calls(
        {
            "jobs.py": "class Runner:\n"
            "    def run(self, step, arg):\n"
            "        step(arg)\n"
            "    def twice(self, fn):\n"
            "        fn()\n"
            "    def hello(self):\n"
            "        pass\n\n"
            "runner = Runner()\n"
            "runner.run(runner.twice, runner.hello)\n",
        }
    )
    # `runner` is what calling Runner made: run's `step` is twice, and twice's `fn` is hello.
    assert ("jobs.py:Runner.run", "jobs.py:Runner.twice") in found
    assert ("jobs.py:Runner.twice", "jobs.py:Runner.hello") in found


def test_a_decorated_name_holds_the_function_and_what_a_local_decorator_returns() -> None:
    found = calls(
        {
            "app.py": "import functools\n\n"
            "def traced(fn):\n"
            "    def wrapper():\n"
            "        return fn()\n"
            "    return wrapper\n\n"
            "def timed(fn):\n"
            "    def clock():\n"
            "        return fn()\n"
            "    return clock\n\n"
            "def register(fn):\n"
            "    return fn\n\n"
            "@traced\n"
            "@timed\n"
            "def work():\n"
            "    pass\n\n"
            "@register\n"
            "def plain():\n"
            "    pass\n\n"
            "@functools.lru_cache\n"
            "def cached():\n"
            "    pass\n\n"
            "def main():\n"
            "    work()\n"
            "    plain()\n"
            "    cached()\n",
        }
    )
    # work() runs traced's wrapper, which runs timed's clock (what @timed left), which runs
    # work; the function as written stays a callee too.
    assert ("app.py:main", "app.py:work") in found
    assert ("app.py:main", "app.py:traced.wrapper") in found
    assert ("app.py:traced.wrapper", "app.py:timed.clock") in found
    assert ("app.py:timed.clock", "app.py:work") in found
    assert ("app.py:traced.wrapper", "app.py:work") not in found
    assert ("app.py:main", "app.py:timed.clock") not in found
    # A decorator returning its argument, or one from outside: the function itself.
    assert {t for s, t in found if s == "app.py:main" and "plain" in t} == {"app.py:plain"}
    assert ("app.py:main", "app.py:cached") in found


def test_a_slice_of_a_list_keeps_the_items_at_those_positions() -> None:
    found = calls(
        {
            "steps.py": "def a():\n    pass\n\ndef b():\n    pass\n\ndef c():\n    pass\n\n"
            "def d():\n    pass\n\n"
            "steps = [a, b, c, d]\n"
            "def middle():\n    steps[1:3][0]()\n"
            "def every_other():\n    steps[::2][1]()\n"
            "def from_n(n):\n    steps[n:][0]()\n",
        }
    )

    def called(caller: str) -> set[str]:
        return {t for s, t in found if s == f"steps.py:{caller}"}

    assert called("middle") == {"steps.py:b"}
    assert called("every_other") == {"steps.py:c"}
    # A bound that is not a literal: any item may be first.
    assert called("from_n") == {"steps.py:a", "steps.py:b", "steps.py:c", "steps.py:d"}


def test_self_attribute_no_class_of_the_mro_has_comes_from_the_subclasses() -> None:
    found = calls(
        {
            "base.py": "class Job:\n"
            "    def run(self):\n"
            "        self.step()\n"  # defined only by subclasses
            "        self.log()\n"  # Job's own: subclasses' overrides are not guessed
            "    def log(self):\n"
            "        pass\n\n"
            "def make():\n"
            "    return Job()\n",  # no __init__ anywhere up: never a subclass's
            "jobs.py": "from base import Job\n\n"
            "class Copy(Job):\n"
            "    def __init__(self):\n"
            "        self.step = self.copy\n"
            "    def copy(self):\n"
            "        pass\n"
            "    def log(self):\n"
            "        pass\n\n"
            "class Move(Job):\n"
            "    def step(self):\n"
            "        pass\n",
            "ext.py": "import threading\n\n"
            "class Worker(threading.Thread):\n"
            "    def go(self):\n"
            "        self.start()\n\n"
            "class Mine(Worker):\n"
            "    def start(self):\n"
            "        pass\n",
        }
    )
    assert {t for s, t in found if s == "base.py:Job.run"} == {
        "jobs.py:Copy.copy",
        "jobs.py:Move.step",
        "base.py:Job.log",
    }
    assert not any(s == "base.py:make" and not t.startswith("?") for s, t in found)
    # An outside base may define it: that is where it goes, as before.
    assert {t for s, t in found if s == "ext.py:Worker.go"} == {"?threading.Thread.start"}


def test_generators_comprehensions_and_unpacking_carry_functions() -> None:
    found = calls(
        {
            "m.py": "def a():\n    pass\n\ndef b():\n    pass\n\ndef c():\n    pass\n\n"
            "def gen():\n    yield a\n\n"
            "def more():\n    yield from [b]\n\n"
            "def pair():\n    return a, b\n\n"
            "def by_yield():\n    for f in gen():\n        f()\n\n"
            "def by_yield_from():\n    for f in more():\n        f()\n\n"
            "def by_comprehension():\n    for f in [g for g in (b, c)]:\n        f()\n\n"
            "def by_star():\n    first, *rest = a, b, c\n    first()\n    rest[1]()\n\n"
            "def by_result():\n    x, y = pair()\n    y()\n",
        }
    )

    def called(caller: str) -> set[str]:
        return {t for s, t in found if s == f"m.py:{caller}" and not t.startswith("?")}

    assert called("by_yield") == {"m.py:gen", "m.py:a"}
    assert called("by_yield_from") == {"m.py:more", "m.py:b"}
    assert called("by_comprehension") == {"m.py:b", "m.py:c"}
    assert called("by_star") == {"m.py:a", "m.py:c"}
    assert called("by_result") == {"m.py:pair", "m.py:b"}


def test_calls_inside_f_strings_and_under_attribute_chains_are_found() -> None:
    found = calls(
        {
            "m.py": "def g():\n    pass\n\ndef h():\n    pass\n\ndef k():\n    pass\n\n"
            "def f(obj):\n"
            "    a = f'{g()}' rf'{h()!r}'\n"
            "    b = 'k()' + \"{k()}\" + r'{k()}'\n"  # not f-strings: no call
            "    c = k().real.imag\n"
            "    d = obj.x.y\n",
        }
    )
    assert {t for s, t in found if s == "m.py:f"} == {"m.py:g", "m.py:h", "m.py:k"}
    plain = edges_of({"m.py": "def k():\n    pass\n\nx = 'k()'\n"})
    assert not [e for e in plain if e.kind == "calls"]


def test_a_loop_over_an_instance_calls_its_iter_and_next_and_gets_what_next_returns() -> None:
    found = calls(
        {
            "it.py": "def task():\n    pass\n\n"
            "class Queue:\n"
            "    def __iter__(self):\n"
            "        return self\n"
            "    def __next__(self):\n"
            "        return task\n\n"
            "def drain():\n"
            "    for job in Queue():\n"
            "        job()\n\n"
            "def plain(items):\n"
            "    for x in [1, 2]:\n"
            "        print(x)\n"
            "    for y in items:\n"
            "        pass\n",
        }
    )
    assert {t for s, t in found if s == "it.py:drain" and not t.startswith("?")} == {
        "it.py:Queue.__iter__",
        "it.py:Queue.__next__",
        "it.py:task",
    }
    # Loops over lists or unknown values add nothing, not even an unresolved name.
    assert {t for s, t in found if s == "it.py:plain"} == {"?print"}


def test_a_static_methods_first_parameter_takes_what_callers_pass() -> None:
    found = calls(
        {
            "m.py": "class Hooks:\n"
            "    @staticmethod\n"
            "    def fire(callback):\n"
            "        callback()\n\n"
            "def ping():\n    pass\n\n"
            "def pong():\n    pass\n\n"
            "Hooks.fire(ping)\n"
            "Hooks().fire(pong)\n",
        }
    )
    assert {t for s, t in found if s == "m.py:Hooks.fire"} == {"m.py:ping", "m.py:pong"}


def test_functions_that_builtins_call_are_callees_of_the_caller() -> None:
    found = calls(
        {
            "m.py": "def double(x):\n    return x * 2\n\n"
            "def size(x):\n    return len(x)\n\n"
            "def keep(x):\n    return x\n\n"
            "def maker(x):\n"
            "    def made():\n        pass\n"
            "    return made\n\n"
            "def main(items):\n"
            "    list(map(double, items))\n"
            "    sorted(items, key=size)\n"
            "    filter(keep, items)\n"
            "    for f in map(maker, items):\n"
            "        f()\n",
            "shadow.py": "def map(f, xs):\n    pass\n\ndef g():\n    pass\n\nmap(g, [1])\n",
        }
    )
    assert {t for s, t in found if s == "m.py:main" and not t.startswith("?")} == {
        "m.py:double",
        "m.py:size",
        "m.py:keep",
        "m.py:maker",
        "m.py:maker.made",  # what map's function returned, called by the loop
    }
    # A map of the repository's own is just a function: g is not called.
    assert ("shadow.py:<module>", "shadow.py:g") not in found


def test_dict_update_stores_its_items_like_subscript_assignment() -> None:
    found = calls(
        {
            "m.py": "def on_start():\n    pass\n\ndef on_stop():\n    pass\n\n"
            "handlers = {}\n"
            "handlers.update({'start': on_start}, stop=on_stop)\n\n"
            "def fire(event):\n"
            "    handlers['start']()\n"
            "    handlers[event]()\n",
        }
    )
    # A literal key picks its item; any other key may be any of them.
    assert ("m.py:fire", "m.py:on_start") in found
    assert ("m.py:fire", "m.py:on_stop") in found
    start_only = calls(
        {
            "s.py": "def a():\n    pass\n\ndef b():\n    pass\n\n"
            "d = {}\nd.update(x=a, y=b)\nd['y']()\n"
        }
    )
    assert {t for s, t in start_only if s == "s.py:<module>" and not t.startswith("?")} == {
        "s.py:b"
    }


def test_arguments_past_star_args_never_reach_keyword_only_parameters() -> None:
    # `run(1, handler)` puts handler in *rest: matching by position would make it on_done.
    found = calls(
        {
            "m.py": "def run(first, *rest, on_done=None):\n    on_done()\n\n"
            "def only(first, *, cb=None):\n    cb()\n\n"
            "def typed(first, *rest: int, then=None):\n    then()\n\n"
            "def handler():\n    pass\n\ndef finish():\n    pass\n\n"
            "run(1, handler)\nrun(1, on_done=finish)\nonly(1, handler)\ntyped(1, handler)\n",
        }
    )
    assert ("m.py:run", "m.py:finish") in found
    assert ("m.py:run", "m.py:handler") not in found
    assert ("m.py:only", "m.py:handler") not in found
    assert ("m.py:typed", "m.py:handler") not in found
