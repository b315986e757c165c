#!/usr/bin/env bash
# A/B of lab/patches/wov-row-groups.patch (build: the patch applied; base: the unpatched libraries as
# .devcarry/base.tar.xz): the weight-only suite with 2 and 3 row groups per warp, then FP8 Gemma-2B
# decode steps of both builds at G = 1, 2, 4, 8. ENGINE_RESULTS_FROM: a results file tuned on the
# same GPU kind (with the `_rms` rows), so no call re-tunes.
set -uo pipefail
OUT="${OUT:-$PWD/device_out}"; S=lab/device
export ENGINE_RESULTS_FROM=.devcarry/engine_results_h100_rms.csv
bash $S/device_check.sh info > "$OUT/info.log" 2>&1
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
for g in 2 3; do TUNABLE_LAB_WOV_G=$g build/tests/tunable_gpu_skinny_tests --gtest_filter='*WeightOnly*' --gtest_brief=1 2>&1 | tail -3; done | tee "$OUT/tests.log"
unset LD_LIBRARY_PATH
DEV_BUILD=base ENGINE_ARGS="--tune --fp8" MODEL=gemma-2b bash $S/engine_knobs.sh - 2>&1 | tee "$OUT/ab.log"
DEV_BUILD=build ENGINE_ARGS="--tune --fp8" MODEL=gemma-2b bash $S/engine_knobs.sh - TUNABLE_LAB_WOV_G=2 TUNABLE_LAB_WOV_G=4 TUNABLE_LAB_WOV_G=8 2>&1 | tee -a "$OUT/ab.log"
DEV_BUILD=base ENGINE_ARGS="--tune --fp8" MODEL=gemma-2b bash $S/engine_knobs.sh - 2>&1 | tee -a "$OUT/ab.log"
DEV_BUILD=build ENGINE_ARGS="--tune --fp8" MODEL=gemma-2b bash $S/engine_knobs.sh TUNABLE_LAB_WOV_G=2 2>&1 | tee -a "$OUT/ab.log"
