#!/usr/bin/env bash
# run_math_peer.sh [BUILD_DIR]: the `math` reward's verdicts per second beside
# the peer verifier's (Hugging Face math-verify, PyPI), one after the other in
# one run on the same corpus (tests/corpora/math.jsonl), one thread each.
# math-verify is installed into a cached venv (~/.cache/tern/venv-math-verify)
# unless MATH_VERIFY_PYTHON names an interpreter that has it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
[ -x "$BUILD/bench/bench_rewards" ] || { echo "run_math_peer.sh: build bench_rewards first" >&2; exit 1; }
PY=${MATH_VERIFY_PYTHON:-$HOME/.cache/tern/venv-math-verify/bin/python}
if ! "$PY" -c 'import math_verify' 2>/dev/null; then
  python3 -m venv "$HOME/.cache/tern/venv-math-verify"
  "$HOME/.cache/tern/venv-math-verify/bin/pip" install -q --disable-pip-version-check \
    'math-verify==0.9.0'
  PY=$HOME/.cache/tern/venv-math-verify/bin/python
fi
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
"$BUILD/bench/bench_rewards" --seconds 3 math
"$PY" bench/math_peer_speed.py tests/corpora/math.jsonl --seconds 5
