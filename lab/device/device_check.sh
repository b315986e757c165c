#!/usr/bin/env bash
# Runs on the GPU machine (the `device` tool), from the repo root, with build/ and .devlibs/
# carried from the build machine (the GPU machine lacks the Debian -dev packages to build there).
#   lab/device/device_check.sh STEP...   steps: info tests no-gpu interpose python[-install] example2 ex2-record
#                                   engine engine-bench engine-ncu
#                                   multi-gpu sanitize demo bench-tune bench-verify sweep torch fused overhead
#                                   ncu trace pack
# Writes logs and results under $OUT (default ./device_out). Knobs: TEST_BINS (tests step),
# DEV_BUILD (which carried build: build, or NAME from .devcarry/NAME.tar.xz), GTEST_FILTER_ALL,
# SAN_* (sanitize step, see there), FUSED_ARGS (e.g. --verbose 2: every
# candidate's time), BENCH_RESULTS / BENCH_ARGS (bench steps; to verify a results file tuned in an
# earlier call on the same GPU kind, copy it to DIR/NAME0.csv and set BENCH_RESULTS=DIR/NAME.csv:
# like TunableOp, the bench adds the device ordinal to the name), NCU_CASES / NCU_SOURCE /
# NCU_VALIDATORS (ncu step), TRACE_CASES (trace step).
#
# GPU-required: TUNABLE_REQUIRE_GPU=1 is exported (override with TUNABLE_REQUIRE_GPU=0), so a GPU
# test binary that finds no usable device fails instead of skipping. Every failing step (a test
# binary, a sanitizer run, a benchmark, an unknown step) is listed at the end, and the script's
# exit status is 1 if any failed, 0 otherwise.
set -uo pipefail
export TUNABLE_REQUIRE_GPU="${TUNABLE_REQUIRE_GPU:-1}"
failed=()
# check WHAT STATUS: records WHAT as failed unless STATUS is 0.
check() {
  if [ "$2" -ne 0 ]; then
    failed+=("$1 (exit $2)")
    echo "FAILED: $1 (exit $2)"
  fi
}
# Binaries and libraries arrive packed (lab/device/pack_for_device.sh) to stay under the carry limit.
[ -f .devcarry/pack.tar.xz ] && [ ! -f .devcarry/.unpacked ] && tar xJf .devcarry/pack.tar.xz && touch .devcarry/.unpacked
# Optional further builds for A/B runs in one call (.devcarry/NAME.tar.xz holding NAME/libtunable.so
# and NAME/bench/..., e.g. the commit before a change): DEV_BUILD=NAME selects one.
for f in .devcarry/*.tar.xz; do
  [ -f "$f" ] || continue
  n=$(basename "$f" .tar.xz)
  [ "$n" != pack ] && [ ! -f ".devcarry/.unpacked_$n" ] && tar xJf "$f" && touch ".devcarry/.unpacked_$n"
done
OUT="${OUT:-$PWD/device_out}"
mkdir -p "$OUT"
B="${DEV_BUILD:-build}"
export LD_LIBRARY_PATH="$PWD/$B:$PWD/.devlibs:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
RES="${BENCH_RESULTS:-$OUT/bench_results.csv}"
BENCH_ENV=(${BENCH_ENV_OVERRIDE:-TUNABLE_VERBOSE=0})  # library defaults unless overridden

for step in "$@"; do
  echo "=== $step $(date -u +%FT%TZ)"
  case "$step" in
    info)
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
      check "info: nvidia-smi" "${PIPESTATUS[0]}"
      nvcc --version | tail -1 | tee -a "$OUT/device.txt" ;;  # informational: the GPU machine may lack nvcc
    tests)
      # The binaries run at once (TESTS_SERIAL=1: one after another), each split into TEST_SHARDS gtest
      # shards run at once too: they check numerics, not speed, and the ops suite alone takes minutes.
      pids=()
      shards="${TEST_SHARDS:-1}"
      for t in ${TEST_BINS:-$B/tests/tunable_gpu_*tests}; do
        for ((i = 0; i < shards; ++i)); do
          log="$OUT/$(basename "$t")$([ "$shards" -gt 1 ] && echo ".shard$i").log"
          GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
            "$t" --gtest_brief=1 ${GTEST_FILTER_ALL:+--gtest_filter=$GTEST_FILTER_ALL} > "$log" 2>&1 &
          pids+=("$!:$t:$log")
          [ "${TESTS_SERIAL:-0}" = 1 ] && wait "$!"
        done
      done
      for pt in "${pids[@]}"; do
        pid=${pt%%:*}; rest=${pt#*:}; t=${rest%%:*}; log=${rest#*:}
        wait "$pid"; rc=$?
        echo "--- $(basename "$log")"
        echo "exit $rc"; grep -E "^\[  (PASSED|FAILED) |tests from .* ran|^FAILED: |^SKIPPED: " "$log" | head -30
        # The binary's own skip report (tests/gpu/gpu_main.hpp): tests that skipped themselves.
        grep -E "^tunable-gpu-tests:" "$log" | sort -u | head -20
        # Exit 77 is the whole-binary skip (no device); it only happens with TUNABLE_REQUIRE_GPU=0.
        if [ "$rc" -eq 77 ] && [ "$TUNABLE_REQUIRE_GPU" = 0 ]; then echo "skipped: $(basename "$t") (no device)"
        else check "tests: $(basename "$log" .log)" "$rc"; fi
      done ;;
    no-gpu)
      # GPU-required mode on a GPU machine whose GPU is hidden (CUDA_VISIBLE_DEVICES=""): every GPU
      # test binary must fail (not skip with 77, not pass); with TUNABLE_REQUIRE_GPU=0 each skips (77).
      for t in $B/tests/tunable_gpu_*tests; do
        CUDA_VISIBLE_DEVICES= TUNABLE_REQUIRE_GPU=1 "$t" --gtest_brief=1 > "$OUT/nogpu_$(basename "$t").log" 2>&1
        rc=$?
        CUDA_VISIBLE_DEVICES= TUNABLE_REQUIRE_GPU=0 "$t" --gtest_brief=1 > /dev/null 2>&1
        rc0=$?
        echo "$(basename "$t"): required exit $rc ($(head -c 300 "$OUT/nogpu_$(basename "$t").log" | tr '\n' ' ')); not required exit $rc0"
        { [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; } || check "no-gpu: $(basename "$t") did not fail without its GPU" 1
        [ "$rc0" -eq 77 ] || check "no-gpu: $(basename "$t") did not skip with TUNABLE_REQUIRE_GPU=0" 1
      done ;;
    interpose)
      # PyTorch under the cuBLAS interposer: the GEMM battery plain and under `tunable run --tune`
      # (outputs compared), decode F.linear in CUDA graphs plain / --tune / --use, and the host cost
      # per intercepted call.
      TR="$B/tools/tunable"
      python3 tests/torch/interpose_battery.py run "$OUT/battery_plain.pt" > "$OUT/interpose_battery.log" 2>&1
      check "interpose: battery plain" "$?"
      "$TR" run --tune --file "$OUT/battery.csv" -- python3 tests/torch/interpose_battery.py run "$OUT/battery_pre.pt" \
        >> "$OUT/interpose_battery.log" 2>&1
      check "interpose: battery preloaded" "$?"
      python3 tests/torch/interpose_battery.py compare "$OUT/battery_plain.pt" "$OUT/battery_pre.pt" \
        >> "$OUT/interpose_battery.log" 2>&1
      check "interpose: battery compare" "$?"
      tail -25 "$OUT/interpose_battery.log"
      rm -f "$OUT"/battery_*.pt
      "$TR" run --tune --file "$OUT/overhead.csv" -- $B/bench/tunable_interpose_overhead 2>&1 | tee "$OUT/interpose_overhead.log"
      check "interpose: overhead" "${PIPESTATUS[0]}"
      python3 bench/interpose/torch_linear_graphs.py "$OUT/linear_plain.json" ${LINEAR_ARGS:-} > "$OUT/linear_plain.log" 2>&1
      check "interpose: linear plain" "$?"
      "$TR" run --tune --file "$OUT/linear.csv" -- python3 bench/interpose/torch_linear_graphs.py "$OUT/linear_tune.json" \
        ${LINEAR_ARGS:-} > "$OUT/linear_tune.log" 2>&1
      check "interpose: linear --tune" "$?"
      "$TR" run --use --file "$OUT/linear.csv" -- python3 bench/interpose/torch_linear_graphs.py "$OUT/linear_use.json" \
        ${LINEAR_ARGS:-} > "$OUT/linear_use.log" 2>&1
      check "interpose: linear --use" "$?"
      tail -12 "$OUT/linear_use.log" ;;
    example2)
      # HF generate plain vs ours (bench/example2/run.sh): EX2_CASES lists MODEL:BATCH[:--no-compile].
      for c in ${EX2_CASES:-gemma-2b:1}; do
        IFS=: read -r model batch extra <<< "$c"
        PYTHONPATH="/tmp/tunable_site:${PYTHONPATH:-}" B="$B" bash bench/example2/run.sh "$OUT" "$model" "$batch" $extra 2>&1 | grep -v Warning | tail -12
        check "example2: $c" "${PIPESTATUS[0]}"
      done ;;
    engine)
      # The decode engine against transformers on small random models of every family
      # (tests/torch/test_engine.py).
      python3 tests/torch/test_engine.py "$OUT/engine_tests.json" --cli "$B/tools/tunable" --work /tmp/engine_tests \
        > "$OUT/engine_tests.log" 2>&1
      check "engine: GPU tests" "$?"
      grep -E "^(ok|FAIL) |^  |cases" "$OUT/engine_tests.log" | head -60 ;;
    engine-bench)
      # tunable bench-model on random-weight models of real configurations; ENGINE_CASES lists
      # MODEL:BATCHES[:PROMPT_LEN[:NEW_TOKENS]] (default gemma-2b:1,8 llama-3-8b:1,8), ENGINE_ARGS adds
      # options (e.g. --tune), ENGINE_HF=1 also runs HF generate (compiled, static cache) on each
      # model and batch in the same call (ENGINE_HF_BATCHES=1: only those batches), ENGINE_RESULTS_FROM=FILE
      # starts from a results file tuned
      # in an earlier call on the same GPU kind.
      [ -n "${ENGINE_RESULTS_FROM:-}" ] && cp "$ENGINE_RESULTS_FROM" "$OUT/engine_results0.csv"
      for c in ${ENGINE_CASES:-gemma-2b:1,8 llama-3-8b:1,8}; do
        IFS=: read -r model batches plen newt <<< "$c"
        plen=${plen:-128}; newt=${newt:-256}
        dir=/tmp/models/$model
        [ -f "$dir/config.json" ] || python3 bench/engine/make_model.py "$dir" --model "$model" 2>&1 | grep -v Warning | tail -2
        tag="${model}_p${plen}_${ENGINE_TAG:-default}"
        $B/tools/tunable bench-model --model "$dir" --batch "$batches" --prompt-len "$plen" --new-tokens "$newt" \
          --file "$OUT/engine_results.csv" --json "$OUT/engine_$tag.json" ${ENGINE_ARGS:-} 2>&1 | grep -v "loaded layer" | tail -12
        check "engine-bench: $c" "${PIPESTATUS[0]}"
        if [ "${ENGINE_HF:-0}" = 1 ]; then
          hfb=${ENGINE_HF_BATCHES:-$batches}
          for b in ${hfb//,/ }; do
            python3 bench/example2/hf_generate.py "$OUT/hf_${model}_b${b}_p${plen}.json" --model "$model" --batch "$b" \
              --prompt-len "$plen" --new-tokens "$newt" 2>&1 | grep -v Warning | tail -2
            check "engine-bench: HF $model b$b" "${PIPESTATUS[0]}"
            python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('HF', sys.argv[2], 'b', j['batch'], 'prefill tok/s %.0f decode tok/s %.1f ms/step %.3f' % (j['prefill_tok_s'], j['decode_tok_s'], j['decode_ms_per_step']))" "$OUT/hf_${model}_b${b}_p${plen}.json" "$model"
          done
        fi
      done ;;
    engine-ncu)
      # Nsight Compute on the decode attention of Gemma-2B (random weights): one eager launch
      # (--no-graphs) at about position 128+ENGINE_NCU_STEP of each batch in ENGINE_NCU_BATCHES.
      dir=/tmp/models/gemma-2b
      [ -f "$dir/config.json" ] || python3 bench/engine/make_model.py "$dir" --model gemma-2b 2>&1 | tail -1
      for b in ${ENGINE_NCU_BATCHES:-1 8}; do
        timeout 240 ncu --clock-control none -k "regex:${ENGINE_NCU_KERNEL:-decode_attention}" \
          --launch-skip $((18 * ${ENGINE_NCU_STEP:-100})) --launch-count 1 \
          --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
          --section LaunchStats --section SourceCounters --section MemoryWorkloadAnalysis \
          -o "$OUT/engine_attn_b$b" -f $B/tools/tunable bench-model --model "$dir" --batch "$b" --runs 1 \
          --no-graphs --new-tokens 256 > "$OUT/engine_ncu_b$b.log" 2>&1
        check "engine-ncu: batch $b" "$?"
        ncu --import "$OUT/engine_attn_b$b.ncu-rep" --page details > "$OUT/engine_ncu_b$b.txt" 2>&1
        ncu --import "$OUT/engine_attn_b$b.ncu-rep" --page source --csv --print-source sass > "$OUT/engine_ncu_src_b$b.csv" 2>&1
        grep -E "Duration|Registers|Achieved Occupancy|Block Size|Grid Size|Warp Cycles Per Issued|Issue Slots Busy|Stall" \
          "$OUT/engine_ncu_b$b.txt" | head -20
      done ;;
    python-install|python)
      # The Python package as pip installs it (the wheel built here, carried in .devcarry), then
      # (step python) its GPU tests (tests/torch/test_python_package.py) and its CPU tests.
      whl=$(ls .devcarry/tunable-*.whl 2>/dev/null | head -1)
      if [ -z "$whl" ]; then check "python: no wheel in .devcarry" 1; continue; fi
      python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/tunable_site "$whl"
      check "python: pip install" "$?"
      [ "$step" = python-install ] && continue
      PYTHONPATH="/tmp/tunable_site:${PYTHONPATH:-}" TUNABLE_TEST_PRELOAD="$PWD/$B/libtunable_preload.so" \
        python3 tests/torch/test_python_package.py "$OUT/python_package.json" > "$OUT/python_package.log" 2>&1
      check "python: GPU tests" "$?"
      grep -E "^(ok|FAIL) |host us|max \|logits|cases" "$OUT/python_package.log"
      TUNABLE_TEST_BUILD="$PWD/$B" python3 -m unittest discover -s python/tests > "$OUT/python_cpu.log" 2>&1
      check "python: CPU tests" "$?"; tail -3 "$OUT/python_cpu.log" ;;
    ex2-record)
      # The GEMM misses of a real 8B run, recorded for offline tuning (the multi-gpu step's input):
      # Llama-3-8B (random weights) in eager generate, batch 1 and 8 at a 128-token prompt and batch
      # 1 at 512, 8 new tokens each, all into one untuned file.
      rm -f "$OUT/llama-3-8b_untuned0.csv"
      for c in "1 128" "8 128" "1 512"; do
        read -r batch plen <<< "$c"
        $B/tools/tunable run --record --file "$OUT/ex2rec.csv" --untuned "$OUT/llama-3-8b_untuned.csv" -- \
          python3 bench/example2/hf_generate.py "$OUT/ex2rec_b${batch}_p${plen}.json" --model llama-3-8b \
          --batch "$batch" --prompt-len "$plen" --new-tokens 8 --runs 1 --no-compile > "$OUT/ex2rec.log" 2>&1
        check "ex2-record: b$batch p$plen" "$?"
      done
      wc -l "$OUT/llama-3-8b_untuned0.csv" ;;
    multi-gpu)
      # `tune-file --devices all` against one GPU on the same recorded file (MGPU_UNTUNED), each into
      # fresh results files; the merged files are compared with the one-GPU run.
      u="${MGPU_UNTUNED:-bench/results/multigpu/llama-3-8b_untuned.csv}"
      mkdir -p "$OUT/mgpu_all" "$OUT/mgpu_one"
      nvidia-smi -L | tee "$OUT/mgpu_gpus.txt"
      for run in all one; do
        args=(--devices all); [ "$run" = one ] && args=(--device cuda:0)
        start=$(date +%s.%N)
        TUNABLE_VERBOSE=0 $B/tools/tunable tune-file "$u" "${args[@]}" --file "$OUT/mgpu_$run/r.csv" \
          > "$OUT/mgpu_$run.log" 2>&1
        check "multi-gpu: $run" "$?"
        end=$(date +%s.%N)
        echo "$run: $(awk "BEGIN{print $end - $start}") s wall" | tee -a "$OUT/mgpu_wall.txt"
        tail -4 "$OUT/mgpu_$run.log"
      done
      python3 bench/multigpu/compare_results.py "$OUT/mgpu_one/r0.csv" "$OUT"/mgpu_all/r[0-9]*.csv \
        --json "$OUT/mgpu_compare.json" | tee "$OUT/mgpu_compare.txt"
      check "multi-gpu: compare" "${PIPESTATUS[0]}" ;;
    sanitize)
      # SAN_TOOLS (memcheck racecheck), SAN_TARGETS (gemm ops skinny), per-target filters
      # SAN_FILTER (gemm), SAN_FILTER_OPS, SAN_FILTER_SKINNY; each run capped at SAN_TIMEOUT seconds.
      # SAN_EXTRA: more sanitizer options (e.g. --kernel-name-exclude kns=nvjet); SAN_TAG: log suffix.
      # The runs go at once (SAN_SERIAL=1: one after another); each reports when all have ended.
      runs=()
      for tool in ${SAN_TOOLS:-memcheck racecheck}; do
        for target in ${SAN_TARGETS:-gemm ops skinny}; do
          case "$target" in
            gemm) filt="${SAN_FILTER:-GpuRuntime.*:Gpu/GpuGemm.*gemm_bf16_bf16_tn_67*:Gpu/GpuGemm.*scaled*256*}" ;;
            ops) filt="${SAN_FILTER_OPS:-}" ;;
            skinny) filt="${SAN_FILTER_SKINNY:-}" ;;
          esac
          t="$B/tests/tunable_gpu_${target}_tests"
          [ -x "$t" ] || continue
          log="$OUT/sanitize_${target}_$tool${SAN_TAG:-}.log"
          timeout "${SAN_TIMEOUT:-300}" compute-sanitizer --tool $tool --error-exitcode 9 ${SAN_EXTRA:-} \
            "$t" --gtest_brief=1 ${filt:+--gtest_filter=$filt} > "$log" 2>&1 &
          runs+=("$!:$target $tool${SAN_TAG:-}:$log")
          [ "${SAN_SERIAL:-0}" = 1 ] && wait "$!"
        done
      done
      for r in "${runs[@]}"; do
        pid=${r%%:*}; rest=${r#*:}; what=${rest%%:*}; log=${rest#*:}
        wait "$pid"; rc=$?
        echo "$what exit $rc"; tail -3 "$log"
        check "sanitize: $what" "$rc"
        # Which kernels the reports name (cuBLAS's own kernels are third-party code).
        grep -E "Race reported|^========= +at " "$log" | sed -E 's/.* at (void )?([A-Za-z_][A-Za-z0-9_:]*).*/\2/' \
          | sort | uniq -c | sort -rn | head -8
      done ;;
    demo)
      for dt in fp32 bf16; do
        $B/tools/tunable tune --device cuda --m 512 --n 1024 --k 2048 --dtype $dt --trans nn \
          --file "$OUT/demo_$dt.csv" --verbose 1 2>&1 | tail -25 | tee "$OUT/demo_$dt.log"
        check "demo: $dt" "${PIPESTATUS[0]}"
      done ;;
    bench-tune)
      env "${BENCH_ENV[@]}" $B/bench/tunable_bench tune --file "$RES" --out "$OUT" ${BENCH_ARGS:-} 2>&1 \
        | tee "$OUT/bench_tune.log" | grep -E "tuning time|\[(1|50|100|150|200)/|error|tunable_bench"
      check "bench-tune" "${PIPESTATUS[0]}" ;;
    bench-verify)
      env "${BENCH_ENV[@]}" $B/bench/tunable_bench verify --file "$RES" --out "$OUT" ${BENCH_ARGS:-} 2>&1 \
        | tee "$OUT/bench_verify.log" | tail -12
      check "bench-verify" "${PIPESTATUS[0]}" ;;
    sweep)
      # Untuned token counts (the nearest-bucket rule) on the suite's bf16 shapes, against the tuned
      # buckets n = 1, 8, 16, 32, 64, 128, 512, 2048 of bench/results/dynamic-shapes/buckets.csv
      # (an H100's; SWEEP_TUNE=1 tunes them here instead: the committed H100 results at 1..64 plus
      # 128, 512 and 2048); then every n in 1..64 and a sweep to 2048 against Default (SWEEP_MS,
      # SWEEP_DTYPES, SWEEP_FILTER override).
      mkdir -p "$OUT/sweep"
      if [ "${SWEEP_TUNE:-0}" = 1 ]; then
        { cat bench/results/gemm-decode/tuned_m1_8_16.csv
          grep -v '^Validator' bench/results/gemm-decode/tuned_m32_64.csv; } > "$OUT/sweep/buckets0.csv"
        env "${BENCH_ENV[@]}" $B/bench/tunable_bench tune --file "$OUT/sweep/buckets.csv" --out "$OUT/sweep" \
          --ms 128,512,2048 --dtypes "${SWEEP_DTYPES:-bf16}" ${SWEEP_FILTER:+--filter $SWEEP_FILTER} \
          > "$OUT/sweep_tune.log" 2>&1
        check "sweep: tune buckets" "$?"; grep "tuning time" "$OUT/sweep_tune.log"
      else
        cp bench/results/dynamic-shapes/buckets.csv "$OUT/sweep/buckets0.csv"
      fi
      ms_default="$(seq -s, 1 64),80,96,100,112,160,192,200,256,300,384,448,500,640,768,1000,1024,1280,1536,1792,2000,128,512,2048"
      env "${BENCH_ENV[@]}" $B/bench/tunable_bench sweep --file "$OUT/sweep/buckets.csv" --out "$OUT" \
        --ms "${SWEEP_MS:-$ms_default}" --dtypes "${SWEEP_DTYPES:-bf16}" ${SWEEP_FILTER:+--filter $SWEEP_FILTER} \
        > "$OUT/sweep.log" 2>&1
      check "sweep" "$?"; grep -E "SLOWER" "$OUT/sweep.log" | head -20; tail -8 "$OUT/sweep.log"
      rm -f "$OUT/sweep/buckets0.csv.lock" ;;
    torch)
      python3 bench/baselines/torch_gemm.py "$OUT/torch_linear.json" bf16 fp16 > "$OUT/torch_gemm.log" 2>&1
      rc=$?
      tail -3 "$OUT/torch_gemm.log"
      check "torch" "$rc" ;;
    fused)
      python3 bench/fused_ops_torch.py "$OUT/fused_torch.json" > "$OUT/fused_torch.log" 2>&1
      check "fused: torch baseline" "$?"; tail -3 "$OUT/fused_torch.log"
      $B/bench/tunable_fused_bench --out "$OUT" --anchors bench/baselines/h100-torch-fused-ops.txt \
        --torch "$OUT/fused_torch.json" ${FUSED_ARGS:-} > "$OUT/fused_bench.log" 2>&1
      rc=$?
      echo "exit $rc"; tail -45 "$OUT/fused_bench.log"
      check "fused: tunable_fused_bench" "$rc" ;;
    overhead)
      # Repeated and randomly interleaved: single runs of the two benchmarks drifted by 30% apart.
      $B/lab/tunable_dispatch_overhead --benchmark_format=console --benchmark_repetitions=9 \
        --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true 2>&1 \
        | tee "$OUT/dispatch_overhead.txt" | tail -12
      check "overhead" "${PIPESTATUS[0]}" ;;
    ncu)
      # Nsight Compute on one launch of each named, persisted candidate, run by tunable_bench verify
      # from a one-line results file: NCU_CASES="N,K,M,dtype,solution;..." (dtype bf16 | fp16). The
      # validators come from a results file tuned on this GPU kind (a mismatch sets the file aside
      # and the case would run Default). NCU_SOURCE: solutions whose per-SASS stall samples to keep.
      W="$(mktemp -d)"
      grep '^Validator,' "${NCU_VALIDATORS:-bench/results/gemm-decode/tuned_m1_8_16.csv}" > "$W/v.csv"
      IFS=';' read -ra ncases <<< "${NCU_CASES:?set NCU_CASES}"
      for c in "${ncases[@]}"; do
        IFS=',' read -r n k m dt sol <<< "$c"
        case "$dt" in bf16) op=GemmTunableOp_BFloat16_TN ;; fp16) op=GemmTunableOp_Half_TN ;; *) echo "ncu: dtype $dt"; check "ncu: dtype $dt" 1; continue ;; esac
        tag="${n}x${k}_m${m}_${sol}"
        printf 'model,layer,N,K\nprobe,x,%s,%s\n' "$n" "$k" > "$W/shapes.csv"
        { cat "$W/v.csv"; printf '%s,tn_%s_%s_%s_ld_%s_%s_%s,%s,0.0\n' "$op" "$n" "$m" "$k" "$k" "$k" "$n" "$sol"; } > "$W/r0.csv"
        echo "=== $tag" | tee -a "$OUT/ncu_skinny.txt"
        timeout 150 ncu --clock-control none -k "regex:${NCU_KERNEL:-skinny}" --launch-skip 8 --launch-count 1 \
          --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
          --section Occupancy --section LaunchStats --section SchedulerStats --section SourceCounters \
          --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,smsp__inst_executed.sum \
          -o "$W/$tag" -f $B/bench/tunable_bench verify --shapes "$W/shapes.csv" --file "$W/r.csv" --out "$W" \
          --ms "$m" --dtypes "$dt" --no-graphs > "$W/run.log" 2>&1
        rc=$?
        echo "exit $rc" >> "$OUT/ncu_skinny.txt"
        check "ncu: $tag" "$rc"
        grep -E "tunable_bench|error|match|$sol" "$W/run.log" | head -8 >> "$OUT/ncu_skinny.txt"
        ncu --import "$W/$tag.ncu-rep" --page details >> "$OUT/ncu_skinny.txt" 2>&1
        if [[ " ${NCU_SOURCE:-} " == *" $sol "* ]]; then
          echo "=== $tag" >> "$OUT/ncu_source.txt"
          ncu --import "$W/$tag.ncu-rep" --page source --csv --print-source sass >> "$OUT/ncu_source.txt" 2>&1
        fi
      done
      grep -E "^===|^exit|Duration|DRAM Throughput" "$OUT/ncu_skinny.txt" | tail -20 ;;
    trace)
      # Per-block timeline of 48 back-to-back calls (lab/probes/skinny_trace.cu), stream then graph:
      # TRACE_CASES="kernel,rows,warps,n,k,m[,carveout];..." (kernel gemv | mma | mmap | mmawc | mmapwc | mmt;
      # carveout: shared-memory percent hint for mmawc / mmapwc at 16 rows and 8 warps, default -1).
      IFS=';' read -ra tcases <<< "${TRACE_CASES:?set TRACE_CASES}"
      for c in "${tcases[@]}"; do
        IFS=',' read -r kern rows warps n k m co <<< "$c"
        co="${co:--1}"
        for mode in stream graph; do
          flag=(); [ "$mode" = graph ] && flag=(--graph)
          $B/lab/tunable_skinny_trace --kernel "$kern" --rows "$rows" --warps "$warps" --n "$n" --k "$k" --m "$m" \
            --carveout "$co" "${flag[@]}" \
            --out "$OUT/trace_${kern}_${rows}_${warps}_${n}x${k}_m${m}_c${co}_${mode}.json" 2>&1 | tee -a "$OUT/trace.txt"
          check "trace: $c $mode" "${PIPESTATUS[0]}"
        done
      done ;;
    pack)
      # The device tool brings back at most 8 files: bundle everything into one archive.
      (cd "$OUT" && tar czf ../device_results.tgz --exclude='*.lock' . && rm -rf ./* && mv ../device_results.tgz .)
      check "pack" "$?" ;;
    *) echo "unknown step $step"; check "unknown step $step" 2 ;;
  esac
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "=== device_check: ${#failed[@]} failing step(s):"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "=== device_check: every step passed"
