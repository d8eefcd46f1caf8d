"""PPR top-k recall against exact PPR, per eps: the sweep that chose PprOptions' default eps.

Partitions R-MAT scale 12 (2 parts by range, out-neighbors) into a temporary folder, serves it with
fanout.LocalCluster, and for 64 seeds (uniform among nodes with a stored row, a fixed seed) compares
Cluster.ppr's top-k lists at each --eps with the exact top-k of a power iteration (200 rounds, the same
definition: stored rows, an empty row's mass dropped). Prints the recall per eps; --json writes
[{"case": "ppr_recall", "eps": .., "topk_recall": .., ...}].

Usage: PYTHONPATH=build/python python3 bench/ppr_recall.py [--eps 1e-4 1e-5 5e-6 1e-6] [--top-k 32] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import tempfile

import torch

import fanout
from fanout._bins import find_binary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eps", type=float, nargs="+", default=[1e-4, 1e-5, 7e-6, 5e-6, 3e-6, 1e-6])
    ap.add_argument("--top-k", type=int, default=32)
    ap.add_argument("--seeds", type=int, default=64)
    ap.add_argument("--json")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fanout-ppr-recall-") as tmp:
        data = os.path.join(tmp, "rmat12-2")
        subprocess.run([find_binary("fanout-partition"), "--quiet", "--format", "rmat", "--rmat-scale", "12",
                        "--parts", "2", "--method", "range", "--output", data], check=True,
                       stdout=subprocess.DEVNULL)
        cases = []
        with fanout.LocalCluster(data) as lc:
            c = lc.cluster()
            n = c.num_nodes
            b = next(iter(fanout.NodeLoader(c, torch.arange(n), num_neighbors=[-1], batch_size=n, shuffle=False,
                                            features=False, labels=False)))
            src, dst = b.n_id[b.edge_index[0]], b.n_id[b.edge_index[1]]  # dst's row holds src
            deg = torch.bincount(dst, minlength=n).double()
            order = torch.randperm(n, generator=torch.Generator().manual_seed(5)).tolist()
            seeds = [s for s in order if deg[s] > 0][:a.seeds]
            exact = []
            for s in seeds:
                x = torch.zeros(n, dtype=torch.float64)
                x[s] = 1
                for _ in range(200):
                    nx = torch.zeros(n, dtype=torch.float64)
                    nx[s] = 0.15
                    nx.index_add_(0, src, 0.85 * x[dst] / deg[dst].clamp(min=1))
                    x = nx
                x[s] = -1  # the seed is not in its own list
                exact.append(set(torch.topk(x, a.top_k).indices.tolist()))
            for eps in a.eps:
                ptr, nodes, _ = c.ppr(torch.tensor(seeds), a.top_k, eps=eps)
                found = sum(len(exact[i] & set(nodes[ptr[i]:ptr[i + 1]].tolist())) for i in range(len(seeds)))
                recall = found / (a.top_k * len(seeds))
                print("eps %-8g top-%d recall %.3f" % (eps, a.top_k, recall), flush=True)
                cases.append({"case": "ppr_recall", "eps": eps, "top_k": a.top_k, "seeds": len(seeds),
                              "graph": "R-MAT scale 12", "topk_recall": recall})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(cases, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
