"""GraphSAGE on Cora with LABOR-0 beside neighbor sampling at the same fanouts, in the same run.

LABOR (layer-neighbor sampling; Balin and Catalyurek, NeurIPS 2023) keeps each node's expected fanout
but lets the nodes of a hop share their random draws, so a batch reaches fewer distinct nodes and
moves fewer feature rows. Its batches carry importance weights (``edge_weight``): the sum of
edge_weight * h over a node's sampled neighbors is an unbiased estimate of the mean over all of them,
which is what the model's mean aggregation uses here (docs/SAMPLERS.md).

Prints, per sampler, the mean test accuracy over the seeds and the feature bytes per training batch.

  ./run example labor_graphsage                         # Cora through 2 local servers, 5 seeds
  python3 examples/python/labor_graphsage.py --cluster cluster.json --seeds 0 1 2

Needs the fanout package on the path: PYTHONPATH=build/python (after ./run build).
"""
import argparse
import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fanout  # noqa: E402
import train_graphsage  # noqa: E402  (the model, features and evaluation of the plain example)


class WeightedSAGEConv(train_graphsage.SAGEConv):
    """PyG's SAGEConv (mean): with ``edge_weight`` (LABOR), the weighted sum estimates the mean."""

    def forward(self, x, edge_index, edge_weight=None):
        if edge_weight is None:
            return super().forward(x, edge_index)
        src, dst = edge_index[0], edge_index[1]
        agg = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src) * edge_weight.unsqueeze(1))
        return self.lin_l(agg) + self.lin_r(x)


class GraphSage(torch.nn.Module):
    def __init__(self, d_in, hidden, classes, dropout):
        super().__init__()
        self.conv1 = WeightedSAGEConv(d_in, hidden)
        self.conv2 = WeightedSAGEConv(hidden, classes)
        self.p = dropout

    def forward(self, x, edge_index, edge_weight=None):
        x = F.relu(self.conv1(x, edge_index, edge_weight))
        x = F.dropout(x, self.p, self.training)
        return F.log_softmax(self.conv2(x, edge_index, edge_weight), dim=1)


def train(cluster, sampler, *, epochs=30, seed=0, fanouts=(10, 10), batch_size=64, hidden=64, lr=0.01,
          weight_decay=5e-4, dropout=0.5):
    """Trains with `sampler` ("neighbor" or "labor"); returns test accuracy and feature bytes per batch."""
    torch.manual_seed(seed)
    model = GraphSage(cluster.feature_dim, hidden, cluster.num_classes, dropout)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    loader = fanout.NodeLoader(cluster, "train", num_neighbors=list(fanouts), batch_size=batch_size, seed=seed,
                               edge_ids=False, sampler=sampler)
    rows = batches = 0
    for _ in range(epochs):
        model.train()
        for b in loader:
            opt.zero_grad()
            out = model(train_graphsage.prepare(b), b.edge_index, b.edge_weight)[:b.batch_size]
            F.nll_loss(out, b.y[:b.batch_size]).backward()
            opt.step()
            rows += b.x.size(0)
            batches += 1
    # Evaluation takes every neighbor (no sampling: no weights needed).
    acc = train_graphsage.accuracy(model, cluster, "test", fanouts, 2)
    return {"test_acc": acc, "feature_bytes_per_batch": rows * cluster.feature_dim * 4 / batches,
            "nodes_per_batch": rows / batches}


def compare(cluster, seeds, epochs=30, fanouts=(10, 10), out=print):
    res = {}
    for sampler in ("neighbor", "labor"):
        runs = [train(cluster, sampler, epochs=epochs, seed=s, fanouts=fanouts) for s in seeds]
        accs = [r["test_acc"] for r in runs]
        res[sampler] = {"test_acc": accs, "mean_test_acc": sum(accs) / len(accs),
                        "feature_bytes_per_batch": sum(r["feature_bytes_per_batch"] for r in runs) / len(runs),
                        "nodes_per_batch": sum(r["nodes_per_batch"] for r in runs) / len(runs)}
        out("%-8s test accuracy %s mean %.3f; %.0f nodes and %.1f KB of features per batch"
            % (sampler, " ".join("%.3f" % a for a in accs), res[sampler]["mean_test_acc"],
               res[sampler]["nodes_per_batch"], res[sampler]["feature_bytes_per_batch"] / 1e3))
    res["accuracy_difference"] = res["labor"]["mean_test_acc"] - res["neighbor"]["mean_test_acc"]
    res["feature_bytes_ratio"] = (res["labor"]["feature_bytes_per_batch"]
                                  / res["neighbor"]["feature_bytes_per_batch"])
    out("labor - neighbor: %+.3f test accuracy; %.3f of the feature bytes per batch"
        % (res["accuracy_difference"], res["feature_bytes_ratio"]))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", help="a fanout dataset folder (default: Cora from datasets/, partitioned in 2)")
    ap.add_argument("--cluster", help="a cluster file naming running servers (instead of --dataset)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    ap.add_argument("--json", help="write the results to this file")
    a = ap.parse_args()
    if a.epochs < 1:
        ap.error("--epochs must be >= 1")
    lc = None
    with tempfile.TemporaryDirectory() as tmp:
        if a.cluster:
            cluster = fanout.Cluster.from_file(a.cluster)
        else:
            ds = a.dataset
            if ds is None:
                root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
                ds = fanout.partition(os.path.join(root, "datasets", "data", "planetoid", "cora"),
                                      os.path.join(tmp, "cora2"), format="planetoid", parts=2)
            lc = fanout.LocalCluster(ds).start()
            cluster = lc.cluster()
        try:
            res = compare(cluster, a.seeds, a.epochs, tuple(a.fanouts))
        finally:
            if lc:
                lc.stop()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)


if __name__ == "__main__":
    main()
