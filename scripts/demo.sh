#!/usr/bin/env bash
# The main job as it stands: generate the R-MAT benchmark graph at a small
# scale and sample mini-batches from it with fanouts [15,10,5], printing the
# batch shapes and the sampling throughput.
# Usage: scripts/demo.sh BUILD_DIR [extra fanout-sample flags]
set -euo pipefail
BUILD="$1"
shift
exec "$BUILD/bin/fanout-sample" --scale 16 --fanout 15,10,5 --batch-size 1024 --batches 100 "$@"
