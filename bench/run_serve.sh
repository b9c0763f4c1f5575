#!/usr/bin/env bash
# run_serve.sh [CLIENTS] [BUILD_DIR]: `tern serve` beside the server a user
# would otherwise run, llama-cpp-python's OpenAI-compatible one (PyPI), one
# after the other in one run: the same GGUF (SmolLM2-135M-Instruct Q4_1), the
# same threads, and the same load (bench/serve_load.py: CLIENTS clients at
# once, default 32, each sending REQUESTS chat requests of MAX_TOKENS tokens
# at temperature 1). Prints each server's requests/s, generated tokens/s,
# p50 and p99 latency and peak RSS, then tern / llama-cpp-python.
# llama-cpp-python (with its server's extras) is installed into a cached venv
# (~/.cache/tern/venv-llama-cpp; it compiles llama.cpp, minutes) unless
# LLAMA_PYTHON names an interpreter that has it.
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${1:-32}
BUILD=${2:-build}
REQUESTS=${REQUESTS:-4}
MAX_TOKENS=${MAX_TOKENS:-64}
THREADS=${THREADS:-$(nproc)}
PROMPTS=etc/data/smollm2/arith-eval.jsonl
[ -x "$BUILD/bin/tern" ] || { echo "run_serve.sh: build tern first ($BUILD/bin/tern)" >&2; exit 1; }
gguf=$(python3 scripts/fetch-smollm2.py --dir models)
LPY=${LLAMA_PYTHON:-$HOME/.cache/tern/venv-llama-cpp/bin/python}
if ! "$LPY" -c 'import llama_cpp.server' 2>/dev/null; then
  python3 -m venv "$HOME/.cache/tern/venv-llama-cpp"
  "$HOME/.cache/tern/venv-llama-cpp/bin/pip" install -q --disable-pip-version-check \
    'llama-cpp-python[server]==0.3.36'
  LPY=$HOME/.cache/tern/venv-llama-cpp/bin/python
fi
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $CLIENTS clients x" \
     "$REQUESTS requests of $MAX_TOKENS tokens; $THREADS threads; $("$LPY" -c \
     'import llama_cpp; print("llama-cpp-python", llama_cpp.__version__)')"

# The peak RSS of pid $1 (VmHWM), in MiB.
peak() { awk '/^VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

# Wait until $1/health (or /v1/models) answers.
wait_up() {
  for _ in $(seq 1 600); do
    curl -sf "$1/health" >/dev/null 2>&1 || curl -sf "$1/v1/models" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "run_serve.sh: $1 did not come up" >&2; return 1
}

# bench NAME PORT CMD...: start the server, load it, print its figures.
bench() {
  local name=$1 port=$2; shift 2
  "$@" > "/tmp/run_serve.$name.log" 2>&1 &
  local pid=$!
  wait_up "http://127.0.0.1:$port"
  local out
  out=$(python3 bench/serve_load.py "http://127.0.0.1:$port/v1" --clients "$CLIENTS" \
        --requests "$REQUESTS" --max-tokens "$MAX_TOKENS" --prompts "$PROMPTS")
  local rss
  rss=$(peak "$pid")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$name: $out" | sed "s/}\$/, \"peak_rss_mib\": $rss}/"
}

bench tern 8711 "$BUILD/bin/tern" serve "$gguf" --port 8711 --threads "$THREADS" --name model \
  --batch "$CLIENTS" --max-tokens "$MAX_TOKENS" | tee /tmp/run_serve.tern.json
bench llama-cpp-python 8712 "$LPY" -m llama_cpp.server --model "$gguf" --port 8712 \
  --n_threads "$THREADS" --n_ctx 2048 --model_alias model | tee /tmp/run_serve.llama.json
python3 - <<'PY'
import json
t = json.loads(open("/tmp/run_serve.tern.json").read().split(": ", 1)[1])
l = json.loads(open("/tmp/run_serve.llama.json").read().split(": ", 1)[1])
print("tern / llama-cpp-python: generated tokens/s %.2fx, requests/s %.2fx, p50 %.2fx, p99 %.2fx,"
      " peak RSS %.2fx" % (t["tokens_per_s"] / l["tokens_per_s"],
                          t["requests_per_s"] / l["requests_per_s"], t["p50_s"] / l["p50_s"],
                          t["p99_s"] / l["p99_s"], t["peak_rss_mib"] / l["peak_rss_mib"]))
PY
