"""fanout python bench: the Python NodeLoader beside the C++ NodeLoader.

Case python_loader: batches/s of iterating fanout.NodeLoader from Python
(Batch objects, tensors through DLPack) over the R-MAT scale-20 graph behind
2 servers ([15,10,5], batch 1024), features off and on, beside the same
loader driven by a C++ loop in the same process (the limit). The two
alternate (ABAB); ratio = median of the per-pair ratios.

Case pyg_loader: batches/s of PyG's own torch_geometric.loader.NodeLoader
over fanout.pyg (FeatureStore, GraphStore, NeighborSampler with the loader's
input_nodes, so that it reads ahead; --no-read-ahead without: the same graph,
[15,10,5], batch 1024, features) beside fanout.NodeLoader iterated from
Python on the same seeds with the same outputs (features, labels, edge
ids), alternated; ratio = median of the per-pair ratios. PyG's loader runs
with --pyg-workers DataLoader worker processes (default 0: in the main
process, the fastest measured here; with workers, persistent ones, each
filtering its own batches); needs torch-geometric (skipped, saying so,
without).

Usage: PYTHONPATH=build/python python3 bench/python_bench.py [--json FILE] [--scale 20] [--seconds 4] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def rate(iterator_factory, seconds):
    """Batches/s of iterating (a fresh iterator whenever one ends), after one warm-up batch."""
    it = iterator_factory()
    next(it)
    n, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            b = next(it)
        except StopIteration:
            it = iterator_factory()
            continue
        n += 1
        del b
    return n / (time.monotonic() - start)


def pyg_loader_case(cluster, seeds, a):
    import torch
    import fanout
    try:
        import fanout.pyg
        from torch_geometric.loader import NodeLoader
    except ImportError as e:
        print("pyg_loader: skipped: %s" % e, flush=True)
        return []
    labels = cluster.num_classes > 0
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    # input_nodes: the sampler reads ahead (in-order batches sampled and fetched on fanout's worker
    # threads while PyG filters the current one), as a user gets by passing the loader's seeds to it.
    sampler = fanout.pyg.NeighborSampler(cluster, [15, 10, 5], batch_size=1024,
                                         input_nodes=None if a.no_read_ahead else seeds)
    pyg = NodeLoader((fs, gs), node_sampler=sampler, input_nodes=seeds, batch_size=1024, shuffle=False,
                     num_workers=a.pyg_workers, persistent_workers=a.pyg_workers > 0,
                     filter_per_worker=a.pyg_workers > 0)
    ours = fanout.NodeLoader(cluster, seeds, num_neighbors=[15, 10, 5], batch_size=1024, shuffle=False,
                             features=True, labels=labels, edge_ids=True, rank=0, world_size=1)
    first = next(iter(pyg))
    assert first.x.shape[0] == first.n_id.numel() and "e_id" in first  # the same outputs as ours
    pyg_rates, our_rates, ratios = [], [], []
    for r in range(a.rounds):
        p = rate(lambda: iter(pyg), a.seconds)
        o = rate(lambda: iter(ours), a.seconds)
        pyg_rates.append(p)
        our_rates.append(o)
        ratios.append(p / o if o > 0 else 0.0)
        print("pyg_loader round %d: PyG NodeLoader over fanout.pyg %.1f batches/s, fanout.NodeLoader %.1f "
              "batches/s (%.3fx)" % (r + 1, p, o, ratios[-1]), flush=True)
    ratio = statistics.median(ratios)
    print("pyg_loader: PyG %.1f batches/s, fanout %.1f batches/s, %.3fx (pairs %.3f..%.3f; %d PyG workers)"
          % (statistics.median(pyg_rates), statistics.median(our_rates), ratio, min(ratios), max(ratios),
             a.pyg_workers), flush=True)
    return [{"case": "pyg_loader", "pyg_workers": a.pyg_workers, "pyg_batches_per_s": statistics.median(pyg_rates),
             "fanout_batches_per_s": statistics.median(our_rates), "ratio": ratio, "ratio_min": min(ratios),
             "ratio_max": max(ratios), "data_plane": cluster.data_plane,
             "read_ahead": not a.no_read_ahead}]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the cases as a JSON array to this file")
    ap.add_argument("--scale", type=int, default=20, help="R-MAT scale (default 20)")
    ap.add_argument("--seconds", type=float, default=4.0, help="seconds per measurement (default 4)")
    ap.add_argument("--rounds", type=int, default=3, help="Python/C++ alternations per case (default 3)")
    ap.add_argument("--work-dir", help="keep the dataset here (default: a temporary folder)")
    ap.add_argument("--cases", default="python_loader,pyg_loader",
                    help="comma-separated cases (default python_loader,pyg_loader)")
    ap.add_argument("--no-read-ahead", action="store_true",
                    help="pyg_loader: the sampler without input_nodes (every batch sampled on demand)")
    ap.add_argument("--pyg-workers", type=int, default=0,
                    help="pyg_loader: PyG DataLoader worker processes (default 0: in the main process)")
    a = ap.parse_args()
    if a.scale < 10 or a.scale > 24 or a.seconds <= 0 or a.rounds < 1 or a.pyg_workers < 0:
        ap.error("--scale must be in [10, 24], --seconds > 0, --rounds >= 1, --pyg-workers >= 0")
    wanted = a.cases.split(",")
    unknown = set(wanted) - {"python_loader", "pyg_loader"}
    if unknown:
        ap.error("unknown case(s) %s (known: python_loader, pyg_loader)" % ", ".join(sorted(unknown)))

    import torch
    import fanout

    work = a.work_dir or tempfile.mkdtemp(prefix="fanout-bench-python-")
    data = os.path.join(work, "rmat%d-2" % a.scale)
    if not os.path.isfile(os.path.join(data, "meta.json")):
        print("partitioning R-MAT scale %d into 2 parts ..." % a.scale, flush=True)
        fanout.partition(None, data, format="rmat", parts=2, method="range", rmat_scale=a.scale, feature_dim=128,
                         direction="out", force=True)
    cases = []
    with fanout.LocalCluster(data, startup_timeout_s=600) as lc:
        cluster = lc.cluster()
        seeds = torch.randint(0, cluster.num_nodes, (cluster.num_nodes,), generator=torch.Generator().manual_seed(2024))
        for features in ((False, True) if "python_loader" in wanted else ()):
            def make():
                return fanout.NodeLoader(cluster, seeds, num_neighbors=[15, 10, 5], batch_size=1024, shuffle=False,
                                         features=features, labels=False, edge_ids=False, rank=0, world_size=1)

            def python_rate():
                loader = make()
                return rate(lambda: iter(loader), a.seconds)

            def cpp_rate():
                loader = make()
                loader._loader.set_epoch(0)
                loader._loader.run_for(0.01)  # warm-up
                start = time.monotonic()
                n = loader._loader.run_for(a.seconds)
                return n / (time.monotonic() - start)

            py_rates, cpp_rates, ratios = [], [], []
            for r in range(a.rounds):
                p, c = python_rate(), cpp_rate()
                py_rates.append(p)
                cpp_rates.append(c)
                ratios.append(p / c if c > 0 else 0.0)
                print("python_loader features=%s round %d: python %.1f batches/s, C++ %.1f batches/s (%.3fx)"
                      % (features, r + 1, p, c, ratios[-1]), flush=True)
            ratio = statistics.median(ratios)
            print("python_loader features=%s: python %.1f batches/s, C++ %.1f batches/s, %.3fx (pairs %.3f..%.3f)"
                  % (features, statistics.median(py_rates), statistics.median(cpp_rates), ratio, min(ratios),
                     max(ratios)), flush=True)
            cases.append({"case": "python_loader", "features": features,
                          "python_batches_per_s": statistics.median(py_rates),
                          "cpp_batches_per_s": statistics.median(cpp_rates), "ratio": ratio,
                          "ratio_min": min(ratios), "ratio_max": max(ratios), "data_plane": cluster.data_plane})
        if "pyg_loader" in wanted:
            cases += pyg_loader_case(cluster, seeds, a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(cases, f, indent=2)
        print("wrote %s" % a.json)
    if not a.work_dir:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
