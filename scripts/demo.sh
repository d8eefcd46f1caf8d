#!/usr/bin/env bash
# The main job: partition Cora (Planetoid split) into 2 parts with METIS, serve
# each part with its own fanout-server on a free loopback port, train
# GraphSAGE through them, print each server's throughput from its admin
# endpoint, stop the servers. The last line is test_accuracy=0.xxx.
# Usage: scripts/demo.sh BUILD_DIR [extra train-graphsage flags]
set -euo pipefail
# The demo runs on loopback: keep UCX's tcp transport there too.
export UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
BUILD="$1"
shift
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$BUILD/bin"
WORK="$BUILD/demo"
mkdir -p "$WORK"

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== partitioning Cora (Planetoid split) into 2 parts with METIS"
"$BIN/fanout-partition" --format planetoid --input "$ROOT/datasets/data/planetoid/cora" \
  --parts 2 --method metis --output "$WORK/cora" --force --quiet

echo "== starting 2 sampling servers"
RPC=()
ADMIN=()
for p in 0 1; do
  log="$WORK/server-$p.log"
  : > "$log"
  "$BIN/fanout-server" --dataset "$WORK/cora" --partition "$p" --port 0 --admin-port 0 > "$log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    grep -q "fanout-server ready" "$log" && break
    if ! kill -0 "${PIDS[-1]}" 2>/dev/null; then cat "$log" >&2; echo "fanout-server $p failed to start" >&2; exit 1; fi
    sleep 0.1
  done
  grep -q "fanout-server ready" "$log" || { cat "$log" >&2; echo "fanout-server $p did not become ready" >&2; exit 1; }
  cat "$log"
  RPC+=("$(grep -o 'rpc 127.0.0.1:[0-9]*' "$log" | cut -d' ' -f2)")
  ADMIN+=("$(grep -o 'admin 127.0.0.1:[0-9]*' "$log" | cut -d' ' -f2)")
done
cat > "$WORK/cluster.json" <<JSON
{"partitions": [
  {"partition": 0, "replicas": ["${RPC[0]}"]},
  {"partition": 1, "replicas": ["${RPC[1]}"]}
]}
JSON

echo "== training GraphSAGE through the servers (cluster file $WORK/cluster.json)"
"$BIN/train-graphsage" --cluster "$WORK/cluster.json" --epochs 30 "$@" | tee "$WORK/train.log"

echo "== server throughput (fanout-ctl stats)"
"$BIN/fanout-ctl" stats "${ADMIN[@]}"
cleanup
PIDS=()
grep '^test_accuracy=' "$WORK/train.log" | tail -1
