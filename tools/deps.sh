#!/usr/bin/env bash
# Installs the Debian packages the build needs, only those that are missing.
set -euo pipefail
pkgs=(cmake g++ make pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev libopenblas-dev
      libicu-dev libsentencepiece-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tools/deps.sh: installing ${missing[*]}"
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "tools/deps.sh: installing packages needs root: run this as root, or install sudo" >&2
      exit 1
    fi
    sudo_cmd="sudo"
  fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "tools/deps.sh: nvcc is at /usr/local/cuda/bin; add it to PATH" >&2
  else
    # Debian's nvidia-cuda-toolkit (11.8 on bookworm) cannot build sm_90a: the toolkit comes from
    # NVIDIA's repository, which this script does not add to the system on its own.
    cat >&2 <<'MSG'
tools/deps.sh: the CUDA toolkit (nvcc, cuBLAS, cuBLASLt; 12.4 or newer for sm_90a) is required and
was not found. On Debian 12, from NVIDIA's repository:
  wget https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb
  dpkg -i cuda-keyring_1.1-1_all.deb && apt-get update && apt-get install -y cuda-toolkit
then put /usr/local/cuda/bin on PATH.
MSG
  fi
  exit 1
fi
# The tokenizer tests compare with the `tokenizers` and `sentencepiece` Python packages (PyPI).
if command -v python3 >/dev/null 2>&1 && ! python3 -c "import tokenizers, sentencepiece" >/dev/null 2>&1; then
  echo "tools/deps.sh: installing the Python packages tokenizers and sentencepiece"
  python3 -m pip install -q tokenizers sentencepiece
fi
