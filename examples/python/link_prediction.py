"""Link prediction on Cora with fanout.LinkLoader (GraphSAGE encoder, dot-product decoder).

What it does, end to end:
1. Splits Cora's undirected edges (Planetoid files in datasets/data/planetoid/cora)
   into train / val / test (85 / 5 / 10 %, by --seed), and writes a Planetoid
   folder whose graph holds the train edges only: the model never passes
   messages over an edge it is tested on.
2. Partitions it (2 parts) and serves it with a LocalCluster (or uses --cluster
   servers that serve such a folder, with --split-json naming its split).
3. Trains on LinkLoader batches of train edges with binary strict negatives
   (never an existing edge of the served graph), BCE on dot-product scores.
4. Scores the test edges beside as many negative pairs (uniform over the pairs
   that are no edge of the whole graph), with all neighbors, and prints

       test_auc=0.912 degree_product_auc=0.701

   the second figure being a trivial baseline computed in the same run: the
   product of the two end nodes' degrees in the train graph.

  PYTHONPATH=build/python python3 examples/python/link_prediction.py [--epochs 20] [--seed 0] [--json out.json]
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile

import torch
import torch.nn.functional as F

import fanout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_graphsage import SAGEConv  # noqa: E402  (the same layer as the node-classification example)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CORA = os.path.join(ROOT, "datasets", "data", "planetoid", "cora")


class Encoder(torch.nn.Module):
    def __init__(self, d_in, hidden, out, dropout):
        super().__init__()
        self.conv1 = SAGEConv(d_in, hidden)
        self.conv2 = SAGEConv(hidden, out)
        self.p = dropout

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, self.p, self.training)
        return self.conv2(x, edge_index)


def read_pairs(path):
    """Cora's undirected edges as sorted (u, v) pairs, u < v, each once."""
    pairs = set()
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 2:
                raise ValueError("%s:%d: expected two node ids, got %r" % (path, line_no, line.strip()))
            u, v = int(parts[0]), int(parts[1])
            if u != v:
                pairs.add((min(u, v), max(u, v)))
    return sorted(pairs)


def split_edges(pairs, seed, val=0.05, test=0.10):
    rng = random.Random(seed)
    pairs = list(pairs)
    rng.shuffle(pairs)
    n_test, n_val = int(len(pairs) * test), int(len(pairs) * val)
    return pairs[n_test + n_val:], pairs[n_test:n_test + n_val], pairs[:n_test]


def write_train_graph(src_dir, train, out_dir):
    """A Planetoid folder equal to src_dir but for edges.txt: the train pairs, both ways."""
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(src_dir):
        if name != "edges.txt":
            shutil.copyfile(os.path.join(src_dir, name), os.path.join(out_dir, name))
    with open(os.path.join(out_dir, "edges.txt"), "w") as f:
        for u, v in train:
            f.write("%d %d\n%d %d\n" % (u, v, v, u))


def id_map(cluster):
    """original (file) id -> served global id, read through the servers."""
    ids = torch.full((cluster.num_nodes,), -1, dtype=torch.long)
    for b in fanout.NodeLoader(cluster, torch.arange(cluster.num_nodes), num_neighbors=[0], batch_size=4096,
                               shuffle=False, features=False, labels=False, original_ids=True):
        ids[b.original_id] = b.n_id
    if int((ids < 0).sum()):
        raise RuntimeError("some original ids were not served")
    return ids


def auc(scores, labels):
    """Area under the ROC curve (Mann-Whitney U, ties counted half)."""
    order = torch.argsort(scores)
    s, y = scores[order].tolist(), labels[order].tolist()
    ranks, i = [0.0] * len(s), 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    pos = sum(1 for v in y if v == 1)
    neg = len(y) - pos
    rank_sum = sum(r for r, v in zip(ranks, y) if v == 1)
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


def normalize(x):
    return x / x.sum(1, keepdim=True).clamp_min(1)


@torch.no_grad()
def score(model, cluster, edge_index, fanouts):
    """Dot-product scores of edges (served ids), embeddings from all neighbors."""
    loader = fanout.LinkLoader(cluster, edge_index, num_neighbors=[-1] * len(fanouts), batch_size=1024,
                               shuffle=False, labels=False, edge_ids=False)
    model.eval()
    out = []
    for b in loader:
        h = model(normalize(b.x), b.edge_index)
        out.append((h[b.edge_label_index[0]] * h[b.edge_label_index[1]]).sum(1))
    return torch.cat(out)


def negatives(all_pairs, num_nodes, count, seed):
    """`count` node pairs (file ids) that are no edge of the whole graph, uniform."""
    rng = random.Random(seed)
    known, out = set(all_pairs), []
    while len(out) < count:
        u, v = rng.randrange(num_nodes), rng.randrange(num_nodes)
        if u != v and (min(u, v), max(u, v)) not in known:
            out.append((u, v))
    return out


def run(cluster, split, *, epochs=20, seed=0, hidden=128, out_dim=64, lr=0.01, dropout=0.3, fanouts=(10, 10),
        batch_size=256, num_workers=2, log=print):
    """Trains and evaluates; returns the metrics (AUCs, losses)."""
    torch.manual_seed(seed)
    to_served = id_map(cluster)
    train, val, test = split["train"], split["val"], split["test"]

    def served(pairs):
        t = torch.tensor(pairs, dtype=torch.long).t()
        return to_served[t]

    model = Encoder(cluster.feature_dim, hidden, out_dim, dropout)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loader = fanout.LinkLoader(cluster, served(train), num_neighbors=list(fanouts), batch_size=batch_size,
                               seed=seed, num_workers=num_workers, labels=False, edge_ids=False,
                               neg_sampling=fanout.NegativeSampling("binary", amount=1))
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        total = 0.0
        for b in loader:
            opt.zero_grad()
            h = model(normalize(b.x), b.edge_index)
            logits = (h[b.edge_label_index[0]] * h[b.edge_label_index[1]]).sum(1)
            loss = F.binary_cross_entropy_with_logits(logits, b.edge_label)
            loss.backward()
            opt.step()
            total += float(loss)
        losses.append(total / len(loader))
        if log and (epoch % 5 == 0 or epoch == epochs):
            log("epoch %3d loss %.4f" % (epoch, losses[-1]))

    num_nodes = cluster.num_nodes
    all_pairs = train + val + test
    result = {"losses": losses}
    degree = torch.zeros(num_nodes)
    for u, v in train:
        degree[u] += 1
        degree[v] += 1
    for name, pairs, neg_seed in (("val", val, seed + 1000), ("test", test, seed + 2000)):
        neg = negatives(all_pairs, num_nodes, len(pairs), neg_seed)
        labels = torch.cat([torch.ones(len(pairs)), torch.zeros(len(neg))])
        s = score(model, cluster, served(pairs + neg), fanouts)
        ends = torch.tensor(pairs + neg, dtype=torch.long)
        result[name + "_auc"] = auc(s, labels)
        result[name + "_degree_product_auc"] = auc(degree[ends[:, 0]] * degree[ends[:, 1]], labels)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0, help="edge split, model and sampling seed")
    ap.add_argument("--data-plane", default="auto", choices=["auto", "ucx", "tcp"])
    ap.add_argument("--call-timeout-ms", type=int, default=30000, help="a request's deadline (default 30000)")
    ap.add_argument("--health-check-ms", type=int, default=1000,
                    help="replica health-check interval; requests on a replica found down move at once "
                         "(default 1000, 0 = off)")
    ap.add_argument("--json", help="write the metrics to this file")
    a = ap.parse_args()
    if a.epochs < 1:
        ap.error("--epochs must be >= 1")
    pairs = read_pairs(os.path.join(CORA, "edges.txt"))
    train, val, test = split_edges(pairs, a.seed)
    with tempfile.TemporaryDirectory(prefix="fanout-link-") as tmp:
        write_train_graph(CORA, train, os.path.join(tmp, "cora-train"))
        data = fanout.partition(os.path.join(tmp, "cora-train"), os.path.join(tmp, "cora-train-2"),
                                format="planetoid", parts=2)
        print("Cora: %d undirected edges; train %d, val %d, test %d (test edges are not served)"
              % (len(pairs), len(train), len(val), len(test)), flush=True)
        with fanout.LocalCluster(data, data_plane=a.data_plane) as lc:
            cluster = lc.cluster(call_timeout_ms=a.call_timeout_ms, health_check_ms=a.health_check_ms)
            r = run(cluster, {"train": train, "val": val, "test": test}, epochs=a.epochs, seed=a.seed,
                    log=lambda m: print(m, flush=True))
    print("val_auc=%.3f degree_product_auc=%.3f" % (r["val_auc"], r["val_degree_product_auc"]))
    print("test_auc=%.3f degree_product_auc=%.3f" % (r["test_auc"], r["test_degree_product_auc"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f)
    return 0 if r["test_auc"] > r["test_degree_product_auc"] else 1


if __name__ == "__main__":
    sys.exit(main())
