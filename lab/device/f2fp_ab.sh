#!/usr/bin/env bash
# A/B of the e4m3 conversion in the GEMV (hardware cvt.rn.f16x2.e4m3x2 against the byte trick): FP8
# decode steps of the base libraries (.devcarry/base.tar.xz) and this build, then the skinny and
# GEMM GPU suites of this build. ENGINE_RESULTS_FROM: a results file tuned on the same GPU kind.
set -uo pipefail
OUT="${OUT:-$PWD/device_out}"; S=lab/device
export ENGINE_RESULTS_FROM=.devcarry/engine_results_h100_rms.csv
bash $S/device_check.sh info > "$OUT/info.log" 2>&1
for r in 1 2; do for B in base build; do
  DEV_BUILD=$B ENGINE_ARGS="--tune --fp8" MODEL=gemma-2b bash $S/engine_knobs.sh -
done; done 2>&1 | tee "$OUT/ab.log"
for B in base build; do DEV_BUILD=$B ENGINE_ARGS="--tune --fp8" MODEL=llama-3-8b bash $S/engine_knobs.sh -; done 2>&1 | tee -a "$OUT/ab.log"
TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" TEST_SHARDS=4 \
  bash $S/device_check.sh tests > "$OUT/tests.log" 2>&1; grep -E "^exit|PASSED|FAILED|every step" "$OUT/tests.log" | sort | uniq -c
