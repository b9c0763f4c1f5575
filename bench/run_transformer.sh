#!/usr/bin/env bash
# run_transformer.sh [BUILD_DIR]: tern's transformer beside PyTorch on this
# machine, same model (bench preset), same work, each at its best thread
# count, in both precisions: float32, and bf16 products (tern's
# compute = "bf16"; PyTorch's CPU autocast to bf16). Prints the figures and
# the ratios tern / PyTorch. Needs Debian's python3-torch
# (apt-get install python3-torch; PYTHON names another interpreter with
# torch); figures only, no pass/fail; MFU against the model's own GEMM peak. tern's bf16
# runs are skipped on a CPU without AVX512-BF16.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-rel}
if [ ! -x "$BUILD/bench/bench_transformer" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTERN_TESTS=OFF >/dev/null
  cmake --build "$BUILD" --target bench_transformer >/dev/null
fi
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"

PY=${PYTHON:-/usr/bin/python3}
tern_json=""
for compute in fp32 bf16; do
  for t in 1 2; do
    if out=$("$BUILD/bench/bench_transformer" --threads "$t" --compute "$compute"); then
      echo "$out" | grep -v '^TERN_JSON'
      tern_json="$tern_json$(echo "$out" | sed -n 's/^TERN_JSON //p')"$'\n'
    else
      echo "tern $compute: not run here"
    fi
  done
done
torch_json=""
for compute in fp32 bf16; do
  torch_json="$torch_json$("$PY" bench/torch_peer.py --compute "$compute" |
    tee /dev/stderr | sed -n 's/^TORCH_JSON //p')"$'\n'
done

"$PY" - "$tern_json" "$torch_json" <<'PY'
import json, sys
tern = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
torch = {j["compute"]: j for j in (json.loads(l) for l in sys.argv[2].splitlines() if l.strip())}

def best(compute, key):
    xs = [x[key] for x in tern if x["compute"] == compute]
    return max(xs) if xs else None

print()
print("best of 1 and 2 threads     tern fp32  tern bf16  torch fp32  torch bf16")
rows = (("training tokens/s  ", "train_tokens_per_s"), ("generation tokens/s", "gen_tokens_per_s"))
for label, key in rows:
    cells = [best("fp32", key), best("bf16", key), torch["fp32"][key], torch["bf16"][key]]
    print("%s      " % label + "  ".join("%9s" % ("-" if v is None else "%.0f" % v) for v in cells))
print()
for label, key in rows:
    tf, tb = best("fp32", key), best("bf16", key)
    pf, pb = torch["fp32"][key], torch["bf16"][key]
    parts = ["fp32/fp32 %.2fx" % (tf / pf)]
    if tb is not None:
        parts += ["bf16/fp32 %.2fx" % (tb / pf), "bf16/bf16 %.2fx" % (tb / pb),
                  "best/best %.2fx" % (max(tf, tb) / max(pf, pb))]
    print("%s  tern/torch: %s" % (label.strip(), ", ".join(parts)))
print()
# MFU: each tern figure over the model's own 1024^3 GEMM peak at the same
# precision and thread count (bench_transformer.c measures it)
for compute in ("fp32", "bf16"):
    for key, flops, label in (("train_tokens_per_s", "train_gflops", "training"),
                              ("gen_tokens_per_s", "gen_gflops", "generation")):
        xs = [x for x in tern if x["compute"] == compute and x.get(flops) == x.get(flops)]
        if not xs:
            continue
        x = max(xs, key=lambda x: x[key])
        print("tern %s %-10s %6.1f GFLOP/s on %d threads, MFU %3.0f%% of %.1f GFLOP/s" %
              (compute, label, x[flops], x["threads"], 100 * x[flops] / x["gemm_peak_gflops"],
               x["gemm_peak_gflops"]))
PY
