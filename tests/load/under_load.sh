#!/usr/bin/env bash
# Runs a command beside a GPU load from a second process (tunable_gpu_load):
#   tests/load/under_load.sh LOAD_BIN compute|memory|none -- COMMAND [ARGS...]
# Starts the load, waits until it runs, runs COMMAND, stops the load and exits with COMMAND's
# status. No usable GPU: exit 77 (the GPU suites' skip code). A load that fails to start, or that
# stops before COMMAND ends, is a failure (exit 3): the run was not under load.
set -uo pipefail
load_bin="$1"; kind="$2"; shift 2
[ "${1:-}" = "--" ] && shift
if [ "$kind" = none ]; then exec "$@"; fi
ready="$(mktemp -u "${TMPDIR:-/tmp}/gpu_load_ready.XXXXXX")"
"$load_bin" "$kind" --ready "$ready" ${GPU_LOAD_ARGS:-} &
load=$!
for _ in $(seq 1200); do
  [ -f "$ready" ] && break
  if ! kill -0 "$load" 2>/dev/null; then
    wait "$load"; rc=$?
    if [ $rc -eq 77 ]; then
      echo "SKIPPED: no usable GPU for the $kind load"
      [ "${TUNABLE_REQUIRE_GPU:-0}" = 1 ] && exit 1
      exit 77
    fi
    echo "under_load.sh: the $kind load exited ($rc) before it ran" >&2
    exit 3
  fi
  sleep 0.05
done
[ -f "$ready" ] || { echo "under_load.sh: the $kind load did not start in 60 s" >&2; kill "$load"; exit 3; }
echo "under_load.sh: $(cat "$ready")"
"$@"
rc=$?
if ! kill -0 "$load" 2>/dev/null; then
  echo "under_load.sh: the $kind load stopped while the command ran: not a run under load" >&2
  [ $rc -eq 0 ] && rc=3
fi
kill "$load" 2>/dev/null
wait "$load" 2>/dev/null
rm -f "$ready"
exit $rc
