"""node2vec embeddings of Cora from walks through Fanout's servers, scored by link prediction.

1. Splits Cora's undirected edges 90 / 10 % (train / test, by --seed) and serves a graph holding the
   train edges only (2 partitions, a LocalCluster): no walk crosses a test edge.
2. fanout.RandomWalkLoader walks from every node each epoch (node2vec's second-order walks with return
   parameter p and in-out parameter q, the servers answering "is x a neighbor of the previous node").
3. Trains skip-gram with negative sampling on the walks (window 5, 5 negatives per pair; Perozzi et al.
   2014, Grover and Leskovec 2016) in plain torch.
4. Scores the test edges beside as many pairs that are no edge of the whole graph by the cosine
   similarity of their embeddings and prints the AUC beside a baseline computed in the same run, the product of the
   two end nodes' degrees in the train graph:

       test_auc=0.839 degree_product_auc=0.653

  ./run example node2vec [--epochs 3] [--p 1 --q 0.5] [--seed 0] [--json out.json]
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
from link_prediction import CORA, auc, id_map, negatives, read_pairs, split_edges, write_train_graph  # noqa: E402


def skipgram_pairs(walks, window):
    """(center, context) pairs of every walk within `window` steps, both directions; -1 never paired."""
    src, dst = [], []
    for o in range(1, window + 1):
        a, b = walks[:, :-o].reshape(-1), walks[:, o:].reshape(-1)
        keep = (a >= 0) & (b >= 0)
        src += [a[keep], b[keep]]
        dst += [b[keep], a[keep]]
    return torch.cat(src), torch.cat(dst)


def train(cluster, *, epochs=3, dim=64, walk_length=20, num_walks=10, p=1.0, q=1.0, window=5, negative=5,
          lr=0.01, batch_size=256, seed=0, log=print):
    """Embeddings [num_nodes, dim] (served ids) trained on walks from every node."""
    torch.manual_seed(seed)
    n = cluster.num_nodes
    emb = torch.nn.Embedding(n, dim, sparse=True)
    ctx = torch.nn.Embedding(n, dim, sparse=True)
    torch.nn.init.uniform_(emb.weight, -0.5 / dim, 0.5 / dim)
    torch.nn.init.zeros_(ctx.weight)
    opt = torch.optim.SparseAdam(list(emb.parameters()) + list(ctx.parameters()), lr=lr)
    loader = fanout.RandomWalkLoader(cluster, torch.arange(n), walk_length=walk_length, batch_size=batch_size,
                                     num_walks=num_walks, p=p, q=q, seed=seed)
    steps = 0
    for epoch in range(1, epochs + 1):
        total, count = 0.0, 0
        for b in loader:
            steps += b.steps
            u, v = skipgram_pairs(b.walks, window)
            perm = torch.randperm(u.numel())
            for chunk in perm.split(8192):
                cu, cv = u[chunk], v[chunk]
                neg = torch.randint(0, n, (cu.numel(), negative))
                eu = emb(cu)
                pos = F.logsigmoid((eu * ctx(cv)).sum(1))
                ng = F.logsigmoid(-(eu.unsqueeze(1) * ctx(neg)).sum(2)).sum(1)
                loss = -(pos + ng).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss) * cu.numel()
                count += cu.numel()
        log("epoch %d: skip-gram loss %.4f over %d pairs" % (epoch, total / max(count, 1), count))
    return emb.weight.detach(), steps


def run(cluster, split, all_pairs, *, seed=0, log=print, **options):
    ids = id_map(cluster)  # file id -> served id
    z, steps = train(cluster, seed=seed, log=log, **options)
    test = split["test"]
    neg = negatives(all_pairs, cluster.num_nodes, len(test), seed + 1)
    pairs = torch.tensor(test + neg)
    labels = torch.cat([torch.ones(len(test)), torch.zeros(len(neg))])
    s, d = ids[pairs[:, 0]], ids[pairs[:, 1]]
    z = F.normalize(z, dim=1)  # cosine similarity
    scores = (z[s] * z[d]).sum(1)
    deg = torch.zeros(cluster.num_nodes)
    for u, v in split["train"]:
        deg[ids[u]] += 1
        deg[ids[v]] += 1
    return {"test_auc": auc(scores, labels), "degree_product_auc": auc(deg[s] * deg[d], labels),
            "walk_steps": steps}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--p", type=float, default=1.0, help="node2vec return parameter (default 1)")
    ap.add_argument("--q", type=float, default=1.0, help="node2vec in-out parameter (default 1)")
    ap.add_argument("--walk-length", type=int, default=20)
    ap.add_argument("--num-walks", type=int, default=10, help="walks per node and epoch")
    ap.add_argument("--seed", type=int, default=0, help="edge split, model and walk seed")
    ap.add_argument("--json", help="write the metrics to this file")
    a = ap.parse_args()
    if a.epochs < 1:
        ap.error("--epochs must be >= 1")
    pairs = read_pairs(os.path.join(CORA, "edges.txt"))
    train_pairs, val, test = split_edges(pairs, a.seed, val=0.0, test=0.10)
    with tempfile.TemporaryDirectory(prefix="fanout-node2vec-") as tmp:
        write_train_graph(CORA, train_pairs, os.path.join(tmp, "cora-train"))
        data = fanout.partition(os.path.join(tmp, "cora-train"), os.path.join(tmp, "cora-train-2"),
                                format="planetoid", parts=2)
        print("Cora: %d undirected edges; train %d, test %d (test edges are not served)"
              % (len(pairs), len(train_pairs), len(test)), flush=True)
        with fanout.LocalCluster(data) as lc:
            r = run(lc.cluster(), {"train": train_pairs, "test": test}, pairs, seed=a.seed, epochs=a.epochs,
                    p=a.p, q=a.q, walk_length=a.walk_length, num_walks=a.num_walks,
                    log=lambda m: print(m, flush=True))
    print("test_auc=%.3f degree_product_auc=%.3f" % (r["test_auc"], r["degree_product_auc"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f)
    return 0 if r["test_auc"] > r["degree_product_auc"] else 1


if __name__ == "__main__":
    sys.exit(main())
