#!/usr/bin/env bash
# Per-kernel SASS instruction counts from a library (run where cuobjdump exists, e.g. the GPU
# machine): which conversions, loads and MMAs each kernel's code holds.
#   lab/device/sass_stats.sh LIB [REGEX]   (REGEX selects kernels by mangled name; default: all)
set -euo pipefail
lib="$1"; re="${2:-.}"
cuobjdump -sass "$lib" | awk -v re="$re" '
  /Function : / { fn = $3; keep = (fn ~ re); if (keep) order[++nf] = fn; next }
  keep && /\/\*[0-9a-f]+\*\// {
    line = $0; sub(/.*\*\/ +/, "", line); sub(/^@!?U?P[0-9T] +/, "", line)
    split(line, w, /[ ;]/); op = w[1]; sub(/\..*/, "", op)
    n[fn, op]++; tot[fn]++ }
  END {
    split("LDG LDS STS HMMA F2FP PRMT LOP3 SHF FFMA HADD2 I2F F2F BAR SHFL", ops, " ")
    printf "%-6s", "total"; for (i = 1; i <= 14; i++) printf " %6s", ops[i]; printf "  kernel\n"
    for (k = 1; k <= nf; k++) { fn = order[k]; printf "%-6d", tot[fn]
      for (i = 1; i <= 14; i++) printf " %6d", n[fn, ops[i]]; printf "  %s\n", fn } }'
