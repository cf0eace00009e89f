"""The house plan, kept so (docs/design.md): linkwrap's modules import only downward, with no import
circle. Read from the code's own imports (the standard library's ast), lazy ones inside functions
included: a circle that only closes at run time is still a circle for a reader."""
import ast
import os

import linkwrap

ROOT = os.path.dirname(os.path.abspath(linkwrap.__file__))

# The floors, lowest first: a module may import its own package and any floor below its own. The
# link path reads top to bottom as its data flows: request -> facts -> evidence -> choice -> run ->
# record, then the pipeline that wires them; hosts (bench, server, cc) and the commands above.
FLOORS = [
    ("linkwrap.errors", "linkwrap.paths", "linkwrap.resources", "linkwrap.records", "linkwrap.libc"),
    ("linkwrap.faults",),
    ("linkwrap.cache",),
    ("linkwrap.ld",),
    ("linkwrap.request",),
    ("linkwrap.facts",),
    ("linkwrap.evidence",),
    ("linkwrap.choice",),
    ("linkwrap.run",),
    ("linkwrap.record",),
    ("linkwrap.pipeline",),
    ("linkwrap.bench",),
    ("linkwrap.server",),
    ("linkwrap.cc",),
    ("linkwrap.store", "linkwrap.install"),
    ("linkwrap.report",),
    ("linkwrap.cli",),
]


def modules():
    """{dotted name: path} of every module of the package."""
    out = {}
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(top, f), os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(top, f)
    return out


def imports(mods):
    """{module: {linkwrap modules it imports}} (the package face `linkwrap` itself, which holds only
    the version, left out)."""
    graph = {}
    for name, path in mods.items():
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
                for a in node.names:
                    found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base)
        graph[name] = {m for m in found if m in mods and m != "linkwrap" and m != name}
    return graph


def floor_of(module):
    for i, floor in enumerate(FLOORS):
        if any(module == top or module.startswith(top + ".") for top in floor):
            return i
    return None


def room_of(module):
    for floor in FLOORS:
        for top in floor:
            if module == top or module.startswith(top + "."):
                return top
    return None


def circles(graph):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_every_module_has_a_floor():
    unplaced = sorted(m for m in modules() if m != "linkwrap" and floor_of(m) is None)
    assert not unplaced, f"place these in FLOORS (tests/test_house.py, docs/design.md): {unplaced}"


def test_no_import_runs_back_up_a_floor():
    graph = imports(modules())
    climbs = sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps
                    if room_of(m) != room_of(d) and floor_of(d) >= floor_of(m))
    assert not climbs, "imports that run up (or sideways) a floor:\n" + "\n".join(climbs)


def test_no_import_circle():
    found = circles(imports(modules()))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_check_sees_a_circle_and_a_climb():
    """The checker itself: a planted circle and a planted climb are found (it could pass by reading
    nothing)."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert circles(graph) == [["a", "b", "c"]]
    real = imports(modules())
    assert "linkwrap.facts.probe" in real["linkwrap.pipeline"] or any(
        d.startswith("linkwrap.facts") for d in real["linkwrap.pipeline"])
    assert floor_of("linkwrap.cli.main") > floor_of("linkwrap.pipeline") > floor_of("linkwrap.request.args")
