#!/usr/bin/env python3
"""The folder map of the source tree, read from its #include lines.

Inside every folder, each child (a subfolder, or a source file together with its
header: foo.hpp + foo.cpp) is a node, and an include from a file under one child of
a file under another is an arrow between them. A folder is layered when those arrows
make no cycle: every child stands above all it includes.

    scripts/layers.py            the map of every folder with children that include
                                 each other, top-level folders first; cycles marked
    scripts/layers.py --check    exit 1 when a cycle exists at any level, or when a
                                 top-level folder includes one it may not (DESIGN)
    scripts/layers.py --dot      the top two levels as a Graphviz graph
    --root DIR                   read another tree (the tests' own small trees)

Includes are read as text: "path" from the repository root, or from the including
file's folder when no such root path exists; <...> includes are the system's.
"""
import argparse
import collections
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # --root changes it
TOP = ["dtypes", "core", "kernels", "config", "hub", "plugins", "backends", "actors", "apps", "examples"]
SOURCE = (".hpp", ".cpp", ".h", ".cu", ".cuh", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# Which top-level folders each may include (DESIGN: the layers).
ALLOWED = {
    "dtypes": set(),  # the weight formats: below everything that reads weights
    "core": {"plugins", "dtypes"},  # plugins/abi only: the C ABI headers the policy loader fills
    "kernels": {"dtypes"},
    "config": {"core", "dtypes"},
    "hub": {"core"},  # the Hugging Face Hub: names, the cache, downloads (the network, not in core)
    "plugins": set(),
    "backends": {"core", "kernels", "dtypes"},
    "actors": {"core", "config", "hub", "backends", "plugins", "dtypes"},
    "apps": {"core", "config", "hub", "kernels", "plugins", "backends", "actors", "dtypes"},
    "examples": {"plugins"},
}


def source_files():
    for top in TOP:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if name.endswith(SOURCE):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def includes_of(path, known):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    for target in INCLUDE.findall(text):
        local = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if target in known:
            yield target
        elif local in known:
            yield local


def stem(path):
    base = os.path.basename(path)
    return os.path.splitext(base)[0]


def child_of(folder, path):
    """The child of folder (a subfolder name + '/', or a file stem) that holds path."""
    rest = os.path.relpath(path, folder) if folder else path
    parts = rest.split(os.sep)
    return parts[0] + "/" if len(parts) > 1 else stem(parts[0])


def folders_of(files):
    seen = set()
    for f in files:
        d = os.path.dirname(f)
        while d and d not in seen:
            seen.add(d)
            d = os.path.dirname(d)
    return sorted(seen, key=lambda d: (d.count("/"), d))


def graph_in(folder, edges):
    """Arrows between the children of folder, with the file pairs behind each."""
    arrows = collections.defaultdict(list)
    prefix = folder + "/"
    for src, dst in edges:
        if not (src.startswith(prefix) and dst.startswith(prefix)):
            continue
        a, b = child_of(folder, src), child_of(folder, dst)
        if a != b:
            arrows[(a, b)].append((src, dst))
    return arrows


def cycles(nodes, arrows):
    """Strongly connected components of more than one node (Tarjan)."""
    out = collections.defaultdict(list)
    for a, b in arrows:
        out[a].append(b)
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in out[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return comps


def floors(nodes, arrows):
    """Each node's floor: 1 + the highest floor of what it includes (cycles collapsed)."""
    out = collections.defaultdict(set)
    for a, b in arrows:
        out[a].add(b)
    floor = {}

    def height(v, path):
        if v in floor:
            return floor[v]
        if v in path:
            return 0
        path.add(v)
        h = 1 + max((height(w, path) for w in out[v]), default=0)
        path.discard(v)
        floor[v] = h
        return h

    for v in nodes:
        height(v, set())
    return floor


def report(folder, files, edges, show_all):
    nodes = {child_of(folder, f) for f in files if f.startswith(folder + "/")}
    arrows = graph_in(folder, edges)
    comps = cycles(nodes, arrows)
    if len(nodes) < 2 or (not arrows and not show_all):
        return comps
    floor = floors(nodes, arrows)
    in_cycle = {n for c in comps for n in c}
    print(f"{folder}/")
    for n in sorted(nodes, key=lambda n: (-floor[n], n)):
        uses = sorted({b for (a, b) in arrows if a == n})
        mark = "  <- cycle" if n in in_cycle else ""
        print(f"  {floor[n]:2d}  {n:28s} -> {', '.join(uses) if uses else '-'}{mark}")
    for comp in comps:
        members = set(comp)
        for (a, b), pairs in sorted(arrows.items()):
            if a in members and b in members:
                print(f"      cycle arrow {a} -> {b}: " + "; ".join(f"{s} includes {d}" for s, d in pairs[:3]))
    print()
    return comps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 on a cycle or a forbidden top-level include")
    ap.add_argument("--dot", action="store_true", help="print the top two levels as Graphviz")
    ap.add_argument("--all", action="store_true", help="also list folders whose children include nothing of each other")
    ap.add_argument("--root", help="the tree to read (default: this repository)")
    args = ap.parse_args()
    if args.root:
        global ROOT
        ROOT = os.path.abspath(args.root)

    files = list(source_files())
    known = set(files)
    edges = [(f, t) for f in files for t in includes_of(f, known)]

    if args.dot:
        print("digraph layers {\n  rankdir=TB; node [shape=box];")
        pairs = set()
        for src, dst in edges:
            a = "/".join(src.split("/")[:2]) if src.count("/") > 1 else src.split("/")[0]
            b = "/".join(dst.split("/")[:2]) if dst.count("/") > 1 else dst.split("/")[0]
            if a != b:
                pairs.add((a, b))
        for a, b in sorted(pairs):
            print(f'  "{a}" -> "{b}";')
        print("}")
        return 0

    problems = []
    top_arrows = collections.defaultdict(list)
    for src, dst in edges:
        a, b = src.split("/")[0], dst.split("/")[0]
        if a != b:
            top_arrows[(a, b)].append((src, dst))
    print("top level")
    for a in TOP:
        uses = sorted({b for (x, b) in top_arrows if x == a})
        print(f"  {a:10s} -> {', '.join(uses) if uses else '-'}")
        for b in uses:
            if b not in ALLOWED[a]:
                src, dst = top_arrows[(a, b)][0]
                problems.append(f"{a}/ may not include {b}/: {src} includes {dst}")
    print()
    for folder in folders_of(files):
        for comp in report(folder, files, edges, args.all):
            problems.append(f"cycle in {folder}/: " + " <-> ".join(comp))
    for p in problems:
        print("layers:", p, file=sys.stderr)
    if args.check and problems:
        return 1
    print(f"layers: {len(files)} files, {len(edges)} includes, "
          f"{len(problems)} problem(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
