#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that the emulator's C files call each other one way.

    scripts/check-layers.py [--nm NM] HEADER OBJECT...

HEADER declares the layers, top to bottom, in a table of its first comment
(sim/preload/internal.h):

     * LAYERS (top to bottom)
     *   interpose  interpose.c
     *   commands   uverbs.c ...
     *   ...
     * END

The call graph comes from the compiled objects: for each OBJECT (foo.c.o or
foo.o, from foo.c), `nm` lists the global symbols it defines and the ones it
uses. The check fails, naming the file, the symbol and the layers, when

  - a file uses a symbol (function or data) that a file of a higher layer
    defines;
  - files call each other in a cycle (within a layer: a layer's files are
    ordered too, without being told how);
  - a file is not in the table, or the table names a file no object is
    built from;
  - a file other than the base's resolver (LOADER_FILES) uses the dynamic
    loader: the interposers must never take the loader's lock.

Exit status 0 when the graph is layered, 1 when not, 2 for bad usage.
"""

import argparse
import os
import re
import subprocess
import sys

# The only files that may call the dynamic loader (libc.c resolves the real
# libc entry points at load).
LOADER_FILES = {"libc.c"}
LOADER_SYMBOLS = {"dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo",
                  "dlclose", "dlerror", "dl_iterate_phdr"}


class TableError(Exception):
    pass


def read_layers(header):
    """[(layer, [file, ...]), ...] top to bottom, from the header's table."""
    with open(header, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = None
    for i, line in enumerate(lines):
        if re.match(r"^\s*\*\s*LAYERS\b", line):
            start = i + 1
            break
    if start is None:
        raise TableError(f"{header}: no 'LAYERS' table in a comment")
    layers = []
    for line in lines[start:]:
        m = re.match(r"^\s*\*\s*(.*?)\s*$", line)
        if not m:
            break
        text = m.group(1)
        if text == "END":
            return layers
        words = text.split()
        if len(words) < 2 or not all(w.endswith(".c") for w in words[1:]):
            raise TableError(f"{header}: table line {text!r} is not 'LAYER FILE.c ...'")
        layers.append((words[0], words[1:]))
    raise TableError(f"{header}: the LAYERS table has no END line")


def source_of(obj):
    """foo.c.o, foo.o -> foo.c"""
    base = os.path.basename(obj)
    if base.endswith(".o"):
        base = base[:-2]
    if not base.endswith(".c"):
        base += ".c"
    return base


def symbols(nm, obj):
    """(defined, used) global symbol names of one object file."""
    out = subprocess.run([nm, "-P", "-g", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        # undefined: U; weak undefined: w or v without a value
        if parts[1] == "U" or (parts[1] in ("w", "v") and len(parts) == 2):
            used.add(parts[0])
        else:
            defined.add(parts[0])
    return defined, used


def find_cycles(files, edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
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
                out.append(sorted(comp))

    for v in sorted(files):
        if v not in index:
            visit(v)
    return out


def cycle_text(comp, edges):
    """One shortest cycle through the component's first file, as text."""
    members, start = set(comp), comp[0]
    parent, queue = {start: None}, [start]
    while queue:
        u = queue.pop(0)
        for v in sorted(edges.get(u, {})):
            if v not in members:
                continue
            if v == start:
                path = [u]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                path.reverse()
                path.append(start)
                return start + "".join(
                    f" -> {b} ({sorted(edges[a][b])[0]})" for a, b in zip(path, path[1:]))
            if v not in parent:
                parent[v] = u
                queue.append(v)
    return ", ".join(comp)


def check(header, objects, nm="nm"):
    """The problems found, as lines (empty when the files are layered)."""
    layers = read_layers(header)
    rank, layer_of = {}, {}
    for depth, (layer, names) in enumerate(reversed(layers)):
        for name in names:
            if name in rank:
                raise TableError(f"{header}: {name} is in the table twice")
            rank[name] = depth
            layer_of[name] = layer
    problems = []
    defined_by, uses = {}, {}
    for obj in objects:
        src = source_of(obj)
        if src not in rank:
            problems.append(f"{src} is not in the LAYERS table of {header}: give it a layer")
            continue
        defined, used = symbols(nm, obj)
        uses[src] = used
        for sym in defined:
            defined_by.setdefault(sym, src)
    for name in sorted(set(rank) - set(uses)):
        problems.append(f"{name} is in the LAYERS table of {header} but no object is built from it")
    edges = {}
    for src in sorted(uses):
        for sym in sorted(uses[src]):
            if sym in LOADER_SYMBOLS and src not in LOADER_FILES:
                problems.append(f"{src} ({layer_of[src]}) calls {sym}: only "
                                f"{', '.join(sorted(LOADER_FILES))} may call the dynamic loader")
            dst = defined_by.get(sym)
            if dst is None or dst == src:
                continue
            edges.setdefault(src, {}).setdefault(dst, []).append(sym)
            if rank[dst] > rank[src]:
                problems.append(f"{src} ({layer_of[src]}) uses {sym}, defined in {dst} "
                                f"({layer_of[dst]}): a layer above it")
    for comp in find_cycles(uses.keys(), edges):
        problems.append("a cycle between files: " + cycle_text(comp, edges))
    return problems


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nm", default="nm", help="the nm program (default: nm)")
    ap.add_argument("header")
    ap.add_argument("objects", nargs="+")
    args = ap.parse_args(argv)
    try:
        problems = check(args.header, args.objects, args.nm)
    except (TableError, OSError, subprocess.CalledProcessError) as e:
        print(f"check-layers: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"check-layers: {p}", file=sys.stderr)
    if problems:
        print(f"check-layers: {len(problems)} problem(s); the layers are listed in {args.header}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
