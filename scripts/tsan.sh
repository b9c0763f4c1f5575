#!/usr/bin/env bash
# tsan.sh: `tern run` under ThreadSanitizer (issue 29): the quickstart and
# every etc/modes/ config, each cut to a few warm-up and RL steps, and two
# multi-turn runs with an environment (below), in a build
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
# checked LABEL NAME COMMAND...: COMMAND's stderr into $work/NAME.err; its
# failure or any report there prints the first lines and fails the script
checked() {
  local label=$1 name=$2
  shift 2
  if "$@" >/dev/null 2>"$work/$name.err" && ! grep -q 'ThreadSanitizer' "$work/$name.err"; then
    echo "  $label: no report"
  else
    echo "  $label: FAILED"
    sed -n '1,60p' "$work/$name.err"
    failed=1
  fi
}
for cfg in etc/quickstart.cfg etc/modes/*.cfg; do
  name=$(basename "$cfg" .cfg)
  checked "$cfg" "$name" build-tsan/bin/tern run "$cfg" -o "run.out_dir=\"$work/runs\"" \
    -o "run.name=\"$name\"" -o trainer.steps=8 -o trainer.sft.steps=4 -o eval.limit=4 \
    -o trainer.save_every=4
done

# Multi-turn runs (docs/agents.md): a chat model (the test fixture), two
# explorers and the master's evaluation every other step, all three sharing
# the environment's instance: guess_number is thread-safe (its ops run
# concurrently), the python plugin is not (its ops one at a time, under the
# run's lock).
here=$PWD
printf '%s\n' 'class Env:' '    def reset(self, task):' '        self.turn = 0' \
  '        return "Say a number."' '    def step(self, action):' '        self.turn += 1' \
  '        return ("Again.", 0.5, False) if self.turn < 2 else (None, 1.0, True)' \
  > "$work/env.py"
for name in guess_number python; do
  if [ $name = guess_number ]; then env='low = 1; high = 4;'; else env="file = \"$work/env.py\";"; fi
  cat > "$work/env-$name.cfg" <<EOF
run = { seed = 1; };
model = { plugin = "transformer"; path = "$here/tests/fixtures/qwen2_chat"; threads = 1; };
data = { train = "$here/etc/data/arith-train.jsonl"; eval = "$here/etc/data/arith-eval.jsonl"; };
explorer = { batch_tasks = 4; group_size = 4; max_tokens = 4; };
trainer = { steps = 8; save_every = 4; };
eval = { every = 2; limit = 4; max_tokens = 4; };
buffer = { plugin = "fifo"; capacity = 64; };
sync = { plugin = "multi_explorer"; explorers = 2; };
environment = { plugin = "$name"; max_turns = 3; $env };
EOF
  checked "an environment ($name), two explorers and the evaluation" "env-$name" \
    build-tsan/bin/tern run "$work/env-$name.cfg" -o "run.out_dir=\"$work/runs\"" \
    -o "run.name=\"env-$name\""
done
# a workflow: programs calling each explorer's trajectory endpoints (the HTTP
# threads, the model's thread, the programs' thread), two explorers at once
printf '%s\n' 'import json, os, sys, urllib.request' \
  'task = json.loads(sys.stdin.readline())' \
  'def chat(m):' \
  '    b = json.dumps({"model": "m", "messages": m}).encode()' \
  '    q = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", b,' \
  '                               {"Content-Type": "application/json"})' \
  '    return json.load(urllib.request.urlopen(q))["choices"][0]["message"]' \
  'msgs = [{"role": "user", "content": task["prompt"]}]' \
  'msgs += [chat(msgs), {"role": "user", "content": "again"}]' \
  'chat(msgs)' \
  'print(json.dumps({"reward": 1.0}))' > "$work/agent.py"
cat > "$work/workflow.cfg" <<EOF
run = { seed = 1; };
model = { plugin = "transformer"; path = "$here/tests/fixtures/qwen2_chat"; threads = 1; };
data = { train = "$here/etc/data/arith-train.jsonl"; eval = "$here/etc/data/arith-eval.jsonl"; };
explorer = { batch_tasks = 4; group_size = 2; max_tokens = 4; };
trainer = { steps = 4; save_every = 2; };
eval = { every = 2; limit = 4; max_tokens = 4; };
buffer = { plugin = "fifo"; capacity = 64; };
sync = { plugin = "multi_explorer"; explorers = 2; };
workflow = { command = ["python3", "$work/agent.py"]; concurrency = 4; };
EOF
checked "a workflow's programs, two explorers and the evaluation" workflow \
  build-tsan/bin/tern run "$work/workflow.cfg" -o "run.out_dir=\"$work/runs\"" \
  -o 'run.name="workflow"'
exit $failed
