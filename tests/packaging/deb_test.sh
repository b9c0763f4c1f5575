#!/usr/bin/env bash
# deb_test.sh SOURCE_DIR WORK_DIR
# The Debian packages: build them from a /usr-prefix build with Debian's
# hardening flags, check their layout and computed dependencies, run lintian,
# and run the packaged tern from the unpacked packages.
set -uo pipefail
SRC=$(realpath "$1") WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK" && WORK=$(realpath "$WORK")
. "$SRC/tests/packaging/lib.sh"
unset TERN_PLUGIN_PATH

# Debian's build flags (hardening: fortify, stack protector, relro, now)
CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
LDFLAGS="$(dpkg-buildflags --get LDFLAGS)"
check "configure a /usr build" env CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS" \
  cmake -S "$SRC" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX=/usr -DTERN_TESTS=OFF
check "build" cmake --build "$WORK/build"
check "cpack -G DEB" bash -c "cd '$WORK/build' && cpack -G DEB >'$WORK/cpack.txt' 2>&1"
# issue 28: cpack warned 13 times (a plugin has no soname)
check "cpack gives no warning" bash -c "! grep -i -A3 warning '$WORK/cpack.txt'"
RUNTIME=$(ls "$WORK"/build/tern_*.deb 2>/dev/null | head -n1)
DEV=$(ls "$WORK"/build/libtern-dev_*.deb 2>/dev/null | head -n1)
check "two packages: tern and libtern-dev" test -f "$RUNTIME" -a -f "$DEV"

ARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
dpkg-deb -c "$RUNTIME" >"$WORK/runtime.txt" 2>&1
dpkg-deb -c "$DEV" >"$WORK/dev.txt" 2>&1
for f in ./usr/bin/tern "./usr/lib/$ARCH/libtern.so.1" "./usr/lib/$ARCH/tern/abi-1/fifo.so" \
         "./usr/lib/$ARCH/tern/abi-1/synchronous.so" "./usr/lib/$ARCH/tern/abi-1/math.so" \
         "./usr/lib/$ARCH/tern/abi-1/one_step_off.so" "./usr/lib/$ARCH/tern/abi-1/fully_async.so" \
         "./usr/lib/$ARCH/tern/abi-1/multi_explorer.so" "./usr/lib/$ARCH/tern/abi-1/priority.so" \
         "./usr/lib/$ARCH/tern/abi-1/sqlite.so" "./usr/lib/$ARCH/tern/abi-1/k12.so" \
         "./usr/lib/$ARCH/tern/abi-1/vision.so" "./usr/lib/$ARCH/tern/abi-1/format.so" \
         "./usr/lib/$ARCH/tern/abi-1/countdown.so" ./usr/share/tern/etc/examples/countdown.cfg \
         "./usr/lib/$ARCH/tern/abi-1/exec.so" "./usr/lib/$ARCH/tern/abi-1/python.so" \
         ./usr/share/tern/etc/data/countdown-train.jsonl \
         "./usr/lib/$ARCH/tern/abi-1/code.so" "./usr/lib/$ARCH/tern/abi-1/tern-sandbox" \
         "./usr/lib/$ARCH/tern/abi-1/calculator_tool.so" "./usr/lib/$ARCH/tern/abi-1/python_tool.so" \
         ./usr/share/doc/tern/sandbox.md \
         ./usr/share/tern/etc/modes/fully_async.cfg ./usr/share/doc/tern/rewards.md \
         ./usr/share/tern/etc/quickstart.cfg ./usr/share/man/man1/tern.1.gz \
         ./usr/share/man/man7/tern-plugin.7.gz ./usr/share/doc/tern/config.md \
         ./usr/share/doc/tern/copyright; do
  check "tern contains $f" grep -q " $f" "$WORK/runtime.txt"
done
for f in ./usr/include/tern/plugin.h ./usr/include/tern/reward.h "./usr/lib/$ARCH/libtern.so" \
         "./usr/lib/$ARCH/pkgconfig/tern.pc" "./usr/lib/$ARCH/cmake/Tern/TernConfig.cmake" \
         "./usr/lib/$ARCH/cmake/Tern/TernPluginHelpers.cmake" \
         ./usr/share/doc/libtern-dev/examples/reward-plugin/format_length.c \
         ./usr/share/doc/libtern-dev/examples/length-target/length_target.py; do
  check "libtern-dev contains $f" grep -q " $f" "$WORK/dev.txt"
done
check "headers are not in tern" bash -c "! grep -q '/usr/include' '$WORK/runtime.txt'"
check "dependencies are computed (libconfig, jansson, sqlite, utf8proc, png, seccomp, gmp, libc)" bash -c \
  "dpkg-deb -f '$RUNTIME' Depends | tee '$WORK/depends.txt' | grep -q libconfig9 && grep -q libjansson4 '$WORK/depends.txt' && grep -q libsqlite3-0 '$WORK/depends.txt' && grep -q libutf8proc2 '$WORK/depends.txt' && grep -q libpng16-16 '$WORK/depends.txt' && grep -q libseccomp2 '$WORK/depends.txt' && grep -q libgmp10 '$WORK/depends.txt' && grep -q libc6 '$WORK/depends.txt'"
check "the code reward's interpreter and compiler are recommended" bash -c \
  "dpkg-deb -f '$RUNTIME' Recommends | grep -q python3"
check "libtern-dev depends on the same tern" bash -c "dpkg-deb -f '$DEV' Depends | grep -q 'tern (= '"
check "tern's shlibs names libtern 1" bash -c "dpkg-deb -I '$RUNTIME' shlibs | grep -q '^libtern 1 tern (>= '"
check "no ldconfig call in the maintainer scripts (the trigger does it)" bash -c \
  "dpkg-deb -I '$RUNTIME' triggers | grep -q 'activate-noawait ldconfig' && ! dpkg-deb -I '$RUNTIME' postinst | grep -v '^#' | grep -q ldconfig"

# lintian: no errors, no warnings (the two kept on purpose are overridden in
# the packages, with their reasons: docs/packaging.md)
lintian --fail-on error,warning --tag-display-limit 0 "$RUNTIME" "$DEV" >"$WORK/lintian.txt" 2>&1
rc=$?
sed 's/^/    lintian: /' "$WORK/lintian.txt"
if [ $rc -eq 0 ] && ! grep -q '^[EW]: ' "$WORK/lintian.txt"; then
  ok "lintian reports no errors and no warnings"
else
  fail "lintian reports errors or warnings"
fi

# the packaged tern works from the unpacked packages
dpkg-deb -x "$RUNTIME" "$WORK/root" && dpkg-deb -x "$DEV" "$WORK/root"
export LD_LIBRARY_PATH="$WORK/root/usr/lib/$ARCH"
check "packaged tern lists its plugins" bash -c \
  "'$WORK/root/usr/bin/tern' plugins | tee '$WORK/p.txt' | grep -q '^fifo ' && grep -q '^math ' '$WORK/p.txt' && ! grep -q refused: '$WORK/p.txt'"
check "packaged quickstart config checks" "$WORK/root/usr/bin/tern" check \
  "$WORK/root/usr/share/tern/etc/quickstart.cfg"
check "packaged countdown example checks" "$WORK/root/usr/bin/tern" check \
  "$WORK/root/usr/share/tern/etc/examples/countdown.cfg"
check "the packaged python reward scores the example's function" bash -c \
  "cd '$WORK/root/usr/share/doc/libtern-dev/examples/length-target' && echo '{\"target_length\": 3, \"response\": \"abc\"}' | '$WORK/root/usr/bin/tern' reward score --plugin python -o file=length_target.py | grep -q '\"reward\":1.0'"
# issue 28: the installed configs and the help spoke of build/bin/tern and
# docs/config.md, which an installed system does not have
check "the installed configs speak of installed paths" bash -c \
  "! grep -rq 'build/bin/tern\\|[ (]docs/' '$WORK/root/usr/share/tern/etc' && grep -q 'tern check /usr/share/tern/etc/quickstart.cfg' '$WORK/root/usr/share/tern/etc/quickstart.cfg' && grep -q '/usr/share/doc/tern/config.md' '$WORK/root/usr/share/tern/etc/quickstart.cfg'"
check "the packaged help names the installed docs" bash -c \
  "'$WORK/root/usr/bin/tern' --help | grep -q 'Docs: $WORK/root/usr/share/doc/tern/config.md'"
check "the installed man page lists every command" bash -c \
  "zcat '$WORK/root/usr/share/man/man1/tern.1.gz' | grep -q 'tern model init' && zcat '$WORK/root/usr/share/man/man1/tern.1.gz' | grep -q 'tern data shapes'"

# as a user who is not root, in a directory of their own: the check, and a
# run in a directory they cannot write, which says what to do
NONROOT=$(mktemp -d /tmp/tern-deb-XXXXXX)
cp -a "$WORK/root" "$NONROOT/root" && mkdir -p "$NONROOT/ro" && chmod -R a+rX "$NONROOT" && chmod 555 "$NONROOT/ro"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent LD_LIBRARY_PATH="$NONROOT/root/usr/lib/$ARCH" "$@"; }
check "a user who is not root checks the installed quickstart" \
  as_nobody "$NONROOT/root/usr/bin/tern" check "$NONROOT/root/usr/share/tern/etc/quickstart.cfg"
check "a run in a directory they cannot write says to choose run.out_dir" bash -c \
  "cd '$NONROOT/ro' && { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent LD_LIBRARY_PATH='$NONROOT/root/usr/lib/$ARCH' '$NONROOT/root/usr/bin/tern' run '$NONROOT/root/usr/share/tern/etc/quickstart.cfg' 2>'$NONROOT/err.txt'; [ \$? -eq 2 ]; } && grep -q 'o run.out_dir=' '$NONROOT/err.txt'"
rm -rf "$NONROOT"
finish
