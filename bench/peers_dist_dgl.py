"""DistDGL's side of `./run bench peers`, cases distributed_best and distributed_like_for_like.

Run with the DGL venv's interpreter (build/peers/venv-dgl), by bench/peers_bench.py:

  partition GRAPH OUT   the bench's graph (GRAPH/indptr.npy, indices.npy: row v holds v's in-neighbors;
                        features.npy; train.npy) as a DGLGraph with ndata feat and train_mask, split in 2 by
                        dgl.distributed.partition_graph (random, as the Fanout side's partitions), with the
                        new id of every original node (OUT/orig_nids.npy).
  server                one DistGraphServer, configured by the DGL_* environment the bench sets (DistDGL's
                        launch.py sets the same); it serves until the trainer is done.
  trainer OUT           dgl.distributed.initialize, a DistGraph, and DistNodeDataLoader batches
                        (dgl.dataloading.NeighborSampler, fanouts [5, 10, 15] in DGL's outermost-first order =
                        15 at the seeds) of 1,024 train ids, each batch's features read from g.ndata['feat']
                        (the KVStore: the local partition's from shared memory, the other's over RPC); for
                        --seconds after --warmup batches. Prints one JSON object: batches, sampled edges,
                        wall seconds, and the CPU seconds of this process and of --server-pids over the same
                        window.

DistDGL keeps one partition per machine; here the two "machines" are two servers on this host, the second in
a private /dev/shm (the bench starts it under `unshare --mount`), so its shared memory does not collide with
the first's. The trainer is machine 0's client: partition 0 through shared memory, partition 1 over DGL's RPC
(its best same-host setting: DistDGL maps only its own machine's partition).
"""

import argparse
import json
import os
import sys

import numpy as np

from peers_common import add_partition_command, add_run_options, endless, measure


def partition(args):
    import dgl
    import torch

    indptr = np.load(os.path.join(args.graph, "indptr.npy"))
    indices = np.load(os.path.join(args.graph, "indices.npy"))
    n = indptr.shape[0] - 1
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    g = dgl.graph((torch.from_numpy(indices), torch.from_numpy(dst)), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(np.load(os.path.join(args.graph, "features.npy")))
    mask = torch.zeros(n, dtype=torch.bool)
    mask[torch.from_numpy(np.load(os.path.join(args.graph, "train.npy")))] = True
    g.ndata["train_mask"] = mask
    orig_nids, _ = dgl.distributed.partition_graph(
        g, "peers", 2, args.out, part_method="random", return_mapping=True
    )
    np.save(os.path.join(args.out, "orig_nids.npy"), orig_nids.numpy())
    print(json.dumps({"partitioned": args.out, "nodes": n, "edges": int(indices.shape[0])}))


def server(_args):
    import dgl

    dgl.distributed.initialize(os.environ["DGL_IP_CONFIG"])


def trainer(args):
    os.sched_setaffinity(0, set(int(c) for c in args.cpus.split(",")))
    import dgl
    import torch

    torch.set_num_threads(1)
    dgl.distributed.initialize(os.environ["DGL_IP_CONFIG"])
    g = dgl.distributed.DistGraph("peers", part_config=os.path.join(args.out, "peers.json"))
    orig = np.load(os.path.join(args.out, "orig_nids.npy"))
    new_of = np.empty_like(orig)
    new_of[orig] = np.arange(orig.shape[0], dtype=orig.dtype)
    train = torch.from_numpy(new_of[np.load(os.path.join(args.graph, "train.npy"))])
    fanouts = [int(f) for f in args.fanouts.split(",")]
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))
    loader = dgl.dataloading.DistNodeDataLoader(g, train, sampler, batch_size=args.batch, shuffle=True, drop_last=True)
    feat = g.ndata["feat"]
    pids = [int(p) for p in args.server_pids.split(",") if p]

    it = endless(loader)

    def one():
        input_nodes, _seeds, blocks = next(it)
        x = feat[input_nodes]
        return sum(int(b.num_edges()) for b in blocks), int(input_nodes.numel()), int(x.numel()) * 4

    res = measure(one, args.warmup, args.seconds, pids)
    print(json.dumps(dict(
        res, system="distdgl", versions={"dgl": dgl.__version__, "torch": torch.__version__},
        setting="DistNodeDataLoader, trainer on machine 0 (partition 0 in shared memory, 1 over RPC)")), flush=True)
    # The servers stop when the bench signals them; exiting here without
    # dgl.distributed.exit_client's barrier keeps a slow server from holding the bench.
    os._exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_partition_command(sub)
    sub.add_parser("server")
    t = sub.add_parser("trainer")
    t.add_argument("out")
    t.add_argument("--graph", required=True)
    add_run_options(t)
    t.add_argument("--server-pids", default="")
    t.add_argument("--cpus", default="0")
    args = ap.parse_args()
    {"partition": partition, "server": server, "trainer": trainer}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
