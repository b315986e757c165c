#!/bin/bash
# Round 24, second call: why the box-cut build was ~30 % slower. Trace binaries: _old (HEAD's headers),
# tunable_skinny_trace (CMake build of the box-cut tree), _v1 (the same tree compiled like _old),
# _v2 (box-cut code with stage-aligned slices), _v3 (box-cut slices, producer loading whole stages).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work80; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/device.txt
cp .devcarry/run80.sh $OUT/run.sh
S=$OUT/trace_ab2.txt
run() { b=$1; shift; echo "## $b $*" >> $S; timeout 60 build/bench/$b "$@" >> $S 2>&1; }
for rep in 1 2; do
  for a in "--fp8 --stages 4 --m 8 --bal" "--stages 6 --m 8 --bal" "--fp8 --stages 4 --m 8 --pair --spread"; do
    for b in tunable_skinny_trace_old tunable_skinny_trace tunable_skinny_trace_v1 tunable_skinny_trace_v2 tunable_skinny_trace_v3; do
      run $b --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph $a
    done
  done
done
grep -E "^##|us/call" $S | paste - - | sed -E 's/--kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph//; s/mmt (bal|pair)?.*graph:/:/' | cut -c1-160
