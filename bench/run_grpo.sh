#!/usr/bin/env bash
# run_grpo.sh [STEPS] [BUILD_DIR]: the whole RL step (generate, reward,
# score under the policy and the reference, PPO-clipped loss, AdamW) of
# tern beside the same step written by hand in PyTorch
# (bench/torch_grpo_peer.py), one after the other in one run, on tern's
# real-model example (SmolLM2-135M-Instruct, etc/examples/smollm2-arith.cfg)
# with a k3 KL to the reference (coef 0.04), so that both score under the
# policy and the reference. COMPUTE=bf16 runs tern with model.compute =
# "bf16" and the peer under torch.autocast bf16 (default fp32, as the
# example). Prints seconds per RL step (mean over steps 2..STEPS; the first
# warms up), generation tokens/s, and the ratio. STEPS default 4.
# Needs Python with torch and transformers (PYTHON names it, default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-4}
BUILD=${2:-build}
PY=${PYTHON:-python3}
COMPUTE=${COMPUTE:-fp32}
CFG=etc/examples/smollm2-arith.cfg
[ -x "$BUILD/bin/tern" ] || { echo "run_grpo.sh: build tern first ($BUILD/bin/tern)" >&2; exit 1; }
gguf=$(python3 scripts/fetch-smollm2.py --dir models)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$BUILD/bin/tern" model convert "$gguf" "$work/hf" >/dev/null
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $STEPS RL steps each, $COMPUTE"

"$BUILD/bin/tern" run "$CFG" -o trainer.steps="$STEPS" -o eval.every=0 -o eval.limit=8 \
  -o 'run.name="run-grpo"' -o "run.out_dir=\"$work/runs\"" -o "model.compute=\"$COMPUTE\"" \
  -o 'reference.same_as="model"' -o 'algorithm.kl.estimator="k3"' -o algorithm.kl.coef=0.04 \
  >/dev/null 2>&1
python3 - "$work/runs/run-grpo" <<'PY' | tee "$work/tern.out"
import json, sys
run = sys.argv[1]
ev = [e for e in json.load(open(run + "/trace.json"))["traceEvents"] if e.get("ph") == "X"]
ends = sorted(e["ts"] + e["dur"] for e in ev if e["name"] == "train")
steps = [(b - a) / 1e6 for a, b in zip(ends, ends[1:])]  # step k: end of train k-1 to end of train k
lines = [json.loads(l) for l in open(run + "/metrics.jsonl")]
gen = [l["rollout_tokens_per_s"] for l in lines if l.get("step", 0) >= 2 and "rollout_tokens_per_s" in l]
res = {"s_per_step": sum(steps) / len(steps), "gen_tokens_per_s": sum(gen) / len(gen)}
print("tern: %.2f s per RL step (mean of steps 2..), generation %.1f tokens/s" %
      (res["s_per_step"], res["gen_tokens_per_s"]))
print("TERN_JSON " + json.dumps(res))
PY

system=$(sed -n 's/^ *system_prompt = "\(.*\)";$/\1/p' "$CFG")
"$PY" bench/torch_grpo_peer.py --model "$work/hf" --train etc/data/smollm2/arith-train.jsonl \
  --system "$system" --steps "$STEPS" --compute "$COMPUTE" --tern "$BUILD/bin/tern" 2>/dev/null |
  tee "$work/peer.out" | grep -v '^GRPO_JSON'

python3 - "$work/tern.out" "$work/peer.out" <<'PY'
import json, sys
def last(path, tag):
    return [json.loads(l[len(tag) + 1:]) for l in open(path) if l.startswith(tag)][-1]
t, p = last(sys.argv[1], "TERN_JSON"), last(sys.argv[2], "GRPO_JSON")
print("%-24s %10s %10s %8s" % ("", "tern", "PyTorch", "ratio"))
print("%-24s %10.2f %10.2f %7.2fx" % ("seconds per RL step", t["s_per_step"], p["s_per_step"],
                                      p["s_per_step"] / t["s_per_step"]))
print("%-24s %10.1f %10.1f %7.2fx" % ("generation tokens/s", t["gen_tokens_per_s"],
                                      p["gen_tokens_per_s"],
                                      t["gen_tokens_per_s"] / p["gen_tokens_per_s"]))
print("PyTorch %s, %d threads" % (p["torch_version"], p["threads"]))
PY
