#!/usr/bin/env bash
# sdk_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
# The plugin SDK as a user without the source tree meets it: install tern to a
# staging prefix; build examples/reward-plugin (CMake and plain make with
# pkg-config) and a `tern new-plugin` project against that prefix only; put
# the plugins in a per-user plugin directory; `tern plugins`, `tern check` and
# a short `tern run` use them.
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

# a generated project
check "new-plugin: generate a reward project" "$TERN" new-plugin reward np_reward "$WORK/np"
check "new-plugin: configure against the stage only" \
  cmake -S "$WORK/np" -B "$WORK/np/build" -DCMAKE_PREFIX_PATH="$STAGE"
check "new-plugin: build" cmake --build "$WORK/np/build"
check "new-plugin: its test" ctest --test-dir "$WORK/np/build" --output-on-failure
check "new-plugin: copy to the user plugin directory" cp "$WORK/np/build/np_reward.so" "$USERDIR/"

# tern finds and uses them
check "tern plugins lists both user plugins" bash -c \
  "'$TERN' plugins | tee '$WORK/plugins.txt' | grep -q '^format_length .*$USERDIR' && grep -q '^np_reward ' '$WORK/plugins.txt' && ! grep -q refused: '$WORK/plugins.txt'"
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
