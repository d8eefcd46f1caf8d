#!/usr/bin/env python3
"""./run bench ingest: bringing your own graph in (docs/DATA.md), beside the native partitioner on the same edges.

Case `pyg_object`: a PyG Data of --edges random edges over --nodes nodes with 16-dim float32 features, labels and a
train mask, to a 2-partition store with fanout.partition_pyg (method hash): seconds, edges_per_s, and its two steps
(writing the tables, then fanout-partition --format tables). Beside it, the machine's own partitioner on the same
edge list (the edges alone, as a SNAP text file written before the clock starts, partitioned by fanout-partition
--format snap --method hash in bounded memory): native_edges_per_s and ratio = edges_per_s / native_edges_per_s.
Rounds alternate the two; medians. Needs PyG (torch_geometric); checks free disk first, removes what it writes.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def log(msg):
    print("[ingest] " + msg, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", help="scratch folder (default: a temporary one, removed)")
    ap.add_argument("--json", help="write the cases here")
    a = ap.parse_args()
    try:
        from torch_geometric.data import Data
    except ImportError as e:
        sys.exit("fanout bench ingest: needs PyG (torch_geometric): %s" % e)
    import fanout
    from fanout.tables import write_pyg_tables

    work = Path(a.work or tempfile.mkdtemp(prefix="fanout-bench-ingest-"))
    need = a.edges * 150 + a.nodes * 400
    free = shutil.disk_usage(work).free
    if free < need:
        sys.exit("fanout bench ingest: needs about %.1f GB free in %s, has %.1f GB" % (need / 1e9, work, free / 1e9))
    g = torch.Generator().manual_seed(1)
    data = Data(x=torch.randn(a.nodes, 16, generator=g), y=torch.randint(0, 10, (a.nodes,), generator=g),
                edge_index=torch.randint(0, a.nodes, (2, a.edges), generator=g))
    data.train_mask = torch.rand(a.nodes, generator=g) < 0.5
    snap = work / "edges.txt"
    log("writing the same %d edges as a SNAP edge list for the native baseline" % a.edges)
    np.savetxt(snap, data.edge_index.t().numpy(), fmt="%d", delimiter="\t")
    pyg_s, write_s, part_s, native_s = [], [], [], []
    try:
        for r in range(a.rounds):
            out = work / "pyg"
            t0 = time.perf_counter()
            scratch = work / "tables"
            schema = write_pyg_tables(data, scratch)
            t1 = time.perf_counter()
            fanout.partition_tables(schema, out, parts=2, method="hash", force=True)
            t2 = time.perf_counter()
            shutil.rmtree(scratch)
            shutil.rmtree(out)
            write_s.append(t1 - t0)
            part_s.append(t2 - t1)
            pyg_s.append(t2 - t0)
            t3 = time.perf_counter()
            subprocess.run([fanout.find_binary("fanout-partition"), "--format", "snap", "--input", str(snap),
                            "--parts", "2", "--method", "hash", "--output", str(work / "native"), "--force",
                            "--quiet"], check=True)
            native_s.append(time.perf_counter() - t3)
            shutil.rmtree(work / "native")
            log("round %d: partition_pyg %.1f s (tables %.1f s + partition %.1f s); native snap %.1f s"
                % (r + 1, pyg_s[-1], write_s[-1], part_s[-1], native_s[-1]))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    secs, native = statistics.median(pyg_s), statistics.median(native_s)
    cases = [{"case": "pyg_object", "edges": a.edges, "nodes": a.nodes, "feature_dim": 16, "parts": 2,
              "method": "hash", "seconds": secs, "edges_per_s": a.edges / secs,
              "write_tables_s": statistics.median(write_s), "partition_s": statistics.median(part_s),
              "native_snap_seconds": native, "native_edges_per_s": a.edges / native,
              "ratio": native / secs, "rounds": a.rounds, "cpus": os.cpu_count()}]
    print(json.dumps(cases, indent=2))
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(cases, indent=2) + "\n")


if __name__ == "__main__":
    main()
