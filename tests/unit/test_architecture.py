"""The architecture, checked on the code itself (the import graph and the source files).

- no import cycle between memstream's modules (function-level imports included: grimp sees
  them), so a walk through the code goes one way;
- only the composition root (``services.bootstrap``) and the adapters themselves import an
  adapter: every other part asks bootstrap;
- SQL runs only in the adapters (and the migrations runner): no ``.execute(`` elsewhere;
- no module over ``MAX_LINES`` lines, except those listed in ``LONGER`` with a reason.

import-linter keeps the first two as contracts too (pyproject.toml); this test states them as
counts a reader can check at a glance.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

import memstream

ROOT = Path(memstream.__file__).parent
ADAPTERS = "memstream.services.adapters"
MAX_LINES = 400
# The migrations runner applies DDL files; it is the one place outside the adapters that does.
EXECUTE_ALLOWED = {Path("services/adapters"), Path("ops/migrate.py")}
LONGER = {
    # Word lists (English and Chinese cues, colours, ports, openings) beside the rules that read
    # them: most of its lines are data.
    Path("services/domain/lexicon.py"): "the cue lexicon's word lists",
    # One class owns an Edge shard's whole life (open, write, search, delete, the erasure's
    # rewrite and its recovery, the cross-process hold check): splitting it would share its lock.
    Path("services/adapters/qdrant_edge.py"): "one shard's lifecycle under one lock",
    # The query path's use case: gate, search, fuse, rank, build the reply, stated in order.
    Path("services/handlers/retrieve.py"): "the query path in one reading order",
    # Every command's parser block and dispatch branch, appended one per command: a table of
    # the command line, with no logic of its own.
    Path("cli.py"): "the command line's parser, one block per command",
}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("memstream", cache_dir=None)


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    imported = graph.find_modules_directly_imported_by(child)
                    work.append((child, iter(sorted(imported))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle(graph: grimp.ImportGraph) -> None:
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert _cycles(graph) == [["a.x", "a.y"]]


def test_only_bootstrap_and_the_adapters_import_an_adapter(graph: grimp.ImportGraph) -> None:
    importers = {
        importer
        for module in graph.find_children(ADAPTERS) | {ADAPTERS}
        for importer in graph.find_modules_that_directly_import(module)
    }
    outside = sorted(
        m for m in importers if not m.startswith(("memstream.services.bootstrap", ADAPTERS))
    )
    assert outside == []


def _sources() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def _executes(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "execute"
    ]


def test_sql_runs_only_in_the_adapters_and_the_migrations() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in _sources()
        if not any(path.relative_to(ROOT).is_relative_to(a) for a in EXECUTE_ALLOWED)
        for line in _executes(path)
    }
    assert sorted(found) == []


def test_the_execute_finder_finds_a_call(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f(conn):\n    conn.execute('SELECT 1')\n", encoding="utf-8")
    assert _executes(source) == [2]


def test_no_module_over_the_size_limit() -> None:
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in _sources()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and path.relative_to(ROOT) not in LONGER
    }
    assert too_long == {}


def test_every_exception_to_the_size_limit_still_needs_it() -> None:
    for path in LONGER:
        assert len((ROOT / path).read_text(encoding="utf-8").splitlines()) > MAX_LINES, path
