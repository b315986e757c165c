#!/bin/bash
# Round 28, second look: is it the cluster or the small blocks? The same one-tile mmt blocks split 4 / 8 ways with
# partials and the reduction kernel (--splits), beside the cluster split, fp8 2304 x 16384 at M = 1 and 16.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/device.txt
cp .devcarry/run117.sh $OUT/run.sh
S=$OUT/trace.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|rror|fail|disagree|check against|per-SM|medians" >> $S; echo "exit ${PIPESTATUS[0]}" >> $S; }
for m in 1 16; do
  P="--n 2304 --k 16384 --m $m --fp8 --graph --kernel mmt --boxes 8 --stages 2"
  for w in 4 8; do
    run $P --warps $w --splits 4
    run $P --warps $w --splits 8
    run $P --warps $w --splits 8 --spread
    run $P --warps $w --cluster 4
    run $P --warps $w --cluster 8
  done
done
grep -E "^##|us/call|rror|fail|disagree" $S | sed -E 's/ *\(48 calls.*//; s/--n ([0-9]+) --k ([0-9]+) --m ([0-9]+)/\1x\2 m\3/; s/--graph --kernel mmt//' | paste - - | awk -F'\t' '{split($2,a,":"); printf "%s |%s\n", $1, a[length(a)]}' | cut -c1-150
grep -E "medians over steady" $S | sed -E 's/.*period/period/' | cut -c1-230
