"""GraphLearn-for-PyTorch's side of `./run bench peers`, case distributed_best (its server-client mode).

Run with the GLT venv's interpreter (build/peers/venv-glt), by bench/peers_bench.py:

  partition GRAPH OUT   the bench's graph (GRAPH/indptr.npy, indices.npy: row v holds v's in-neighbors;
                        features.npy; train.npy) split in 2 by glt.partition.RandomPartitioner, each row kept
                        whole with its node (edge_index = (v, in-neighbor), by_src), and each partition's train
                        ids saved for its server (OUT/train-<p>.pt).
  server RANK OUT       a DistDataset of partition RANK (CPU graph, CPU features) served by
                        glt.distributed.init_server until the client shuts down (--port: the servers' and
                        client's RPC master port).
  trainer OUT           glt.distributed.init_client, then DistNeighborLoader batches of 1,024 train ids
                        ([15, 10, 5], features collected) sampled by one CPU sampling worker on each server
                        (RemoteDistSamplingWorkerOptions, GLT's server-client mode), for --seconds after
                        --warmup batches. Prints one JSON object: batches, sampled edges, feature bytes, wall
                        seconds, and the CPU seconds of this process and of each server's process tree (its
                        sampling workers are processes of their own) over the same window.
"""

import argparse
import json
import os
import sys

import numpy as np

from peers_common import add_partition_command, add_run_options, endless, measure, tree_cpu_seconds


def partition(args):
    import graphlearn_torch as glt
    import torch

    indptr = np.load(os.path.join(args.graph, "indptr.npy"))
    indices = np.load(os.path.join(args.graph, "indices.npy"))
    n = indptr.shape[0] - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    edge_index = torch.stack([torch.from_numpy(rows), torch.from_numpy(indices)])
    feat = torch.from_numpy(np.load(os.path.join(args.graph, "features.npy")))
    glt.partition.RandomPartitioner(args.out, 2, n, edge_index, node_feat=feat, edge_assign_strategy="by_src",
                                    chunk_size=1 << 20).partition()
    pb = torch.load(os.path.join(args.out, "node_pb.pt"))
    train = torch.from_numpy(np.load(os.path.join(args.graph, "train.npy")))
    for p in range(2):
        torch.save(train[pb[train] == p], os.path.join(args.out, "train-%d.pt" % p))
    print(json.dumps({"partitioned": args.out, "nodes": n, "edges": int(indices.shape[0])}))


def server(args):
    import graphlearn_torch as glt
    import torch.multiprocessing as mp

    # The sampling producer makes its counter in the default context and its
    # workers in "spawn"; GLT's own launchers run everything under spawn.
    mp.set_start_method("spawn", force=True)
    dataset = glt.distributed.DistDataset()
    dataset.load(root_dir=args.out, partition_idx=args.rank, graph_mode="CPU", feature_with_gpu=False)
    glt.distributed.init_server(num_servers=2, server_rank=args.rank, dataset=dataset, master_addr="127.0.0.1",
                                master_port=args.port, num_clients=1)
    print("glt server %d ready" % args.rank, flush=True)
    glt.distributed.wait_and_shutdown_server()


def trainer(args):
    import graphlearn_torch as glt
    import torch

    torch.set_num_threads(1)
    glt.distributed.init_client(num_servers=2, num_clients=1, client_rank=0, master_addr="127.0.0.1",
                                master_port=args.port)
    loader = glt.distributed.DistNeighborLoader(
        data=None,
        num_neighbors=[int(f) for f in args.fanouts.split(",")],
        input_nodes=[os.path.join(args.out, "train-%d.pt" % p) for p in range(2)],
        batch_size=args.batch,
        shuffle=True,
        drop_last=True,
        collect_features=True,
        to_device=torch.device("cpu"),
        worker_options=glt.distributed.RemoteDistSamplingWorkerOptions(
            server_rank=[0, 1], num_workers=1, worker_devices=[torch.device("cpu")], worker_concurrency=4,
            master_addr="127.0.0.1", master_port=args.loader_port, buffer_size="1GB", prefetch_size=4,
            worker_key="train"),
    )
    pids = [int(p) for p in args.server_pids.split(",") if p]
    it = endless(loader)

    def one():
        b = next(it)
        return int(b.edge_index.size(1)), int(b.node.numel()), int(b.x.numel()) * b.x.element_size()

    res = measure(one, args.warmup, args.seconds, pids, server_cpu=tree_cpu_seconds)
    print(json.dumps(dict(
        res, system="glt", versions={"graphlearn_torch": "0.2.4", "torch": torch.__version__},
        setting="server-client mode: DistNeighborLoader, one CPU sampling worker per server")), flush=True)
    glt.distributed.shutdown_client()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_partition_command(sub)
    s = sub.add_parser("server")
    s.add_argument("rank", type=int)
    s.add_argument("out")
    s.add_argument("--port", type=int, required=True)
    t = sub.add_parser("trainer")
    t.add_argument("out")
    t.add_argument("--port", type=int, required=True)
    t.add_argument("--loader-port", type=int, required=True)
    add_run_options(t)
    t.add_argument("--server-pids", default="")
    args = ap.parse_args()
    {"partition": partition, "server": server, "trainer": trainer}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
