#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the main job: install what is
# missing, build, and run etc/quickstart.cfg. Extra arguments go to `tern run`
# (e.g. -o run.seed=2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# the command and its plugins only (target tern_runtime): the test command
# builds the tests and benchmarks
cmake --build build --target tern_runtime
build/bin/tern run etc/quickstart.cfg "$@"
