#!/bin/bash
# Round 21: does a generic->async proxy fence before each consumer's release of a ring slot remove the
# paired 8 x 6 fault (bf16, 16 tokens)? base = as built, fence = fence.proxy.async.shared::cta added.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run44.sh $OUT/run.sh
S=$OUT/proxy_fence.txt
for b in base fence; do
  for k in 16384 32768; do
    echo "## $b pair 8x6 m16 k $k" >> $S
    timeout 120 .devcarry/trace_$b --kernel mmt --boxes 8 --stages 6 --warps 8 --n 2304 --k $k --m 16 --spread --pair --calls 4 --repeat-check 200 2>&1 | grep -E "repeat check|rror" >> $S
  done
done
for b in base fence; do
  for args in "--stages 4 --m 16 --spread --pair" "--stages 4 --m 16 --bal" "--stages 4 --m 8 --bal" "--fp8 --stages 4 --m 1 --bal"; do
    echo "## $b $args" >> $S
    timeout 60 .devcarry/trace_$b --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph $args 2>&1 | grep -E "us/call" >> $S
  done
done
cat $S
