"""Checks tool-core's module graph: no cycles, and every import points down the floors.

Reads the graph `cargo modules dependencies` prints (DOT, modules only, `uses` edges) on
stdin. Exits 1, printing the cycle or the upward import, when the layering is broken.
The floors are those of docs/architecture.md.
"""

import re
import sys

# Module (by its first path segment below the crate) -> floor. Submodules share their
# parent's floor unless listed on their own.
FLOORS = {
    # 1: vocabulary
    "arguments": 1, "caller": 1, "context": 1, "dialect": 1, "echo": 1, "error": 1, "json": 1,
    "limits": 1, "outcome": 1, "spec": 1,
    # 2: the canonical schema
    "schema": 2,
    # 3: reading arguments
    "validate": 3,
    # 4: the tool and its definition
    "definition": 4, "tool": 4,
    # 5: readers of definitions
    "provider": 5, "lint": 5, "idempotency": 5, "output": 5, "state": 5,
    # 6: the execution policy
    "policy": 6, "audit": 6,
    # 7: the toolbox
    "toolbox": 7,
    # 8: edges nothing imports
    "mcp": 8, "registry": 8, "testing": 8, "__macro_support": 8,
}

CRATE = "toolsmith_core"


def floor(module):
    head = module.split("::")[0]
    if head not in FLOORS:
        sys.exit(f"layers: module `{module}` has no floor; add it to scripts/layers.py and docs/architecture.md")
    return FLOORS[head]


def main():
    edges = set()
    for line in sys.stdin:
        m = re.match(r'\s*"([^"]+)" -> "([^"]+)" \[label="uses"', line)
        if not m:
            continue
        a, b = (x.removeprefix(CRATE).removeprefix("::") for x in m.groups())
        # The crate root is the table of contents: it re-exports, and nothing may import it.
        if a == "":
            continue
        if b == "":
            sys.exit(f"layers: `{a}` imports through the crate root; name the module instead")
        if a != b:
            edges.add((a, b))
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    problems = []
    for a, b in sorted(edges):
        if floor(b) > floor(a):
            problems.append(f"`{a}` (floor {floor(a)}) imports `{b}` (floor {floor(b)}), which is above it")
    # Cycles, by depth-first search with colours.
    colour, stack = {}, []

    def visit(node):
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if colour.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append("import cycle: " + " -> ".join(cycle))
            elif nxt not in colour:
                visit(nxt)
        stack.pop()
        colour[node] = 2

    for node in sorted(graph):
        if node not in colour:
            visit(node)
    for p in problems:
        print("layers:", p)
    if problems:
        sys.exit(1)
    print(f"layers: {len(graph)} modules, {len(edges)} imports, no cycles, every import points down")


main()
