"""Checks the crates' module graphs: no cycles, no path through a crate's root, and in
tool-core every import points down the floors.

Reads the sources (scripts/modgraph.py). Exits 1, printing each cycle, upward import or path
through the root, when the layering is broken. The floors are those of
docs/architecture.md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import modgraph  # noqa: E402

ARCHITECTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "architecture.md")


def read_floors(path):
    """Module (by its first path segment below the crate) -> floor, from the table of floors in
    docs/architecture.md, the one list of them: each row `| N. name | `module` (its files), ... |`.
    Submodules share their parent's floor."""
    floors = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = line.split("|")
            if len(cells) < 3:
                continue
            head = cells[1].strip()
            number = head.split(".", 1)[0]
            if not number.isdigit() or "." not in head:
                continue
            # The modules of the floor: backticked names outside parentheses.
            depth, top = 0, []
            for ch in cells[2]:
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                elif depth == 0:
                    top.append(ch)
            names = "".join(top).split("`")[1::2]
            for name in names:
                floors[name] = int(number)
    if not floors:
        sys.exit(f"layers: no table of floors in {path}")
    return floors


FLOORS = read_floors(ARCHITECTURE)

def floor(module):
    head = module.split("::")[0]
    if head not in FLOORS:
        sys.exit(f"layers: module `{module}` has no floor; add it to the table of floors in docs/architecture.md")
    return FLOORS[head]


def cycles(graph):
    """Each cycle found by a depth-first search with colours."""
    colour, stack, found = {}, [], []

    def visit(node):
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if colour.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in colour:
                visit(nxt)
        stack.pop()
        colour[node] = 2

    for node in sorted(graph):
        if node not in colour:
            visit(node)
    return found


def check(crate, src, floors):
    edges, through_root = modgraph.edges(src)
    problems = []
    for here, path in sorted(set(through_root)):
        problems.append(f"{crate}: `{here or 'the root'}` names `{path}` through the crate root; name its module instead")
    # The crate root is the table of contents: it re-exports, and nothing may import it.
    edges = {(a, b) for a, b in edges if a != ""}
    for a, b in sorted(edges):
        if b == "":
            problems.append(f"{crate}: `{a}` imports through the crate root; name the module instead")
    edges = {(a, b) for a, b in edges if b != ""}
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    if floors:
        for a, b in sorted(edges):
            if floor(b) > floor(a):
                problems.append(f"{crate}: `{a}` (floor {floor(a)}) imports `{b}` (floor {floor(b)}), which is above it")
    for cycle in cycles(graph):
        problems.append(f"{crate}: import cycle: " + " -> ".join(cycle))
    for p in problems:
        print("layers:", p)
    if not problems:
        what = ", every import points down" if floors else ""
        print(f"layers: {crate}: {len(graph)} modules, {len(edges)} imports, no cycles{what}")
    return not problems


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ok = check("toolsmith-core", os.path.join(root, "tool-core", "src"), True)
    ok = check("toolsmith-macros", os.path.join(root, "tool-macros", "src"), False) and ok
    if not ok:
        sys.exit(1)


main()
