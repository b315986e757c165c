#!/bin/bash
# On a two-H100 machine (device kind nvidia-h100-x2), the final tree's pack unpacked into build/:
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi -L | tee $OUT/device.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $OUT/device.txt
build/tests/tunable_gpu_gemm_tests --gtest_brief=1 \
  --gtest_filter='GpuRuntime.CallsRunOnTheContextsDevice*:GpuRuntime.BroadcastBatch*' 2>&1 | tail -8 | tee $OUT/two_gpu_test.txt
