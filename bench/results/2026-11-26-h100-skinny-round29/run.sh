#!/bin/bash
# 1. After the duplicates mend in bench/dram_stream.cu (the project's pdl_launch_dependents / pdl_wait and
#    launch_kernel_ex instead of the tool's own copies): the loads-only PDL sweep and the MMA probe on the H100,
#    to compare with round 25 / round 26 (shared-mma/).
# 2. Round 29 question: does a grid of two 128 KB blocks per SM cost less per call beyond its bytes than one
#    256 KB block per SM? fp8 weights of the same 34.6 MB: 4224 x 8192 (264 tiles: two per SM) and 2112 x 16384
#    (132 tiles: one per SM), unpaired mmt with the occupancy cap, the balanced grid beside them, and the
#    2304 x 16384 balanced grid as the reference; timeline tool, graphs.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/device.txt
cp .devcarry/run118.sh $OUT/run.sh
s0=$(date +%s)
timeout 120 build/bench/tunable_dram_stream --shapes 2304x16384,4096x8192 --reps 15 --pdl > $OUT/pdl.txt 2>&1
echo "pdl exit $? ($(( $(date +%s) - s0 )) s)"; grep -E "flat read|rows/block  8 ksplit 8 rotate 0" $OUT/pdl.txt
s0=$(date +%s)
timeout 120 build/bench/tunable_dram_stream --shapes 2304x16384,4096x8192 --reps 15 --mma-tokens 1,8,16 > $OUT/mma.txt 2>&1
echo "mma exit $? ($(( $(date +%s) - s0 )) s), y ok $(grep -c 'y ok' $OUT/mma.txt), y WRONG $(grep -c WRONG $OUT/mma.txt)"
S=$OUT/trace.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|rror|fail|disagree|check against|per-SM|medians" >> $S; echo "exit ${PIPESTATUS[0]}" >> $S; }
for m in 1 16; do
  for nk in "4224 8192" "2112 16384" "2304 16384"; do set -- $nk
    P="--n $1 --k $2 --m $m --fp8 --graph --kernel mmt --warps 8"
    if [ $1 != 2304 ]; then
      run $P --spread --boxes 8 --stages 2
      run $P --spread --boxes 8 --stages 3
    fi
    run $P --bal --boxes 8 --stages 4
  done
done
python3 - "$S" <<'PY'
import re,sys
a=us=fl=None
for line in open(sys.argv[1]):
    if line.startswith("## "): a=line[3:].strip().replace("--graph --kernel mmt ","")
    m=re.search(r": ([0-9.]+) us/call",line)
    if m: us=float(m.group(1))
    m=re.search(r"release after predecessor (\d+) \| wait spread (\d+) \| release->median exit (\d+) \| median->last exit \(tail\) (\d+).*floor at ([0-9.]+) TB/s (\d+)",line)
    if m:
        rel,spr,med,tail,bw,fl=m.groups(); fl=int(fl)/1000
        print(f"{a:<70} {us:6.2f} us  floor {fl:5.2f}  {fl/us:.3f}  over {us-fl:4.2f} | release {int(rel)/1000:.2f} spread {int(spr)/1000:.2f} med {int(med)/1000:.2f} tail {int(tail)/1000:.2f}")
PY
