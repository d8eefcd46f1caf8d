"""fanout stages bench: where a distributed batch's time goes, stage by stage, on the Thrift and UCX paths.

The 2-server NodeLoader ([15, 10, 5], batches of 1,024 random seeds, features and labels on, the default 2
workers) over the R-MAT graph (scale --scale, 128-dim float32 features, 2 partitions, random), with both
servers reached over one path: `thrift` (servers with --local-socket off --data-plane off) or `ucx` (servers
with --local-socket off, the client on UCX: tcp here, no RDMA device). Nothing is read from an export, so
every byte crosses the path named.

For each path, after a warm-up, a window of --seconds: the loader's stage counters (NodeLoader.stats()
["stages"]: each stage's wall and thread-CPU seconds), this process's CPU seconds, each server's CPU seconds
(/proc) and its handlers' CPU seconds per method (/metrics, fanout_request_cpu_seconds_total). Per batch, in
CPU milliseconds:

  route             ids split by partition, per-partition arguments (request build)
  sample_transfer   client side of the sample requests: send, wait, receive and deserialize
  merge             replies checked, merged in frontier order and relabelled
  feature_transfer  client side of the feature requests
  feature_decode    received rows copied (or decoded) to their places in x
  labels            labels, every part of them
  build             the rest of a batch's production (its arrays: edge_index, x allocation, ...)
  handoff           a batch's arrays to DLPack capsules (the iterating thread)
  python            capsules to torch tensors and the Batch object (the iterating thread)
  client_other      the client's CPU not in a stage above (its other threads: connections, UCX progress,
                    the allocator's returns, the iterating loop)
  server_sample     the servers' sample handlers' CPU (/metrics fanout_request_cpu_seconds_total: the serving
                    thread's and its helper threads')
  server_features   ... feature handlers'
  server_labels     ... label handlers'
  server_other      the servers' CPU outside handlers (Thrift or UCX transport, serialization, polling)

and `total`, every process's CPU per batch (the figure `./run bench peers` ranks by, inverted). The wall
ms of the client stages are reported beside (workers overlap, so they sum past the batch's wall time).
The paths alternate within rounds; each figure is the median over --rounds.

Usage: ./run bench stages [--json FILE] [--scale 20] [--seconds 5] [--rounds 3] [--paths thrift,ucx]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_common import endless, proc_cpu_seconds, self_cpu_seconds  # noqa: E402

CLIENT_STAGES = ["route", "sample_transfer", "merge", "feature_transfer", "feature_decode", "labels", "build",
                 "handoff", "python"]
# Stages with nothing to do when no partition is co-located (reported when they are not empty).
LOCAL_STAGES = ["local_sample", "local_features"]
HANDLERS = {"sample_neighbors": "server_sample", "lookup_features": "server_features",
            "lookup_labels": "server_labels"}


def handler_seconds(admin):
    """Each method's summed handler CPU seconds on one server (its /metrics)."""
    with urllib.request.urlopen("http://%s/metrics" % admin, timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("fanout_request_cpu_seconds_total{"):
            labels, value = line.rsplit(" ", 1)
            method = labels.split('method="', 1)[1].split('"', 1)[0]
            out[method] = out.get(method, 0.0) + float(value)
    return out


def snapshot(loader, lc):
    return {"stages": loader.stats()["stages"], "batches": loader.stats()["batches"],
            "client_cpu": self_cpu_seconds(), "server_cpu": [proc_cpu_seconds(p) for p in lc.pids],
            "handlers": [handler_seconds(a) for a in lc.admin_addresses], "wall": time.perf_counter()}


def window(loader, lc, seconds, warmup):
    """One timed window of the loader: per-batch ms of each stage (CPU and wall) and of every process."""
    it = endless(loader)
    for _ in range(warmup):
        next(it)
    a = snapshot(loader, lc)
    deadline = time.perf_counter() + seconds
    edges = feature_bytes = n = 0
    while time.perf_counter() < deadline:
        b = next(it)
        edges += int(b.edge_index.size(1))
        feature_bytes += int(b.x.numel()) * b.x.element_size()
        n += 1
        del b
    z = snapshot(loader, lc)
    batches = z["batches"] - a["batches"]
    if batches < 1:
        raise SystemExit("no batch in the window: raise --seconds")
    per = 1e3 / batches
    cpu, wall = {}, {}
    for name in CLIENT_STAGES + LOCAL_STAGES + ["produce"]:
        cpu[name] = (z["stages"][name]["cpu_s"] - a["stages"][name]["cpu_s"]) * per
        wall[name] = (z["stages"][name]["wall_s"] - a["stages"][name]["wall_s"]) * per
    client = (z["client_cpu"] - a["client_cpu"]) * per
    servers = sum(z1 - a1 for z1, a1 in zip(z["server_cpu"], a["server_cpu"])) * per
    handled = 0.0
    for method, stage in HANDLERS.items():
        ms = sum(zh.get(method, 0.0) - ah.get(method, 0.0) for zh, ah in zip(z["handlers"], a["handlers"])) * per
        cpu[stage] = ms
        handled += ms
    in_stages = sum(cpu[s] for s in CLIENT_STAGES + LOCAL_STAGES)
    cpu["client_other"] = max(0.0, client - in_stages)
    cpu["server_other"] = max(0.0, servers - handled)
    return {"batches": batches, "wall_s": z["wall"] - a["wall"], "edges_per_batch": edges / max(n, 1),
            "feature_bytes_per_batch": feature_bytes / max(n, 1), "client_cpu_ms": client,
            "server_cpu_ms": servers, "total_cpu_ms": client + servers,
            "batches_per_cpu_s": 1e3 / (client + servers) if client + servers > 0 else 0.0,
            "cpu_ms": cpu, "wall_ms": wall}


def median_of(windows):
    """Field by field medians of windows (dicts of numbers and of dicts of numbers)."""
    out = {}
    for key, value in windows[0].items():
        if isinstance(value, dict):
            out[key] = {k: statistics.median(w[key][k] for w in windows) for k in value}
        else:
            out[key] = statistics.median(w[key] for w in windows)
    return out


def print_table(path, m):
    print("\n%s: %.1f batches/s wall, %.2f ms of CPU per batch (client %.2f, servers %.2f), %.1f batches per CPU-s"
          % (path, m["batches"] / m["wall_s"], m["total_cpu_ms"], m["client_cpu_ms"], m["server_cpu_ms"],
             m["batches_per_cpu_s"]))
    rows = [(s, m["cpu_ms"][s], m["wall_ms"].get(s)) for s in CLIENT_STAGES + LOCAL_STAGES
            if s not in LOCAL_STAGES or m["cpu_ms"][s] > 0.005]
    rows += [(s, m["cpu_ms"][s], None) for s in ["client_other"] + list(HANDLERS.values()) + ["server_other"]]
    total = m["total_cpu_ms"]
    print("  %-18s %10s %7s %10s" % ("stage", "CPU ms", "share", "wall ms"))
    for name, c, w in sorted(rows, key=lambda r: -r[1]):
        print("  %-18s %10.3f %6.1f%% %10s" % (name, c, 100 * c / total if total else 0,
                                                  "%.3f" % w if w is not None else "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the cases as a JSON array to this file")
    ap.add_argument("--scale", type=int, default=20, help="R-MAT scale (default 20)")
    ap.add_argument("--seconds", type=float, default=5.0, help="seconds per window (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="windows per path, the paths alternating (default 3)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed batches before each window (default 5)")
    ap.add_argument("--paths", default="thrift,ucx", help="comma-separated, of thrift and ucx (default both)")
    ap.add_argument("--work-dir", help="keep the dataset here (default: a temporary folder, removed)")
    a = ap.parse_args()
    if a.scale < 10 or a.scale > 24 or a.seconds <= 0 or a.rounds < 1 or a.warmup < 0:
        ap.error("--scale must be in [10, 24], --seconds > 0, --rounds >= 1, --warmup >= 0")
    paths = a.paths.split(",")
    unknown = set(paths) - {"thrift", "ucx"}
    if unknown or not paths:
        ap.error("unknown path(s) %s (known: thrift, ucx)" % ", ".join(sorted(unknown)))

    import torch
    import fanout

    work = a.work_dir or tempfile.mkdtemp(prefix="fanout-bench-stages-")
    data = os.path.join(work, "rmat%d-2-random" % a.scale)
    try:
        if not os.path.isfile(os.path.join(data, "meta.json")):
            print("partitioning R-MAT scale %d into 2 random parts ..." % a.scale, flush=True)
            fanout.partition(None, data, format="rmat", parts=2, method="random", rmat_scale=a.scale,
                             feature_dim=128, direction="in", force=True)
        clusters = {}
        for path in paths:
            args = ["--local-socket", "off"]
            lc = fanout.LocalCluster(data, data_plane="tcp" if path == "thrift" else "ucx",
                                     startup_timeout_s=600, server_args=args).start()
            clusters[path] = lc
        windows = {p: [] for p in paths}
        for r in range(a.rounds):
            for path in paths:
                lc = clusters[path]
                cluster = lc.cluster(data_plane="tcp" if path == "thrift" else "ucx")
                seeds = torch.randint(0, cluster.num_nodes, (cluster.num_nodes,),
                                      generator=torch.Generator().manual_seed(2024 + r))
                loader = fanout.NodeLoader(cluster, seeds, num_neighbors=[15, 10, 5], batch_size=1024,
                                           shuffle=True, seed=r, drop_last=True, labels=True)
                try:
                    w = window(loader, lc, a.seconds, a.warmup)
                    used = {x["path"] for x in loader.stats()["paths"]}
                finally:
                    loader.close()
                if used != {path}:
                    raise SystemExit("%s: the loader's partitions went by %s, not %s only" % (path, used, path))
                windows[path].append(w)
                print("%s round %d: %.2f ms of CPU per batch (%.1f batches per CPU-s), %d batches"
                      % (path, r + 1, w["total_cpu_ms"], w["batches_per_cpu_s"], w["batches"]), flush=True)
        cases = []
        for path in paths:
            m = median_of(windows[path])
            print_table(path, m)
            stages = {s: m["cpu_ms"][s] for s in m["cpu_ms"]}
            largest = max((s for s in stages if s != "produce"), key=lambda s: stages[s])
            cases.append(dict(case="stages", path=path, scale=a.scale, rounds=a.rounds, largest=largest,
                              cpu=open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": "),
                              **m))
            print("  largest: %s" % largest, flush=True)
    finally:
        for lc in locals().get("clusters", {}).values():
            lc.stop()
        if not a.work_dir:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(cases, f, indent=2)
        print("wrote %s" % a.json)


if __name__ == "__main__":
    sys.exit(main())
