#!/bin/bash
# Round 16b (wgmma kernel with fixed 2-4 splits): GPU skinny suite, then tuning and verification at M in {1, 8, 16}
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
TEST_BINS="build/tests/tunable_gpu_skinny_tests" timeout 120 bash tools/device_check.sh info tests
grep -E "FAILED|Failure|out of tolerance|refused" $OUT/tunable_gpu_skinny_tests.log | head -20
bash .devcarry/run10.sh
