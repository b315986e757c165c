#!/usr/bin/env bash
# Hardware-counter profile (Nsight Compute) of chosen GEMM solutions on chosen decode problems, on
# the GPU machine: each case is run by `tunable_bench verify` from a one-line results file, so the
# kernel profiled is exactly the named, persisted candidate the tuner would replay.
#   NCU_CASES="N,K,M,dtype,solution;..." tools/ncu_skinny.sh      (dtype: bf16 | fp16)
# Writes $OUT/ncu_skinny.txt (every case's sections) and $OUT/ncu_source.txt (per-SASS stall samples of
# the cases whose solution is listed in NCU_SOURCE).
set -uo pipefail
cd "$(dirname "$0")/.."
B="${DEV_BUILD:-build}"
export LD_LIBRARY_PATH="$PWD/$B:$PWD/.devlibs:${LD_LIBRARY_PATH:-}"
OUT="${OUT:?set OUT}"
W="$(mktemp -d)"
: > "$OUT/ncu_skinny.txt"; : > "$OUT/ncu_source.txt"
# Validators of a results file tuned on this GPU kind (they must match the machine, or the file is
# set aside and the case would run Default).
grep '^Validator,' "${NCU_VALIDATORS:-bench/results/2026-11-22-h100-skinny-bm32-wk16/bench_results0.csv}" > "$W/validators.csv"
IFS=';' read -ra cases <<< "${NCU_CASES:?set NCU_CASES}"
for c in "${cases[@]}"; do
  IFS=',' read -r n k m dt sol <<< "$c"
  case "$dt" in bf16) op=GemmTunableOp_BFloat16_TN ;; fp16) op=GemmTunableOp_Half_TN ;;
    *) echo "ncu_skinny: dtype $dt not handled" >&2; exit 2 ;; esac
  tag="${n}x${k}_m${m}_${sol}"
  printf 'model,layer,N,K\nprobe,x,%s,%s\n' "$n" "$k" > "$W/shapes.csv"
  printf '%s,tn_%s_%s_%s_ld_%s_%s_%s,%s,0.0\n' "$op" "$n" "$m" "$k" "$k" "$k" "$n" "$sol" > "$W/entry.csv"
  cat "$W/validators.csv" "$W/entry.csv" > "$W/r0.csv"
  echo "=== $tag" | tee -a "$OUT/ncu_skinny.txt"
  timeout 150 ncu --clock-control none -k "regex:${NCU_KERNEL:-skinny}" --launch-skip 8 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section Occupancy --section LaunchStats --section SchedulerStats --section SourceCounters \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,smsp__inst_executed.sum \
    -o "$W/$tag" -f \
    $B/bench/tunable_bench verify --shapes "$W/shapes.csv" --file "$W/r.csv" --out "$W" --ms "$m" \
      --dtypes "$dt" --no-graphs > "$W/run.log" 2>&1
  echo "exit $?" >> "$OUT/ncu_skinny.txt"
  grep -E "tunable_bench|error|Error|match|winner|$sol" "$W/run.log" | head -8 >> "$OUT/ncu_skinny.txt"
  ncu --import "$W/$tag.ncu-rep" --page details >> "$OUT/ncu_skinny.txt" 2>&1
  if [[ " ${NCU_SOURCE:-} " == *" $sol "* ]]; then
    echo "=== $tag" >> "$OUT/ncu_source.txt"
    ncu --import "$W/$tag.ncu-rep" --page source --csv --print-source sass >> "$OUT/ncu_source.txt" 2>&1
  fi
done
tail -c 200 "$OUT/ncu_skinny.txt"
