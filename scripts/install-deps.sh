#!/usr/bin/env bash
# Installs the Debian 12 packages tern needs to build and test, if missing.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  cmake ninja-build gcc libc6-dev pkg-config   # build
  libconfig-dev libjansson-dev       # libtern: config files, JSON
  libopenblas-dev                    # the transformer model plugin (BLAS)
  libsqlite3-dev                     # the sqlite buffer plugin
  libutf8proc-dev                    # the k12 reward plugin (Unicode NFKC, case folding)
  libpng-dev                         # the vision reward plugin (PNG images)
  libseccomp-dev python3             # the code reward plugin (sandbox filter; Python programs)
  openmpi-bin libopenmpi-dev         # runs across MPI ranks (mpirun), and their tests
  libcriterion-dev                   # tests
  clang libclang-rt-14-dev           # the settings fuzz target (libFuzzer)
  lintian dpkg-dev file make         # packaging tests (.deb, lintian, plain-make example)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "tern: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "tern: run as root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
