#!/usr/bin/env bash
# Installs the Debian 12 packages this project uses, and only those that are missing.
# Idempotent: a second run installs nothing. Must run as root (or via sudo) on Debian 12.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake pkg-config git clang libclang-rt-14-dev xz-utils
  # simulation and RTL
  libsystemc-dev verilator yosys opensta qflow-tech-osu018
  # libraries
  libboost-program-options-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev zlib1g-dev
  libopenmpi-dev openmpi-bin libtrilinos-zoltan-dev libmetis-dev libgraphblas-dev
  # data, plots, python helpers
  dataset-fashion-mnist gnuplot-nox python3 python3-numpy python3-scipy python3-markdown
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2; exit 2
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
