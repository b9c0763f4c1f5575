#!/usr/bin/env bash
# Mutation check (not part of CI: it takes about half an hour on 2 cores).
# Applies each mutation of scripts/mutants.txt, one at a time, to a copy of
# the tree in DIR (default /tmp/tern-mutants), rebuilds, runs the ctest
# entries the mutation names, and counts it killed when one of them fails.
# Prints one line per mutant and the kill rate; exits 1 when one survived.
#   scripts/mutants.sh [DIR] [NAME-REGEX]     (NAME-REGEX: only those mutants)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
dir=${1:-/tmp/tern-mutants}
only=${2:-}
jobs=$(nproc)

echo "== copying the tree to $dir and building it (once)"
mkdir -p "$dir"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$dir"
cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir/build" -j "$jobs" >/dev/null

exec python3 - "$dir" "$only" <<'PY'
import os, re, subprocess, sys

dir, only = sys.argv[1], sys.argv[2]
mutants, cur = [], None
for line in open(os.path.join(dir, "scripts/mutants.txt")):
    line = line.rstrip("\n")
    if line.startswith("#") or not line.strip():
        continue
    if line.startswith("== "):
        cur = {"name": line[3:], "file": None, "test": None, "old": None, "new": None}
        mutants.append(cur)
    elif line.startswith("file "):
        cur["file"] = line[5:]
    elif line.startswith("test "):
        cur["test"] = line[5:]
    elif line.startswith("- "):
        cur["old"] = line[2:]
    elif line.startswith("+ "):
        cur["new"] = line[2:]
    else:
        sys.exit("scripts/mutants.txt: cannot read: " + line)
if only:
    mutants = [m for m in mutants if re.search(only, m["name"])]

def sh(cmd):
    return subprocess.run(cmd, shell=True, cwd=os.path.join(dir, "build"),
                          capture_output=True, text=True)

killed = 0
for m in mutants:
    path = os.path.join(dir, m["file"])
    orig = open(path).read()
    if orig.count(m["old"]) != 1:
        sys.exit("%s: %s: the text to change is found %d times, not once: update "
                 "scripts/mutants.txt" % (m["name"], m["file"], orig.count(m["old"])))
    open(path, "w").write(orig.replace(m["old"], m["new"]))
    try:
        b = sh("ninja")
        if b.returncode != 0:
            verdict = "killed (does not build)"
        else:
            t = sh("ctest --timeout 600 -R '%s'" % m["test"])
            ran = "tests passed" in t.stdout or "tests failed" in t.stdout
            if not ran or "No tests were found" in t.stdout:
                sys.exit("%s: no ctest entry matches %s" % (m["name"], m["test"]))
            verdict = "killed" if t.returncode != 0 else "SURVIVED"
    finally:
        open(path, "w").write(orig)
    killed += verdict.startswith("killed")
    print("%-9s %s  [%s]" % (verdict.split()[0], m["name"], m["test"]), flush=True)
sh("ninja")
n = len(mutants)
print("== %d of %d mutants killed (%.0f%%)" % (killed, n, 100.0 * killed / n if n else 0))
sys.exit(0 if killed == n else 1)
PY
