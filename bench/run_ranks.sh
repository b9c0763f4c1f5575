#!/usr/bin/env bash
# run_ranks.sh [BUILD_DIR]: a run on MPI ranks beside the same run in one
# process (docs/distributed.md "Figures").
#
# 1. Rollout throughput: etc/modes/multi_explorer.cfg made rollout-bound
#    (32-token responses, every role on one core: model.threads = 1), with 1,
#    2 and 3 explorers: as threads of one process, and as explorer ranks
#    (mpirun -np 2+E). Rollout tokens per second of the run's wall time.
# 2. The waiting rank: the CPU time each rank used, against the run's wall
#    time (a rank that waited by spinning in MPI would show ~100%).
# 3. The weight broadcast against model size (bench_weights_bcast).
# 4. Data-parallel trainers: a training-bound run (warm-up steps only, 64
#    pairs a step, a 4-layer model of hidden 256) with 1 and 2 trainer ranks,
#    beside one process: training tokens per second of training time.
# Figures only, no pass/fail. On a 2-core machine the explorer ranks share
# the cores with the master and the trainer: this shows the mechanics, not
# a speed-up.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
TERN=$PWD/$BUILD/bin/tern
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --oversubscribe"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"

opts=(-o 'run.out_dir="'"$work"'/runs"' -o trainer.steps=20 -o trainer.sft.steps=0
      -o eval.every=0 -o eval.limit=8 -o trainer.save_every=0 -o explorer.max_tokens=32
      -o model.threads=1 -o sync.max_staleness=-1 -o buffer.capacity=65536)

tokens_per_s() {
  python3 -c "import json,sys; s=json.load(open(sys.argv[1]));
print('%.0f' % (s['rollout_tokens'] / s['wall_seconds']))" "$1/summary.json"
}

echo
echo "1. rollout tokens/s (multi_explorer, 32-token responses, 20 steps)"
printf '%10s %16s %16s %8s\n' explorers "one process" "MPI ranks" ratio
for e in 1 2 3; do
  "$TERN" run etc/modes/multi_explorer.cfg "${opts[@]}" -o sync.explorers=$e \
    -o run.name="\"threads$e\"" >/dev/null 2>&1
  $MPIRUN -np $((2 + e)) "$TERN" run etc/modes/multi_explorer.cfg "${opts[@]}" \
    -o sync.explorers=$e -o run.name="\"ranks$e\"" >/dev/null 2>&1
  a=$(tokens_per_s "$work/runs/threads$e")
  b=$(tokens_per_s "$work/runs/ranks$e")
  printf '%10d %16s %16s %8.2f\n' $e "$a" "$b" "$(echo "$b / $a" | bc -l)"
done

echo
echo "2. the CPU a waiting rank uses (synchronous on 3 ranks: the explorer rank"
echo "   waits for each step's weights, the trainer rank for each batch): its CPU"
echo "   time beyond its busy spans in trace.json, per second of waiting"
$MPIRUN -np 3 bash -c '/usr/bin/time -f "%U %S" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' \
  "$work/cpu" "$TERN" run etc/modes/synchronous.cfg "${opts[@]}" -o run.name='"cpu"' \
  >/dev/null 2>&1
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
t = json.load(open(work + "/runs/cpu/trace.json"))["traceEvents"]
lanes = {e["tid"]: e["args"]["name"] for e in t if e["ph"] == "M"}
# the top-level spans of each role's lane (train holds score and backward)
busy_names = {"trainer": {"train", "sft_step", "save"}, "explorer": {"rollout", "sync"}}
ts = [e["ts"] for e in t if e["ph"] != "M"]
wall = (max(ts) - min(ts)) / 1e6
for rank, role in ((1, "trainer"), (2, "explorer")):
    u, s = map(float, open("%s/cpu.%d" % (work, rank)).read().split()[-2:])
    busy = sum(e.get("dur", 0) for e in t if e["ph"] == "X" and e["name"] in busy_names[role]
               and "(rank %d)" % rank in lanes.get(e["tid"], "")
               and lanes.get(e["tid"], "").startswith(role)) / 1e6
    idle = wall - busy
    print("rank %d (%s): cpu %.2f s, busy %.2f s, waiting %.2f s: %.1f%% of a core while "
          "waiting" % (rank, role, u + s, busy, idle, 100 * max(0.0, u + s - busy) / idle))
PY

echo
echo "3. weight broadcast (rank 1 to the explorer ranks) against one process's copies"
$MPIRUN -np 3 "$BUILD/bench/bench_weights_bcast" 1 16 64 256

echo
echo "4. data-parallel trainers: warm-up only (20 steps of 64 pairs, hidden 256),"
echo "   training tokens per second of the steps' time"
dp=(-o 'run.out_dir="'"$work"'/runs"' -o trainer.steps=0 -o trainer.sft.steps=20
    -o trainer.sft.batch_tasks=64 -o eval.limit=4 -o model.threads=1
    -o model.init.hidden_size=256 -o model.init.intermediate_size=688)
train_tokens_per_s() {
  python3 -c "import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
t=sum(r.get('train_tokens_per_s',0) for r in rows if r.get('stage')=='sft')
n=sum(1 for r in rows if r.get('stage')=='sft')
print('%.0f' % (t / n))" "$1/metrics.jsonl"
}
"$TERN" run etc/quickstart.cfg "${dp[@]}" -o run.name='"dp_threads"' >/dev/null 2>&1
$MPIRUN -np 3 "$TERN" run etc/quickstart.cfg "${dp[@]}" -o run.name='"dp1"' >/dev/null 2>&1
$MPIRUN -np 4 "$TERN" run etc/quickstart.cfg "${dp[@]}" -o ranks.trainers=2 \
  -o run.name='"dp2"' >/dev/null 2>&1
a=$(train_tokens_per_s "$work/runs/dp_threads")
b=$(train_tokens_per_s "$work/runs/dp1")
c=$(train_tokens_per_s "$work/runs/dp2")
printf '%16s %16s %16s %8s\n' "one process" "1 trainer rank" "2 trainer ranks" "2 vs 1"
printf '%16s %16s %16s %8.2f\n' "$a" "$b" "$c" "$(echo "$c / $b" | bc -l)"
