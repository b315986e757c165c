#!/bin/bash
# Round 24, third call: _v4 (box-cut slices; the producer's whole stages as before, a slice's short last
# stage by a rolled loop) against _old (HEAD) and _v3 (box-cut, whole stages loaded, consumers masking).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/device.txt
cp .devcarry/run81.sh $OUT/run.sh
S=$OUT/trace_ab3.txt
run() { b=$1; shift; echo "## $b $*" >> $S; timeout 60 build/bench/$b "$@" >> $S 2>&1; }
for rep in 1 2; do
  for a in "--fp8 --stages 4 --m 1" "--fp8 --stages 4 --m 8" "--fp8 --stages 4 --m 16" "--stages 6 --m 8"; do
    for b in tunable_skinny_trace_old tunable_skinny_trace_v3 tunable_skinny_trace_v4; do
      run $b --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph --bal $a
    done
  done
done
for a in "--fp8 --stages 4 --m 16 --n 2304 --k 16384" "--stages 6 --m 8 --n 2304 --k 16384" "--fp8 --stages 3 --m 9 --n 2300 --k 8192"; do
  run tunable_skinny_trace_v4 --kernel mmt --boxes 8 --warps 8 --graph --bal $a --repeat-check 20
done
grep -E "^##|us/call|repeat check" $S | sed -E 's/--kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph --bal//; s/mmt (bal|pair)?.*graph:/:/' | cut -c1-200
