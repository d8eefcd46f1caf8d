"""A peer's side of `./run bench peers`, case in_process (bench/peers_bench.py).

Run with the peer's own interpreter (its venv under build/peers/, or the PyG
venv build/pydeps): it loads the graph the bench wrote as NumPy files
(GRAPH/indptr.npy, GRAPH/indices.npy: an int64 CSR whose row v holds v's
in-neighbors, the rows every system samples) and the round's seed order
(--order: int64 train ids shuffled by the bench; batch b is its b-th slice of
--batch ids, wrapping), builds the system's own in-process structure from them
(not timed), and samples [15,10,5] batches on one thread pinned to --cpu for
--seconds after --warmup batches, through each system's documented sampling
call:

- pyg: torch_geometric.sampler.NeighborSampler on a CSC SparseTensor
  (torch-sparse's neighbor_sample: PyG's CPU sampler without pyg-lib);
- dgl: GraphBolt's FusedCSCSamplingGraph with its ItemSampler and
  NeighborSampler datapipe (the documented DGL 2.x mini-batch pipeline),
  iterated in this process;
- glt: graphlearn_torch's NeighborSampler on a CPU-mode Graph (a seed set:
  its RNG is otherwise re-seeded per call, several times slower).

It prints one JSON object: batches, sampled edges, nodes, wall and CPU seconds
of the process, the versions.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def batches(torch, order, batch):
    """Batch b: the b-th slice of `batch` ids of the order (a NumPy array), wrapping; as tensors."""
    for ids in slices(order, batch):
        yield torch.from_numpy(np.ascontiguousarray(ids))


def slices(order, batch):
    at = 0
    n = order.shape[0]
    while True:
        if at + batch <= n:
            yield order[at : at + batch]
            at = (at + batch) % n
        else:
            yield np.concatenate([order[at:], order[: batch - (n - at)]])
            at = batch - (n - at)


def make_pyg(torch, indptr, indices, fanouts):
    import torch_geometric
    from torch_geometric.data import Data
    from torch_geometric.sampler import NeighborSampler, NodeSamplerInput
    from torch_sparse import SparseTensor

    n = indptr.numel() - 1
    # adj_t: row v (the target) holds its sources, which is how PyG keeps a
    # CSC adjacency; its sampler reads it without conversion.
    adj_t = SparseTensor(rowptr=indptr, col=indices, sparse_sizes=(n, n), is_sorted=True, trust_data=True)
    data = Data(adj_t=adj_t, num_nodes=n)
    sampler = NeighborSampler(data, num_neighbors=fanouts)

    def sample(seeds):
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=seeds))
        return out.row.numel(), out.node.numel()

    versions = {"torch_geometric": torch_geometric.__version__, "torch_sparse": __import__("torch_sparse").__version__}
    return sample, versions, "torch_geometric.sampler.NeighborSampler (torch-sparse)"


def make_dgl(torch, indptr, indices, fanouts, order, batch):
    import dgl
    import dgl.graphbolt as gb

    graph = gb.fused_csc_sampling_graph(indptr, indices)
    # The documented pipeline over the round's order (no shuffle: the order is
    # already the bench's shuffle, so its batches are the other systems'):
    # ItemSampler, then sample_neighbor with the fanouts; started again at the
    # end of a pass.
    item_set = gb.ItemSet(order, names="seed_nodes")
    state = {"it": None}

    def start():
        pipe = gb.ItemSampler(item_set, batch_size=batch, shuffle=False, drop_last=True)
        # GraphBolt's fanouts run from the outermost layer in: its [5, 10, 15]
        # samples 15 at the seeds, as PyG's (and Fanout's) [15, 10, 5] does.
        state["it"] = iter(pipe.sample_neighbor(graph, list(reversed(fanouts))))

    start()

    def sample(_seeds):
        try:
            mb = next(state["it"])
        except StopIteration:
            start()
            mb = next(state["it"])
        edges = sum(int(sg.sampled_csc.indices.numel()) for sg in mb.sampled_subgraphs)
        return edges, int(mb.input_nodes.numel())

    versions = {"dgl": dgl.__version__}
    return sample, versions, "dgl.graphbolt ItemSampler + sample_neighbor (FusedCSCSamplingGraph)"


def make_glt(torch, indptr, indices, fanouts, seed):
    import graphlearn_torch as glt

    topo = glt.data.Topology((indptr, indices), input_layout="CSR", layout="CSR")
    graph = glt.data.Graph(topo, mode="CPU")
    sampler = glt.sampler.NeighborSampler(
        graph, num_neighbors=fanouts, device=torch.device("cpu"), edge_dir="out", seed=seed
    )

    def sample(seeds):
        out = sampler.sample_from_nodes(glt.sampler.NodeSamplerInput(node=seeds))
        return out.row.numel(), out.node.numel()

    versions = {"graphlearn_torch": getattr(glt, "__version__", "0.2.4")}
    return sample, versions, "graphlearn_torch.sampler.NeighborSampler (CPU graph)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", required=True, choices=["pyg", "dgl", "glt"])
    ap.add_argument("--graph", required=True, help="folder with indptr.npy and indices.npy")
    ap.add_argument("--order", required=True, help="int64 .npy of seed ids in batch order")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--fanouts", default="15,10,5")
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    os.sched_setaffinity(0, {args.cpu})
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    indptr = torch.from_numpy(np.load(os.path.join(args.graph, "indptr.npy"), mmap_mode=None))
    indices = torch.from_numpy(np.load(os.path.join(args.graph, "indices.npy"), mmap_mode=None))
    order_ids = np.load(args.order)
    order = torch.from_numpy(order_ids)
    if args.system == "pyg":
        sample, versions, what = make_pyg(torch, indptr, indices, fanouts)
    elif args.system == "dgl":
        sample, versions, what = make_dgl(torch, indptr, indices, fanouts, order, args.batch)
    else:
        sample, versions, what = make_glt(torch, indptr, indices, fanouts, args.seed)
    it = batches(torch, order_ids, args.batch)
    for _ in range(args.warmup):
        sample(next(it))
    edges = nodes = count = 0
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    deadline = start + args.seconds
    while True:
        e, v = sample(next(it))
        edges += e
        nodes += v
        count += 1
        if time.perf_counter() >= deadline:
            break
    wall = time.perf_counter() - start
    cpu = cpu_seconds() - cpu0
    versions["torch"] = torch.__version__
    versions["python"] = "%d.%d.%d" % sys.version_info[:3]
    print(
        json.dumps(
            {
                "system": args.system,
                "batches": count,
                "edges": edges,
                "nodes": nodes,
                "wall_s": wall,
                "cpu_s": cpu,
                "versions": versions,
                "sampler": what,
            }
        )
    )


if __name__ == "__main__":
    main()
