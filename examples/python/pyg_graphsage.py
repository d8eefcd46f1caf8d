"""GraphSAGE on Cora with PyTorch Geometric's own loader and layers, sampling through Fanout's servers.

Adapted from PyG's GraphSAGE example: torch_geometric.nn.SAGEConv, torch_geometric.loader.NodeLoader.
The one change from training on an in-memory Data is the data argument and the sampler:

    data = (fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster))      # was: Data(...)
    sampler = fanout.pyg.NeighborSampler(cluster, num_neighbors=[10, 10])

PyG's DataLoader workers (--num-workers) each connect to the servers on their own.

Beside it, with --baseline, the same model, split and seeds train on PyG's own in-process NeighborLoader over
an in-memory Data of the same graph (PyG's sampler needs torch-sparse or pyg-lib; ./run installs torch-sparse
where it builds), and both test accuracies are printed: the remote backend should not change what is learned.

  ./run example pyg_graphsage                         # partitions Cora in 2, serves it, trains
  python3 examples/python/pyg_graphsage.py --cluster cluster.json   # servers already running

Needs PyTorch Geometric (pip install torch-geometric; ./run installs the pinned release into
build/pydeps) and the fanout package (PYTHONPATH=build/python).
"""
import argparse
import os
import sys
import tempfile
import time
import warnings

import torch
import torch.nn.functional as F

import fanout

try:
    import fanout.pyg
    from torch_geometric.loader import NodeLoader
    from torch_geometric.nn import SAGEConv
except ImportError as e:
    sys.exit("pyg_graphsage: %s" % e)


class SAGE(torch.nn.Module):
    def __init__(self, d_in, hidden, d_out):
        super().__init__()
        self.conv1 = SAGEConv(d_in, hidden)
        self.conv2 = SAGEConv(hidden, d_out)

    def forward(self, x, edge_index):
        x = F.dropout(F.relu(self.conv1(x, edge_index)), p=0.5, training=self.training)
        return self.conv2(x, edge_index)


def loader(cluster, nodes, fanouts, shuffle, num_workers, seed):
    data = (fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster))
    sampler = fanout.pyg.NeighborSampler(cluster, num_neighbors=fanouts, seed=seed)
    return NodeLoader(data=data, node_sampler=sampler, input_nodes=nodes, batch_size=64, shuffle=shuffle,
                      num_workers=num_workers)


def pyg_baseline_available():
    """Why PyG's own in-process sampler cannot run here (None: it can)."""
    import torch_geometric.typing as t
    if t.WITH_PYG_LIB or t.WITH_TORCH_SPARSE:
        return None
    return "PyG's in-process NeighborLoader needs pyg-lib or torch-sparse, neither imports here"


def in_memory_loaders(cluster):
    """PyG's own NeighborLoader over the same graph held in this process (the baseline): a Data with the
    cluster's features, labels and every stored edge."""
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    n = cluster.num_nodes
    with warnings.catch_warnings():  # the copy is the point here
        warnings.simplefilter("ignore")
        row, col = fanout.pyg.GraphStore(cluster).get_edge_index(edge_type=None, layout="coo")
    fs = fanout.pyg.FeatureStore(cluster)
    data = Data(x=fs.get_tensor(group_name=None, attr_name="x", index=None),
                y=fs.get_tensor(group_name=None, attr_name="y", index=None),
                edge_index=torch.stack([row, col]), num_nodes=n)

    def make(nodes, fanouts, shuffle, num_workers, seed):
        return NeighborLoader(data, num_neighbors=fanouts, input_nodes=nodes, batch_size=64, shuffle=shuffle,
                              num_workers=num_workers)
    return make


def normalize(x):
    return x / x.sum(1, keepdim=True).clamp_min(1)


def run(cluster, epochs, seed, num_workers, log=print, make_loader=None):
    """Trains and evaluates; make_loader(nodes, fanouts, shuffle, num_workers, seed) makes the loaders
    (default: PyG's NodeLoader sampling through Fanout)."""
    if make_loader is None:
        def make_loader(nodes, fanouts, shuffle, workers, s):
            return loader(cluster, nodes, fanouts, shuffle, workers, s)
    torch.manual_seed(seed)
    train, val, test = (cluster.split_nodes(s) for s in ("train", "val", "test"))
    model = SAGE(cluster.feature_dim, 64, cluster.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    train_loader = make_loader(train, [10, 10], True, num_workers, seed)
    sampler = getattr(train_loader, "node_sampler", None)

    @torch.no_grad()
    def accuracy(nodes):
        model.eval()
        right = 0
        for b in make_loader(nodes, [-1, -1], False, 0, seed):
            pred = model(normalize(b.x), b.edge_index)[:b.batch_size].argmax(1)
            right += int((pred == b.y[:b.batch_size]).sum())
        return right / nodes.numel()

    for epoch in range(1, epochs + 1):
        if isinstance(sampler, fanout.pyg.NeighborSampler):
            sampler.set_epoch(epoch)  # fresh samples each epoch (workers start after this)
        model.train()
        t0, total = time.time(), 0.0
        for b in train_loader:
            opt.zero_grad()
            out = model(normalize(b.x), b.edge_index)[:b.batch_size]
            loss = F.cross_entropy(out, b.y[:b.batch_size])
            loss.backward()
            opt.step()
            total += float(loss) * b.batch_size
        if epoch % 5 == 0 or epoch == epochs:
            log("epoch %3d loss %.4f val %.3f (%.2f s)" % (epoch, total / train.numel(), accuracy(val),
                                                           time.time() - t0))
    return {"val_acc": accuracy(val), "test_acc": accuracy(test)}


def compare(cluster, epochs, seeds, num_workers, baseline, log=print):
    """Mean test accuracy over `seeds` through Fanout and, with baseline, through PyG's in-process loader
    on the same graph, split, model and seeds (same run)."""
    out = {"fanout": [run(cluster, epochs, s, num_workers, log)["test_acc"] for s in range(seeds)]}
    if baseline:
        why = pyg_baseline_available()
        if why is None:
            make = in_memory_loaders(cluster)
            out["pyg_in_process"] = [run(cluster, epochs, s, num_workers, log, make)["test_acc"]
                                     for s in range(seeds)]
        else:
            out["baseline_skipped"] = why
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--dataset", help="a fanout dataset folder (default: Cora from datasets/, partitioned in 2)")
    src.add_argument("--cluster", help="a cluster file naming running servers")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=0,
                    help="train with seeds 0..N-1 and print the mean test accuracy (default: one run, --seed)")
    ap.add_argument("--baseline", action="store_true",
                    help="with --seeds: also train on PyG's own in-process NeighborLoader and print both means")
    ap.add_argument("--num-workers", type=int, default=2, help="PyG DataLoader worker processes")
    ap.add_argument("--call-timeout-ms", type=int, default=30000, help="a request's deadline (default 30000)")
    ap.add_argument("--health-check-ms", type=int, default=1000,
                    help="replica health-check interval; requests on a replica found down move at once "
                         "(default 1000, 0 = off)")
    a = ap.parse_args()
    if a.epochs < 1:
        ap.error("--epochs must be >= 1")
    if a.seeds < 0 or (a.baseline and a.seeds < 1):
        ap.error("--seeds must be >= 1 (and is needed by --baseline)")
    timeouts = dict(call_timeout_ms=a.call_timeout_ms, health_check_ms=a.health_check_ms)

    def work(cluster):
        if a.seeds:
            return compare(cluster, a.epochs, a.seeds, a.num_workers, a.baseline)
        return run(cluster, a.epochs, a.seed, a.num_workers)

    if a.cluster:
        r = work(fanout.Cluster.from_file(a.cluster, **timeouts))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            data = a.dataset
            if data is None:
                root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
                data = fanout.partition(os.path.join(root, "datasets", "data", "planetoid", "cora"),
                                        os.path.join(tmp, "cora2"), format="planetoid", parts=2)
            with fanout.LocalCluster(data) as lc:
                r = work(lc.cluster(**timeouts))
    if not a.seeds:
        print("test_accuracy=%.3f val_accuracy=%.3f" % (r["test_acc"], r["val_acc"]))
        return
    mean = sum(r["fanout"]) / len(r["fanout"])
    line = "fanout_mean_test_accuracy=%.3f (seeds %s)" % (mean, " ".join("%.3f" % x for x in r["fanout"]))
    if "pyg_in_process" in r:
        base = sum(r["pyg_in_process"]) / len(r["pyg_in_process"])
        line += " pyg_in_process_mean_test_accuracy=%.3f difference=%+.3f" % (base, mean - base)
    elif "baseline_skipped" in r:
        line += " (baseline skipped: %s)" % r["baseline_skipped"]
    print(line)


if __name__ == "__main__":
    main()
