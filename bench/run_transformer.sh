#!/usr/bin/env bash
# run_transformer.sh [BUILD_DIR]: tern's transformer beside PyTorch on this
# machine, same model (bench preset), same work, each at its best thread
# count; prints both and the ratios tern / PyTorch. Needs Debian's
# python3-torch (apt-get install python3-torch); figures only, no pass/fail.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-rel}
if [ ! -x "$BUILD/bench/bench_transformer" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTERN_TESTS=OFF >/dev/null
  cmake --build "$BUILD" --target bench_transformer >/dev/null
fi
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"

best_tern=""
for t in 1 2; do
  out=$("$BUILD/bench/bench_transformer" --threads "$t")
  echo "$out" | grep -v '^TERN_JSON'
  best_tern="$best_tern$(echo "$out" | sed -n 's/^TERN_JSON //p')"$'\n'
done
torch=$(/usr/bin/python3 bench/torch_peer.py | tee /dev/stderr | sed -n 's/^TORCH_JSON //p')

/usr/bin/python3 - "$torch" <<PY
import json, sys
tern = [json.loads(l) for l in """$best_tern""".splitlines() if l.strip()]
torch = json.loads(sys.argv[1])
tt = max(x["train_tokens_per_s"] for x in tern)
tg = max(x["gen_tokens_per_s"] for x in tern)
print()
print("                      tern (best)    PyTorch (best)   ratio")
print(f"training tokens/s     {tt:11.0f}    {torch['train_tokens_per_s']:14.0f}   {tt / torch['train_tokens_per_s']:5.2f}x")
print(f"generation tokens/s   {tg:11.0f}    {torch['gen_tokens_per_s']:14.0f}   {tg / torch['gen_tokens_per_s']:5.2f}x")
PY
