#!/bin/bash
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run16.sh $OUT/run.sh
timeout 300 build/bench/tunable_dram_stream > $OUT/dram_stream.txt 2>&1
echo "rc $?"
grep -E "copy|rows x|ksplit [0-9] rotate" $OUT/dram_stream.txt | awk '/rows x/{print} /copy band/{print} /ksplit/{ if ($NF+0 >= 0) print }' | head -400
