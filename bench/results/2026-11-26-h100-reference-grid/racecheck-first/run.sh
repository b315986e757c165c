#!/bin/bash
# racecheck and memcheck of the fp64 GEMM reference kernel alone (--kernel-name kns=kernel_reference_gemm;
# the tuning's other kernels run unchecked) on the test whose batch and columns pass the grid's limits.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work87; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; cp .devcarry/run87.sh $OUT/run.sh
OUT=$W SAN_TOOLS="racecheck memcheck" SAN_TARGETS=gemm SAN_TIMEOUT=250 SAN_EXTRA="--kernel-name kns=kernel_reference_gemm" \
  SAN_FILTER='GpuRuntime.ReferenceCheck*' timeout 540 bash tools/device_check.sh sanitize 2>&1 | tee $OUT/summary.txt
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) |hazard" $W/sanitize_*.log | head | tee -a $OUT/summary.txt
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls *.log)
