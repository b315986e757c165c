#!/usr/bin/env bash
# Packs what the GPU machine needs (binaries built here, runtime libraries it lacks) into one
# compressed archive under .devcarry/, to travel with `device run` (carry [".devcarry"]).
# On the device: tar xJf .devcarry/pack.tar.xz   (restores build/... and .devlibs/)
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .devcarry .devlibs
for lib in /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0 \
           /lib/x86_64-linux-gnu/libgfortran.so.5 /lib/x86_64-linux-gnu/libquadmath.so.0 \
           /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian \
           /lib/x86_64-linux-gnu/libicui18n.so.72 /lib/x86_64-linux-gnu/libicuuc.so.72 \
           /lib/x86_64-linux-gnu/libicudata.so.72 /lib/x86_64-linux-gnu/libsentencepiece.so.0; do
  cp -Lu "$lib" .devlibs/
done
B="${BUILD_DIR:-build}"
files=("$B/libtunable.so" "$B/libtunable_preload.so" "$B/libtunable_tokenizer.so" "$B/tools/tunable")
for f in "$B"/tests/tunable_gpu_* "$B"/bench/tunable_* "$B"/lab/tunable_*; do
  [ -x "$f" ] && [ -f "$f" ] && files+=("$f")
done
# Stored as build/... whatever the local build directory is called.
tar cJf .devcarry/pack.tar.xz --transform "s,^${B#/},build," "${files[@]}" .devlibs
ls -la .devcarry/pack.tar.xz
