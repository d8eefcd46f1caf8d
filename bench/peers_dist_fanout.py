"""Fanout's side of `./run bench peers`, cases distributed_best and distributed_like_for_like.

Run by bench/peers_bench.py with the interpreter that imports the fanout package (PYTHONPATH=build/python):

  partition GRAPH OUT   the bench's graph (GRAPH/indptr.npy, indices.npy: row v holds v's in-neighbors;
                        features.npy; train.npy) as a PyG Data (edge_index, x, train_mask) through
                        fanout.partition_pyg into 2 partitions, random (as DistDGL's), in-neighbors.
  run OUT --mode M      starts the 2 fanout-servers, then a NodeLoader ([15, 10, 5], batches of 1,024 train ids,
                        features on) for --seconds after --warmup batches, and prints one JSON object: batches,
                        sampled edges, wall seconds, the CPU seconds of this process and of each server over the
                        same window, and each partition's path as the loader used it. Modes:
                          best    both servers export their partitions here and the loader reads both
                                  (data_plane "auto", the default cluster);
                          thrift  partition 0 through its export, partition 1's server without an export
                                  (--local-socket off) and without UCX (--data-plane off): over Thrift;
                          ucx     the same with partition 1's server offering UCX: over UCX (tcp transport).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from peers_common import add_partition_command, add_run_options, endless, measure


def partition(args):
    import torch
    from torch_geometric.data import Data

    import fanout

    indptr = np.load(os.path.join(args.graph, "indptr.npy"))
    indices = np.load(os.path.join(args.graph, "indices.npy"))
    n = indptr.shape[0] - 1
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    mask = torch.zeros(n, dtype=torch.bool)
    mask[torch.from_numpy(np.load(os.path.join(args.graph, "train.npy")))] = True
    data = Data(
        edge_index=torch.stack([torch.from_numpy(indices), torch.from_numpy(dst)]),
        x=torch.from_numpy(np.load(os.path.join(args.graph, "features.npy"))),
        train_mask=mask,
        num_nodes=n,
    )
    t = time.time()
    fanout.partition_pyg(data, args.out, parts=2, method="random", force=True, direction="in",
                         scratch_dir=os.path.dirname(os.path.abspath(args.out)))
    print(json.dumps({"partitioned": args.out, "nodes": n, "edges": int(indices.shape[0]),
                      "seconds": time.time() - t}))


def start_server(binary, dataset, part, extra, work):
    """One fanout-server (this process's child, gone with it), ready: (process, "host:port")."""
    from fanout.local_cluster import read_ready_record

    ready = os.path.join(work, "ready-%d.json" % part)
    log_path = os.path.join(work, "server-%d.log" % part)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([binary, "--dataset", dataset, "--partition", str(part), "--port", "0",
                                 "--admin-port", "-1", "--ready-file", ready, "--parent-pid", str(os.getpid())]
                                + extra, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 300
    while True:
        record = read_ready_record(ready)
        if record is not None:
            return proc, "%s:%d" % (record["host"], record["rpc_port"])
        if proc.poll() is not None:
            raise SystemExit("fanout-server for partition %d exited (%d): see %s" % (part, proc.returncode, log_path))
        if time.time() > deadline:
            proc.kill()
            raise SystemExit("fanout-server for partition %d did not get ready in 300 s" % part)
        time.sleep(0.1)


def run(args):
    import fanout

    binary = os.path.join(args.bin_dir, "fanout-server")
    remote = {"best": [], "thrift": ["--local-socket", "off", "--data-plane", "off"],
              "ucx": ["--local-socket", "off"]}[args.mode]
    work = tempfile.mkdtemp(prefix="fanout-peers-")
    procs = []
    try:
        p0, a0 = start_server(binary, args.out, 0, [], work)
        procs.append(p0)
        p1, a1 = start_server(binary, args.out, 1, remote, work)
        procs.append(p1)
        cluster = fanout.Cluster([a0, a1], data_plane="auto")
        loader = fanout.NodeLoader(cluster, "train", num_neighbors=[int(f) for f in args.fanouts.split(",")],
                                   batch_size=args.batch, shuffle=True, seed=args.seed, drop_last=True)

        it = endless(loader)

        def one():
            b = next(it)
            return int(b.edge_index.size(1)), int(b.n_id.numel()), int(b.x.numel()) * b.x.element_size()

        res = measure(one, args.warmup, args.seconds, [p.pid for p in procs])
        paths = loader.stats().get("paths")
        loader.close()
        settings = {"best": "NodeLoader, both partitions read through their exports (data_plane auto)",
                    "thrift": "NodeLoader, partition 0 through its export, partition 1 over Thrift",
                    "ucx": "NodeLoader, partition 0 through its export, partition 1 over UCX"}
        print(json.dumps(dict(res, system="fanout", mode=args.mode, paths=paths, setting=settings[args.mode],
                              versions={"fanout": getattr(fanout, "__version__", None)})), flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["rm", "-rf", work])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_partition_command(sub)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--mode", choices=["best", "thrift", "ucx"], required=True)
    r.add_argument("--bin-dir", required=True)
    add_run_options(r)
    r.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    {"partition": partition, "run": run}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
