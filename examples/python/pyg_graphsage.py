"""GraphSAGE on Cora with PyTorch Geometric's own loader and layers, sampling through Fanout's servers.

Adapted from PyG's GraphSAGE example: torch_geometric.nn.SAGEConv, torch_geometric.loader.NodeLoader.
The one change from training on an in-memory Data is the data argument and the sampler:

    data = (fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster))      # was: Data(...)
    sampler = fanout.pyg.NeighborSampler(cluster, num_neighbors=[10, 10])

PyG's DataLoader workers (--num-workers) each connect to the servers on their own.

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


def normalize(x):
    return x / x.sum(1, keepdim=True).clamp_min(1)


def run(cluster, epochs, seed, num_workers, log=print):
    torch.manual_seed(seed)
    train, val, test = (cluster.split_nodes(s) for s in ("train", "val", "test"))
    model = SAGE(cluster.feature_dim, 64, cluster.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    train_loader = loader(cluster, train, [10, 10], True, num_workers, seed)

    @torch.no_grad()
    def accuracy(nodes):
        model.eval()
        right = 0
        for b in loader(cluster, nodes, [-1, -1], False, 0, seed):
            pred = model(normalize(b.x), b.edge_index)[:b.batch_size].argmax(1)
            right += int((pred == b.y[:b.batch_size]).sum())
        return right / nodes.numel()

    for epoch in range(1, epochs + 1):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--dataset", help="a fanout dataset folder (default: Cora from datasets/, partitioned in 2)")
    src.add_argument("--cluster", help="a cluster file naming running servers")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--num-workers", type=int, default=2, help="PyG DataLoader worker processes")
    ap.add_argument("--call-timeout-ms", type=int, default=30000, help="a request's deadline (default 30000)")
    ap.add_argument("--health-check-ms", type=int, default=1000,
                    help="replica health-check interval; requests on a replica found down move at once "
                         "(default 1000, 0 = off)")
    a = ap.parse_args()
    if a.epochs < 1:
        ap.error("--epochs must be >= 1")
    timeouts = dict(call_timeout_ms=a.call_timeout_ms, health_check_ms=a.health_check_ms)
    if a.cluster:
        r = run(fanout.Cluster.from_file(a.cluster, **timeouts), a.epochs, a.seed, a.num_workers)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            data = a.dataset
            if data is None:
                root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
                data = fanout.partition(os.path.join(root, "datasets", "data", "planetoid", "cora"),
                                        os.path.join(tmp, "cora2"), format="planetoid", parts=2)
            with fanout.LocalCluster(data) as lc:
                r = run(lc.cluster(**timeouts), a.epochs, a.seed, a.num_workers)
    print("test_accuracy=%.3f val_accuracy=%.3f" % (r["test_acc"], r["val_acc"]))


if __name__ == "__main__":
    main()
