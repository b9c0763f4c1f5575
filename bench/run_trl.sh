#!/usr/bin/env bash
# run_trl.sh [STEPS] [BUILD_DIR]: tern's real-model RL example beside TRL's
# GRPOTrainer on this machine, one after the other in one run: the same model
# (SmolLM2-135M-Instruct, float32), tasks, group size, lengths, learning rate,
# loss and verifier (bench/trl_peer.py says how each is matched). Prints, for
# each: seconds per RL step, generation tokens/s, greedy held-out accuracy
# before and after STEPS steps (default 12), peak RSS; then tern / TRL.
# Needs Python with torch, transformers, trl and datasets (PyPI; PYTHON names
# the interpreter, default python3) and the network once for the model file.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-12}
BUILD=${2:-build}
PY=${PYTHON:-python3}
CFG=etc/examples/smollm2-arith.cfg
[ -x "$BUILD/bin/tern" ] || { echo "run_trl.sh: build tern first ($BUILD/bin/tern)" >&2; exit 1; }
gguf=$(python3 scripts/fetch-smollm2.py --dir models)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$BUILD/bin/tern" model convert "$gguf" "$work/hf" >/dev/null
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $STEPS RL steps each"

# tern, as the example runs it (its peak RSS: the child's, measured by Python)
"$PY" - "$BUILD/bin/tern" "$CFG" "$STEPS" "$work" <<'PY' | tee "$work/tern.out"
import json, resource, subprocess, sys
tern, cfg, steps, work = sys.argv[1:]
name = "run-trl-tern"
cmd = [tern, "run", cfg, "-o", "trainer.steps=%s" % steps, "-o", "eval.every=%s" % steps,
       "-o", 'run.name="%s"' % name, "-o", 'run.out_dir="%s/runs"' % work]
subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
run = "%s/runs/%s" % (work, name)
spans = {}
for e in json.load(open(run + "/trace.json"))["traceEvents"]:
    if e.get("ph") == "X" and e["name"] in ("rollout", "train", "evaluate"):
        spans.setdefault(e["name"], []).append(e["dur"] / 1e6)
steps_s = [json.loads(l) for l in open(run + "/metrics.jsonl")]
summ = json.load(open(run + "/summary.json"))
# the RL time is the run's wall time less its greedy evaluations and start-up
# (what trl_peer.py times: the optimiser steps, generation included)
wall = summ["wall_seconds"] - sum(spans.get("evaluate", []))
gen_tokens = summ["rollout_tokens"]
res = {"seconds_per_step": wall / int(steps), "gen_tokens": gen_tokens,
       "gen_tokens_per_s": gen_tokens / sum(spans.get("rollout", [1e-9])),
       "accuracy_before": summ["accuracy_before_rl"], "accuracy_after": summ["accuracy_after_rl"],
       "peak_rss_mib": rss}
print("tern: %.2f s per RL step, generation %.1f tokens/s, accuracy %.3f -> %.3f, peak RSS %.0f MiB"
      % (res["seconds_per_step"], res["gen_tokens_per_s"], res["accuracy_before"],
         res["accuracy_after"], rss))
print("TERN_JSON " + json.dumps(res))
PY

system=$(sed -n 's/^ *system_prompt = "\(.*\)";$/\1/p' "$CFG")
"$PY" bench/trl_peer.py --model "$work/hf" --train etc/data/smollm2/arith-train.jsonl \
  --eval etc/data/smollm2/arith-eval.jsonl --system "$system" --steps "$STEPS" \
  --tern "$BUILD/bin/tern" 2>/dev/null | grep '^trl_peer:\|^TRL_JSON' | tee "$work/trl.out"

python3 - "$work/tern.out" "$work/trl.out" <<'PY'
import json, sys
def last(path, tag):
    return [json.loads(l[len(tag) + 1:]) for l in open(path) if l.startswith(tag)][-1]
t, p = last(sys.argv[1], "TERN_JSON"), last(sys.argv[2], "TRL_JSON")
print("%-28s %12s %12s %8s" % ("", "tern", "TRL", "ratio"))
print("%-28s %12.2f %12.2f %7.2fx" % ("seconds per RL step", t["seconds_per_step"],
      p["seconds_per_step"], p["seconds_per_step"] / t["seconds_per_step"]))
print("%-28s %12.1f %12.1f %7.2fx" % ("generation tokens/s", t["gen_tokens_per_s"],
      p["gen_tokens_per_s"], t["gen_tokens_per_s"] / p["gen_tokens_per_s"]))
print("%-28s %12.3f %12.3f" % ("accuracy before", t["accuracy_before"], p["accuracy_before"]))
print("%-28s %12.3f %12.3f" % ("accuracy after", t["accuracy_after"], p["accuracy_after"]))
print("%-28s %12.0f %12.0f" % ("peak RSS MiB", t["peak_rss_mib"], p["peak_rss_mib"]))
print("TRL versions: " + json.dumps(p["versions"]))
PY
