#!/usr/bin/env bash
# run_vlm.sh [BUILD_DIR]: tern's vision-language model beside PyTorch +
# Hugging Face transformers on this machine: the same LLaVA (the vlm-bench
# preset: the bench Llama decoder, a 64 x 64 CLIP tower of width 256 and 4
# layers, the two-layer projector; 13.1M parameters), the same work, float32
# only: training 16 x 256 rows (an image's 64 rows, then text) forward +
# backward + AdamW with the tower trained, and generation of 128 new tokens
# for 64 prompts of BOS + 64 image rows + 15 text tokens, the image encoding
# timed with it. tern is `bench_transformer --vlm` at 1 and 2 threads;
# PyTorch is bench/torch_vlm_peer.py (LlavaForConditionalGeneration,
# attn_implementation sdpa, model.generate) at 1 and 2 threads. Prints each
# side's lines, then a table of tokens/s per thread count and the ratios
# tern / torch. Needs Python with torch and transformers 5.x (PYTHON names
# the interpreter, default /opt/refenv/bin/python); figures only, no
# pass/fail. BUILD_DIR defaults to build (built if bench_transformer is
# missing: configured Release if it has no CMakeCache.txt yet).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=${PYTHON:-/opt/refenv/bin/python}
if [ ! -x "$BUILD/bench/bench_transformer" ]; then
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTERN_TESTS=OFF >/dev/null
  fi
  cmake --build "$BUILD" --target bench_transformer >/dev/null
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); tern build $BUILD (${build_type:-?})"
start=$SECONDS

tern_json=""
for t in 1 2; do
  out=$("$BUILD/bench/bench_transformer" --vlm --threads "$t" --compute fp32)
  echo "$out" | grep -v '^TERN_JSON'
  tern_json="$tern_json$(echo "$out" | sed -n 's/^TERN_JSON //p')"$'\n'
done
out=$("$PY" bench/torch_vlm_peer.py)
echo "$out" | grep -v '^TORCH_JSON'
torch_json=$(echo "$out" | sed -n 's/^TORCH_JSON //p')

"$PY" - "$tern_json" "$torch_json" "$((SECONDS - start))" <<'PY'
import json, sys
tern = {str(j["threads"]): j for j in (json.loads(l) for l in sys.argv[1].splitlines() if l.strip())}
torch = json.loads(sys.argv[2])
per = torch["per_threads"]
rows = (("training tokens/s  ", "train_tokens_per_s"), ("generation tokens/s", "gen_tokens_per_s"))

print()
print("vlm-bench, float32 (transformers %s, torch %s, attn %s, generate: %s)"
      % (torch["transformers_version"], torch["torch_version"], torch["attn_implementation"],
         "model.generate" if torch["gen_impl"] == "hf" else "hand-written loop"))
fmt = "%-21s %10s %10s %10s %10s"
print(fmt % ("", "tern T=1", "tern T=2", "torch T=1", "torch T=2"))
for label, key in rows:
    print(fmt % ((label.strip(),) + tuple("%.0f" % x for x in (
        tern["1"][key], tern["2"][key], per["1"][key], per["2"][key]))))
print(fmt % ("peak RSS MiB", "%.0f" % (tern["1"]["peak_rss_kib"] / 1024),
             "%.0f" % (tern["2"]["peak_rss_kib"] / 1024), "%.0f" % (torch["peak_rss_kib"] / 1024),
             "(both T)"))
print()
for label, key in rows:
    print("%-19s tern/torch: T=1 %.2fx, T=2 %.2fx, best/best %.2fx"
          % (label.strip(), tern["1"][key] / per["1"][key], tern["2"][key] / per["2"][key],
             max(tern["1"][key], tern["2"][key]) / max(per["1"][key], per["2"][key])))
for T in ("1", "2"):
    p = per[T]
    print("torch T=%s: training %.2f s/step, %.1f images/s; generation: prefill (the %d "
          "images and prompts) %.2f s, decode %.1f ms/step"
          % (T, p["train_seconds"] / len(p["train_step_seconds"]), p["train_images_per_s"],
             torch["sizes"]["gen_b"], p["gen_prefill_seconds"],
             1e3 * p["gen_decode_seconds"] / max(1, torch["sizes"]["gen_new"] - 1)))
print("wall: %s s" % sys.argv[3])
PY
