#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the whole test suite: install
# what is missing, then build and run every test twice, plainly and under
# AddressSanitizer + UndefinedBehaviorSanitizer (and on a CPU with AVX-512
# plainly once more, as an AVX2-only CPU runs them), then `tern run` under
# ThreadSanitizer (scripts/tsan.sh), then a short fuzzing run of
# the settings layer, the safetensors reader, the experience decoder and the
# reward plugins' parsers (math, k12, vision, format, countdown, exec, code), the code
# reward's sandbox messages, the calculator tool's expressions and the request
# bodies of `tern serve`.
# Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== include cycles between the modules and folders of core/src and cli (docs/architecture.md §1)"
python3 scripts/include_graph.py > /dev/null

echo "== no file names a package registry's host (packages come through pip and apt-get)"
if git grep -nIE 'pypi\.org|pythonhosted\.org|(deb|security)\.debian\.org' -- ':!scripts/test.sh'; then
  echo "scripts/test.sh: the files above name a registry's host: name the package instead" >&2
  exit 1
fi

echo "== build and test (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
# each pass's log, as "what=file", for the list of skips at the end
logs="build=build/Testing/Temporary/LastTest.log"

# Machines of this kind differ: some CPUs have AVX-512 and BF16, some only
# AVX2. On one with AVX-512 the same tests run again as an AVX2-only CPU runs
# them: tern's vector paths capped at AVX2 (TERN_SIMD, docs/models.md) and
# OpenBLAS's Haswell kernels (unless OPENBLAS_CORETYPE is set already, for a
# reason of this machine's). Tests that compute nothing the vector paths or
# OpenBLAS touch stay out: packaging, the buffer plugins, the reward plugins
# and their sandbox, the kill tests of exactly-once.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  echo "== the same tests as an AVX2-only CPU runs them (TERN_SIMD=avx2, OpenBLAS ${OPENBLAS_CORETYPE:-Haswell})"
  cp build/Testing/Temporary/LastTest.log build/Testing/Temporary/LastTest-native.log
  logs="build=build/Testing/Temporary/LastTest-native.log build(avx2)=build/Testing/Temporary/LastTest.log"
  TERN_SIMD=avx2 OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} \
    ctest --test-dir build --output-on-failure -j "$jobs" \
    -E '^(packaging_.*|test_(sqlite|fifo|priority|run_kills|code_text|reward_score|python_tool)|test_[a-z0-9]+_reward)$'
fi

echo "== build and test under ASan + UBSan"
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTERN_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j "$jobs"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
# intercept_tls_get_addr=0: GCC 12's runtime misreads a dynamic TLS block that
# happens to start 16 bytes into a page as a pre-2.25 glibc header, and
# LeakSanitizer's tracer then dies at exit ("Tracer caught signal 11") in a
# process that leaked nothing. Open MPI's dlopen'd components made it hit
# test_ranks on one CI run in several. Fixed upstream in GCC 14 / LLVM 17.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure -j "$jobs"

echo "== tern run under ThreadSanitizer: the quickstart and every etc/modes/ config"
scripts/tsan.sh

# 8 s a target keeps the whole suite under 30 minutes on 2 cores (TERN_FUZZ_SECONDS for longer)
secs=${TERN_FUZZ_SECONDS:-8}
targets="settings safetensors gguf experience math k12 vision format countdown exec code sandbox_wire tokenizer wire jinja tool_calls calculator serve_request"
echo "== fuzz the settings layer, the safetensors and GGUF readers, the experience decoder, the role messages' wire format, the reward parsers, the tokenizers, the Jinja interpreter, the tool-call reader, the calculator tool's evaluator and the requests of tern serve (libFuzzer, ${secs} s each)"
CC=clang cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTERN_FUZZ=ON \
  -DTERN_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target $(printf 'fuzz_%s ' $targets)
for target in $targets; do
  corpus=tests/fuzz/corpus; [ $target != settings ] && corpus=tests/fuzz/corpus_$target
  mkdir -p build-fuzz/corpus_$target
  # a GGUF file with a byte vocabulary, or a whole layer, is a few KB
  max_len=4096; [ $target = gguf ] && max_len=8192
  build-fuzz/tests/fuzz/fuzz_$target -artifact_prefix=build-fuzz/ -max_total_time="$secs" \
    -max_len=$max_len -timeout=10 -print_final_stats=1 build-fuzz/corpus_$target $corpus 2>&1 |
    tail -n 12
done

# every skip with its reason (tests/support/skip_exit.c prints them); on a
# fresh machine of this kind: the GPU test without a GPU, the bf16 test on a
# CPU without AVX512-BF16, and the full-tokenizer reference check (its
# tokenizer files come from npm, README "Tests")
echo "== skipped tests"
for entry in $logs build-sanitize=build-sanitize/Testing/Temporary/LastTest.log; do
  grep -h '^tern-test: skipped' "${entry#*=}" 2>/dev/null |
    sed "s|^tern-test: skipped|  ${entry%%=*}:|" || true
done
echo "== all tests passed"
