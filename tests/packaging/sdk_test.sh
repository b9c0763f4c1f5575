#!/usr/bin/env bash
# sdk_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
# The plugin SDK as a user without the source tree meets it: install tern to a
# staging prefix; build examples/reward-plugin (CMake and plain make with
# pkg-config) and a `tern new-plugin` project against that prefix only;
# install the first to a per-user plugin directory and the second with
# `cmake --install` (which lands in the staged tern's own plugin directory);
# `tern plugins`, `tern check` and a short `tern run` use them.
set -uo pipefail
BUILD=$(realpath "$1") SRC=$(realpath "$2") WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && WORK=$(realpath "$WORK")
. "$SRC/tests/packaging/lib.sh"

STAGE=$WORK/stage
export XDG_DATA_HOME=$WORK/xdg
USERDIR=$XDG_DATA_HOME/tern/plugins/abi-1
unset TERN_PLUGIN_PATH
TERN=$STAGE/bin/tern

check "install to a staging prefix" cmake --install "$BUILD" --prefix "$STAGE"
check "staged tern runs from its prefix" "$TERN" version

# examples/reward-plugin, copied out of the tree, built with CMake
cp -r "$SRC/examples/reward-plugin" "$WORK/example"
check "example: configure against the stage only" \
  cmake -S "$WORK/example" -B "$WORK/example/build" -DCMAKE_PREFIX_PATH="$STAGE"
check "example: build" cmake --build "$WORK/example/build"
check "example: its test" ctest --test-dir "$WORK/example/build" --output-on-failure
# (the work directory may itself sit inside the source tree: look for the
# source tree's own folders, not its prefix)
check "example: no path into the source tree" bash -c \
  "! grep -rqE '$SRC/(core|cmake|plugins)/' '$WORK/example/build/CMakeCache.txt' '$WORK/example/build/CMakeFiles'"

# the same example with a plain Makefile and pkg-config, installed per user
check "example: make with pkg-config" \
  env PKG_CONFIG_PATH="$STAGE/lib/pkgconfig" make -C "$WORK/example"
check "example: make install to the user plugin directory" \
  env PKG_CONFIG_PATH="$STAGE/lib/pkgconfig" make -C "$WORK/example" install PLUGINDIR="$USERDIR"
check "pkg-config: plugindir is the staged plugin directory" \
  bash -c "[ \"\$(realpath \$(PKG_CONFIG_PATH='$STAGE/lib/pkgconfig' pkg-config --variable=plugindir tern))\" = '$STAGE/lib/tern/abi-1' ]"
# issue 28: --cflags gave an unreduced -I.../pkgconfig/../../../include and
# --libs nothing, although libtern.so ships for programs that embed it
check "pkg-config: --cflags and --libs are plain paths of the stage" bash -c \
  "[ \"\$(PKG_CONFIG_PATH='$STAGE/lib/pkgconfig' pkg-config --cflags --libs tern)\" = '-I$STAGE/include -L$STAGE/lib -ltern ' ]"
cat > "$WORK/embed.c" <<'C'
#include <stdio.h>
#include <tern/libtern.h>
int main(void) { printf("%s\n", tern_version_string()); return 0; }
C
check "pkg-config: a program embedding libtern builds and runs with its flags" bash -c \
  "cc -o '$WORK/embed' '$WORK/embed.c' \$(PKG_CONFIG_PATH='$STAGE/lib/pkgconfig' pkg-config --cflags --libs tern) && LD_LIBRARY_PATH='$STAGE/lib' '$WORK/embed' | grep -q '^[0-9]'"

# a generated project
check "new-plugin: generate a reward project" "$TERN" new-plugin reward np_reward "$WORK/np"
check "new-plugin: configure against the stage only" \
  cmake -S "$WORK/np" -B "$WORK/np/build" -DCMAKE_PREFIX_PATH="$STAGE"
check "new-plugin: build" cmake --build "$WORK/np/build"
check "new-plugin: its test" ctest --test-dir "$WORK/np/build" --output-on-failure
# an environment and a tool project too: the newest kinds build against the stage alone
check "new-plugin: generate an environment project" "$TERN" new-plugin environment np_env "$WORK/np_env"
check "new-plugin: the environment project configures, builds and passes its test" bash -c \
  "cmake -S '$WORK/np_env' -B '$WORK/np_env/build' -DCMAKE_PREFIX_PATH='$STAGE' >/dev/null && cmake --build '$WORK/np_env/build' >/dev/null && ctest --test-dir '$WORK/np_env/build' --output-on-failure"
check "new-plugin: generate a tool project" "$TERN" new-plugin tool np_tool "$WORK/np_tool"
check "new-plugin: the tool project configures, builds and passes its test" bash -c \
  "cmake -S '$WORK/np_tool' -B '$WORK/np_tool/build' -DCMAKE_PREFIX_PATH='$STAGE' >/dev/null && cmake --build '$WORK/np_tool/build' >/dev/null && ctest --test-dir '$WORK/np_tool/build' --output-on-failure"
# issue 28: it used to go to <CMAKE_INSTALL_PREFIX>/lib/tern/abi-1 (by
# default /usr/local/...), where the tern it was built for does not look
check "new-plugin: cmake --install puts it in the staged tern's plugin directory" bash -c \
  "cmake --install '$WORK/np/build' && [ -f '$STAGE/lib/tern/abi-1/np_reward.so' ]"

# tern finds and uses them
check "tern plugins lists the user's and the installed plugin" bash -c \
  "'$TERN' plugins | tee '$WORK/plugins.txt' | grep -q '^format_length .*$USERDIR' && grep -q '^np_reward .*$STAGE/lib/tern/abi-1' '$WORK/plugins.txt' && ! grep -q refused: '$WORK/plugins.txt'"
check "tern data arith writes tasks" "$TERN" data arith --max 9 --train 40 --eval 8 "$WORK/data"
cat > "$WORK/run.cfg" <<CFG
run = { name = "sdk"; out_dir = "$WORK/runs"; };
model = { plugin = "transformer"; init = { preset = "tiny"; }; };
data = { train = "data/arith-train.jsonl"; eval = "data/arith-eval.jsonl"; };
explorer = { batch_tasks = 2; group_size = 2; max_tokens = 4; };
trainer = { steps = 2; sft = { steps = 1; batch_tasks = 2; }; };
buffer = { plugin = "fifo"; };
sync = { plugin = "synchronous"; };
rewards = (
  { domain = "math"; plugin = "format_length"; max_tokens = 128; },
  { domain = "math"; plugin = "np_reward"; }
);
CFG
check "tern check uses them" bash -c "'$TERN' check '$WORK/run.cfg' | grep -q '^ok: '"
check "tern run uses them" bash -c "'$TERN' run '$WORK/run.cfg' && [ -f '$WORK/runs/sdk/summary.json' ]"
check "the run's resolved config has the plugin's defaults" grep -q "penalty = 0.5" "$WORK/runs/sdk/config.cfg"
finish
