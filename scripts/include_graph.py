#!/usr/bin/env python3
"""The include graph of libtern (core/src) and the command layer (cli/).

Prints the cycles between modules (a module is x.c with x.h) and between
folders, then each folder's dependencies. A cycle means two parts can no
longer be understood or moved apart; the goal is none (docs/architecture.md
§1). Run from the repository root: python3 scripts/include_graph.py
Exit status 1 when there is a cycle, but for the ones KNOWN names: a cycle
that is there and being taken apart (issue 46), so that the test command
(scripts/test.sh) fails on any new one. A known cycle that has gone, or has
grown, is reported too: remove it from KNOWN.
"""
import os
import re
import sys

ROOTS = ["core/src", "cli"]

# The cycles allowed for now, each with the issue that removes it.
KNOWN = {
    # the master starts the MPI ranks, whose master calls the master's run
    # (issue 46 item 1: one link interface, the roles not knowing how they run)
    ("core/src/loop/master", "core/src/loop/ranks", "core/src/loop/run_checks"): "issue 46",
}


def files():
    for root in ROOTS:
        for d, _, names in os.walk(root):
            for n in names:
                if n.endswith((".c", ".h")):
                    yield os.path.join(d, n)


def resolve(src, inc):
    for cand in (os.path.join(os.path.dirname(src), inc), os.path.join("core/src", inc),
                 os.path.join("cli", inc)):
        cand = os.path.normpath(cand)
        if os.path.exists(cand):
            return cand
    return None  # a system or SDK header


def module(path):
    return os.path.splitext(path)[0]


def cycles(graph):
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main():
    mods = {}
    for f in files():
        deps = mods.setdefault(module(f), set())
        with open(f, errors="replace") as fh:
            for line in fh:
                m = re.match(r'\s*#include "(.+)"', line)
                target = m and resolve(f, m.group(1))
                if target and module(target) != module(f):
                    deps.add(module(target))
    folders = {}
    for a, bs in mods.items():
        for b in bs:
            if os.path.dirname(a) != os.path.dirname(b):
                folders.setdefault(os.path.dirname(a), set()).add(os.path.dirname(b))
    mc, fc = cycles(mods), cycles(folders)
    print("module cycles:", mc or "none")
    print("folder cycles:", fc or "none")
    for a in sorted(folders):
        print(f"  {a} -> {', '.join(sorted(folders[a]))}")
    new = [c for c in mc + fc if tuple(c) not in KNOWN]
    gone = [k for k in KNOWN if list(k) not in mc]
    for c in new:
        print("a new include cycle:", " -> ".join(c), file=sys.stderr)
    for k in gone:
        print(f"the known cycle {' -> '.join(k)} ({KNOWN[k]}) is gone or changed: remove it "
              "from KNOWN in scripts/include_graph.py", file=sys.stderr)
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main())
