#!/bin/bash
# Round 28, first look: the cluster-split TMA grid (skinny_mmt_*_ksc<CS>_*: small blocks, several per SM, each
# tile's K over a (1, CS, 1) cluster reduced in distributed shared memory). 1. GPU skinny suite on every ksc name
# (TUNABLE_SKINNY_ONLY=_ksc: mmap's cluster variants too). 2. Timeline tool (graphs, 48 calls, > 400 MB rotated):
# fp8 llama3_405b_tp8 qkv (2304 x 16384) at M = 1 / 8 / 16 and bf16 llama3_8b o (4096 x 4096) at M = 16, the
# current picks against every cluster shape.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work116; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/device.txt
cp .devcarry/run116.sh $OUT/run.sh
s0=$(date +%s)
TUNABLE_SKINNY_ONLY=_ksc timeout 200 build/tests/tunable_gpu_skinny_tests --gtest_brief=1 > $OUT/skinny_ksc_tests.log 2>&1
echo "skinny ksc tests exit $? ($(( $(date +%s) - s0 )) s)"; tail -3 $OUT/skinny_ksc_tests.log
S=$OUT/trace.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|rror|fail|disagree|check against|per-SM" >> $S; echo "exit ${PIPESTATUS[0]}" >> $S; }
s0=$(date +%s)
for m in 1 8 16; do
  P="--n 2304 --k 16384 --m $m --fp8 --graph --kernel mmt"
  run $P --bal --warps 8 --boxes 8 --stages 4
  run $P --bal --warps 8 --boxes 8 --stages 6
  for c in 4 8; do for w in 4 8; do for sh in "8 2" "8 3" "16 2"; do set -- $sh
    run $P --cluster $c --warps $w --boxes $1 --stages $2
  done; done; done
done
P="--n 4096 --k 4096 --m 16 --graph --kernel mmt"
run $P --spread --warps 8 --boxes 8 --stages 2
for c in 4 8; do for w in 4 8; do for sh in "8 2" "8 3" "16 2"; do set -- $sh
  run $P --cluster $c --warps $w --boxes $1 --stages $2
done; done; done
echo "trace $(( $(date +%s) - s0 )) s"
grep -E "^##|us/call|rror|fail|disagree" $S | sed -E 's/ *\(48 calls.*//; s/--n ([0-9]+) --k ([0-9]+) --m ([0-9]+)/\1x\2 m\3/; s/--graph --kernel mmt//' | paste - - | awk -F'\t' '{split($2,a,":"); printf "%s |%s\n", $1, a[length(a)]}' | cut -c1-150
