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
# A field of a server's ready record (--ready-file: one JSON object, written whole).
ready_field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$1"; }
RPC=()
ADMIN=()
for p in 0 1; do
  log="$WORK/server-$p.log" ready="$WORK/server-$p.ready"
  : > "$log"
  rm -f "$ready"
  "$BIN/fanout-server" --dataset "$WORK/cora" --partition "$p" --port 0 --admin-port 0 \
    --ready-file "$ready" > "$log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    [ -s "$ready" ] && break
    if ! kill -0 "${PIDS[-1]}" 2>/dev/null; then cat "$log" >&2; echo "fanout-server $p failed to start" >&2; exit 1; fi
    sleep 0.1
  done
  [ -s "$ready" ] || { cat "$log" >&2; echo "fanout-server $p did not become ready" >&2; exit 1; }
  grep -v '^{' "$log"  # the human-readable lines
  host="$(ready_field "$ready" host)"
  RPC+=("$host:$(ready_field "$ready" rpc_port)")
  ADMIN+=("$host:$(ready_field "$ready" admin_port)")
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
