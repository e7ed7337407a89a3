"""Python: definitions, name bindings and references of one file, from its tree-sitter tree.

Two passes. The first walks the tree once, creating scopes (module, class, function, lambda)
with every binding of every name in them (definitions, imports, assignments, parameters,
`for` targets, `with ... as`), and noting every call site. The second evaluates, lazily and
flow-insensitively, what each call's callee may be (see `model` for the value language): a
name is looked up through the enclosing scopes (class bodies skipped, as Python does), a
parameter takes the values of the arguments that calls of its function in this file pass, a
variable those of its assignments. What is left symbolic (imports, other files) is resolved by
`resolve` once the whole repository is known.

The passes are two modules: `python_scopes` (pass 1) and `python_values` (pass 2), over the
types of `python_bindings`; this one runs them and turns what they found into `FileFacts`.
"""

from __future__ import annotations

import re

from core.code.graph.gcpause import gc_paused
from core.code.graph.model import (
    FLOW,
    IMPLICIT,
    SCOPED,
    ClassFacts,
    FileFacts,
    Reference,
    reference,
    stored,
)
from core.code.graph.python_scopes import module_name as module_name
from core.code.graph.python_values import Evaluator

ROUNDS = 2  # parameter flow: a function passed through two calls is still followed

_STRINGS = re.compile(r"""[rbfuRBFU]*("|')(?:\\.|(?!\1).)*\1""")
_PLAIN = re.compile(r"[\w.]*")  # no string literal and no whitespace: a name as it is


class PythonExtractor(Evaluator):
    def extract(self) -> FileFacts:
        tree = self._scan()  # pass 1
        for _ in range(ROUNDS):
            if not self._flow():
                break
        facts = self._facts()
        facts = self._facts()
        # Bindings point back at their scope: without these cycles, all of this file's
        # scaffolding is freed here by reference counting instead of waiting for (and
        # lengthening) the next garbage collection.
        for scope in (
            self.module_scope,
            *self.class_scopes.values(),
            *self._function_scopes.values(),
        ):
            scope.bindings.clear()
        del tree  # kept until here: the evaluator read its nodes
        return facts

    def _facts(self) -> FileFacts:
        refs: list[Reference] = []
        for source, line, dotted in self.imports:
            refs.append(Reference("imports", source, line, (["m", dotted],), dotted))
        for symbol, (bases, scope, line) in self.class_bases.items():
            for base in bases:
                values = self.eval(base, scope)
                refs.append(reference("inherits", symbol, line, values, self._t(base), SCOPED))
        for site in self.sites:
            if site.implicit is not None:
                iterated = self._iterated(site)
                if iterated:  # the resolver keeps only what lands in the repository
                    name = f"{IMPLICIT}.{site.implicit}"
                    refs.append(
                        reference("calls", site.scope.symbol, site.line, iterated, name, FLOW)
                    )
                continue
            if site.by is not None:
                if self._builtin(site.by, site.scope):
                    values = self.eval(site.callee, site.scope)
                    name = f"{IMPLICIT}.{site.by}"
                    refs.append(
                        reference("calls", site.scope.symbol, site.line, values, name, FLOW)
                    )
                continue
            values = self.eval(site.callee, site.scope)
            confidence = SCOPED if self._direct(site.callee, site.scope) else FLOW
            # The callee as written names an unresolved edge: string literals in it are left
            # out (a key passed to a factory must not end up in the graph).
            name = self._t(site.callee)
            if not _PLAIN.fullmatch(name):  # most callees are dotted names: nothing to tidy
                name = _STRINGS.sub('"…"', " ".join(name.split()))
            if len(name) > 200:
                name = name[:197] + "..."
            refs.append(reference("calls", site.scope.symbol, site.line, values, name, confidence))
        classes: dict[str, ClassFacts] = {}
        for symbol, scope in self.class_scopes.items():
            bases, outer, _ = self.class_bases[symbol]
            members = {name: stored(self.lookup(name, scope)) for name in scope.bindings}
            for attr, bindings in self.self_attrs.get(symbol, {}).items():
                assigned = [v for b in bindings for v in self._binding_values(b, 0)]
                members.setdefault(attr, []).extend(stored(frozenset(assigned)))
            classes[symbol] = ClassFacts(
                [v for base in bases for v in self.eval(base, outer)], members
            )
        module_scope = self.module_scope
        names = {name: stored(self.lookup(name, module_scope)) for name in module_scope.bindings}
        returns = {
            symbol: stored(frozenset(v for b in bindings for v in self._binding_values(b, 0)))
            for symbol, bindings in self.returns.items()
        }
        return FileFacts(
            path=self.path,
            language="python",
            module=self.module,
            definitions=sorted(self.definitions.values(), key=lambda d: (d.line, d.symbol)),
            names=names,
            classes=classes,
            returns={k: v for k, v in returns.items() if v},
            stars=self.stars,
            references=refs,
        )


def extract_python(path: str, source: bytes) -> FileFacts:
    with gc_paused():
        return PythonExtractor(path, source).extract()
