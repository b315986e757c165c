#!/usr/bin/env bash
# Installs the Debian packages the build needs, only those that are missing.
set -euo pipefail
pkgs=(cmake g++ make libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev libopenblas-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tools/deps.sh: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "tools/deps.sh: nvcc is at /usr/local/cuda/bin; add it to PATH" >&2
  else
    echo "tools/deps.sh: the CUDA toolkit (nvcc, cuBLAS) is required and was not found" >&2
  fi
  exit 1
fi
