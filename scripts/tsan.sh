#!/usr/bin/env bash
# tsan.sh: `tern run` under ThreadSanitizer (issue 29): the quickstart and
# every etc/modes/ config, each cut to a few warm-up and RL steps, in a build
# of the tern command and its plugins with -fsanitize=thread (build-tsan/;
# the tests themselves do not run under TSan: Criterion crashes there). Any
# report fails the script. MPI is left out of this build: Open MPI's library
# is not instrumented, so TSan cannot see its synchronisation.
#   scripts/tsan.sh            (after scripts/install-deps.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTERN_TSAN=ON -DTERN_TESTS=OFF \
  -DTERN_MPI=OFF >/dev/null
cmake --build build-tsan -j "$jobs" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
failed=0
for cfg in etc/quickstart.cfg etc/modes/*.cfg; do
  name=$(basename "$cfg" .cfg)
  if build-tsan/bin/tern run "$cfg" -o "run.out_dir=\"$work/runs\"" -o "run.name=\"$name\"" \
       -o trainer.steps=8 -o trainer.sft.steps=4 -o eval.limit=4 -o trainer.save_every=4 \
       >/dev/null 2>"$work/$name.err" && ! grep -q 'ThreadSanitizer' "$work/$name.err"; then
    echo "  $cfg: no report"
  else
    echo "  $cfg: FAILED"
    sed -n '1,60p' "$work/$name.err"
    failed=1
  fi
done
exit $failed
