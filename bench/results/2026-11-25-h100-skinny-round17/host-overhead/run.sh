#!/bin/bash
# Host cost per call of each skinny family's launcher (Google Benchmark, enqueue only).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run20.sh $OUT/run.sh
bash tools/device_check.sh overhead
