#!/bin/bash
# Round 21: the paired 8 x 6 kernel at 16 tokens (bf16) changes bits between launches; fp8 at the
# same shared-memory size does not. Sanitizers on it, and the neighbours that pass.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run42.sh $OUT/run.sh
S=$OUT/sanitize_pair6.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
echo "sanitizer: $CS" >> $S
T="build/bench/tunable_skinny_trace --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --calls 2"
for tool in memcheck racecheck synccheck; do
  for args in "--stages 6 --m 16 --spread --pair" "--stages 6 --m 16 --pair" "--stages 4 --m 16 --spread --pair" "--fp8 --stages 6 --m 16 --spread --pair"; do
    echo "## $tool $args" >> $S
    timeout 150 $CS --tool $tool $T $args --repeat-check 3 2>&1 | grep -vE "^\s*$" | grep -E "ERROR SUMMARY|Invalid|hazard|Race|repeat check|check against|rror|at 0x|by thread|Address" | head -12 >> $S
  done
done
cat $S
