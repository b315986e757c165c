#!/bin/bash
# The reference's two grid-limit tests (split), plain; then racecheck and memcheck of the fp64 GEMM reference
# kernel alone (--kernel-name kns=kernel_reference_gemm), one test at a time.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work88; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; cp .devcarry/run88.sh $OUT/run.sh
build/tests/tunable_gpu_gemm_tests --gtest_brief=0 --gtest_filter='GpuRuntime.ReferenceCheck*:CudaUtil.*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED) " | tee $OUT/summary.txt
for t in Columns Batches; do
  OUT=$W SAN_TOOLS="racecheck memcheck" SAN_TARGETS=gemm SAN_TIMEOUT=200 SAN_EXTRA="--kernel-name kns=kernel_reference_gemm" SAN_TAG=_$t \
    SAN_FILTER="GpuRuntime.ReferenceCheckCovers${t}*" timeout 420 bash tools/device_check.sh sanitize 2>&1 | grep exit | tee -a $OUT/summary.txt
done
for f in $W/sanitize_*.log; do echo "## $(basename $f)"; grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) |Internal|hazard" $f | head -5; done | tee -a $OUT/summary.txt
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls *.log)
