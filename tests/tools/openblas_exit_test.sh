#!/usr/bin/env bash
# The CLI under `ulimit -v` too tight for OpenBLAS's worker buffers must print its error and end.
# Debian's OpenBLAS 0.3.21 gives each worker thread a 128 MiB buffer and retries a failed allocation
# forever; its library destructor joins the workers, so the CLI printed "the operands need ..." and
# then never ended. The CLI's size comes from what it reports free under a loose limit (with the
# workers' buffers or, when it looked before they were mapped, without); limits from 160 MiB above
# to 256 MiB below that size, 16 MiB apart, cross the window just above the least it loads in.
#   openblas_exit_test.sh PATH/TO/tunable
set -u
cli=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export CUDA_VISIBLE_DEVICES=
tune=(tune --device cpu --m 32768 --n 32768 --k 32768 --dtype fp32 --seconds 0.01 --verbose 0 --file "$dir/r.csv")
refusal="the operands need 12.0 GiB of host memory"

loose_kib=$((4 << 20))
out=$( (ulimit -v $loose_kib && timeout 30 "$cli" "${tune[@]}") 2>&1)
free_kib=$(sed -n 's/.* and \([0-9.]*\) \([MG]\)iB is available.*/\1 \2/p' <<<"$out" |
           awk '{ printf "%d", $1 * ($2 == "G" ? 1048576 : 1024) }')
if [[ -z $free_kib ]]; then
  echo "FAIL: under a limit of $loose_kib KiB the CLI did not report its free memory:"; echo "$out"; exit 1
fi
size_kib=$((loose_kib - free_kib))
refused=0
for below_mib in $(seq -160 16 256); do
  limit=$((size_kib - below_mib * 1024))
  out=$( (ulimit -v $limit && timeout 10 "$cli" "${tune[@]}") 2>&1)
  rc=$?
  grep -q "$refusal" <<<"$out" || continue  # the libraries could not load under this limit
  if [[ $rc -eq 124 ]]; then
    echo "FAIL: under ulimit -v $limit the CLI printed its error, then did not end in 10 s:"; echo "$out"; exit 1
  fi
  if [[ $rc -ne 1 ]]; then echo "FAIL: under ulimit -v $limit the CLI ended with $rc:"; echo "$out"; exit 1; fi
  refused=$((refused + 1))
done
if [[ $refused -lt 8 ]]; then echo "FAIL: only $refused of the limits let the CLI run; the window was not crossed"; exit 1; fi
echo "ok: the CLI ran and ended under $refused limits from $((size_kib - 256 * 1024)) to $((size_kib + 160 * 1024)) KiB"
