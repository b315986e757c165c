#!/bin/bash
# Round 23: the next call's launch triggered late (SkinnyParams::trigger_stages, trace --trigger-stages: warp 0
# triggers once that many stages are left to read) with a spare block slot per SM (--per-sm) and larger pre-wait
# L2 hints (--prefetch-kb): timeline tool, graphs (and a few streams).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work54; mkdir -p $W
OUT=$W bash tools/device_check.sh info > /dev/null 2>&1; cp $W/device.txt $OUT/device.txt
cp .devcarry/run54.sh $OUT/run.sh
S=$OUT/trace.txt; T=$OUT/table.txt
run() { echo "## $*" >> $S; local t0=$(date +%s.%N); r=$(timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | tee -a $S | grep -E "us/call|resident before|SMs used" | sed -E 's/.*: ([0-9.]+) us\/call.*/\1/; s/.*blocks resident before predecessor ended ([0-9]+).*/early \1/; s/.*SMs used ([0-9]+), with two or more blocks ([0-9]+).*/SMs \1 packed \2/' | tr '\n' ' '); echo "$r | $*" >> $T; }
F="--fp8 --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal"
B="--kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal"
date > $OUT/time.txt
T0=$(date +%s)
for pass in 1 2; do
  [ $pass = 2 ] && [ $(( $(date +%s) - T0 )) -gt 220 ] && break
  for ms in "1 4" "8 4" "16 3"; do
    set -- $ms; m=$1; st=$2
    run $F --stages $st --m $m --graph
    run $F --stages $st --m $m --graph --per-sm 2
    for tr in 1 2 4 8; do for pf in 0 64 128; do
      run $F --stages $st --m $m --graph --per-sm 2 --trigger-stages $tr --prefetch-kb $pf
    done; done
    [ $pass = 1 ] && for tr in 2 4; do run $F --stages $st --m $m --graph --trigger-stages $tr; done
  done
  for m in 8 16; do
    run $B --stages 3 --m $m --graph
    for tr in 1 2 4; do for pf in 0 128; do run $B --stages 3 --m $m --graph --per-sm 2 --trigger-stages $tr --prefetch-kb $pf; done; done
  done
  U="--kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --spread"
  for m in 8 16; do
    run $U --m $m --graph
    for tr in 1 2 4; do for pf in 0 64; do run $U --m $m --graph --per-sm 3 --trigger-stages $tr --prefetch-kb $pf; done; done
  done
  G="--kernel mmt --boxes 16 --stages 2 --warps 8 --n 2048 --k 16384 --spread"
  for m in 8 16; do
    run $G --m $m --graph
    for tr in 1 2; do for pf in 0 64; do run $G --m $m --graph --per-sm 2 --trigger-stages $tr --prefetch-kb $pf; done; done
  done
  date >> $OUT/time.txt
done
# as a stream (the tuner's back-to-back is close to this)
for m in 1 8; do
  run $F --stages 4 --m $m
  for tr in 1 2 4; do run $F --stages 4 --m $m --per-sm 2 --trigger-stages $tr --prefetch-kb 64; done
done
date >> $OUT/time.txt
# same bits with the late trigger
build/bench/tunable_skinny_trace $F --stages 4 --m 8 --graph --per-sm 2 --trigger-stages 2 --prefetch-kb 64 --repeat-check 100 > $OUT/repeat.txt 2>&1; echo "exit $?" >> $OUT/repeat.txt
cat $T
grep -iE "rror|skinny_trace:" $S | head -5
xz -9 $S
