"""Import cycles among the product's modules, imports inside functions included.

    python scripts/import_cycles.py [PACKAGE ...]      (default: inbox assistant integrations)

Builds the import graph with grimp (what import-linter reads) and prints every group of modules
that import each other, directly or through others. Exits 1 if there is any. `make lint` and
`tests/test_architecture.py` run it; the layer contracts themselves are import-linter's
(`[tool.importlinter]` in pyproject.toml).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import grimp

PACKAGES = ("inbox", "assistant", "integrations")


def cycles(packages: Iterable[str] = PACKAGES) -> list[list[str]]:
    """Each strongly connected group of two or more modules, sorted (Tarjan's algorithm)."""
    graph = grimp.build_graph(*packages, include_external_packages=False, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(root: str) -> None:
        # iterative, so a deep import chain cannot hit the recursion limit
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(groups)


def main(argv: list[str]) -> int:
    found = cycles(argv or PACKAGES)
    for group in found:
        print(f"import cycle of {len(group)} modules: {', '.join(group)}")
    print(f"{len(found)} import cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
