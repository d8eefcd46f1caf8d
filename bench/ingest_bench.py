#!/usr/bin/env python3
"""./run bench ingest: bringing your own graph in (docs/DATA.md), beside the native partitioner on the same edges.
Runs the cases tables_vs_native, string_ids, string_ids_spilled, pyg_object and spark_local (--cases picks some); a
case whose dependency
is missing is written with "skipped" and the reason.

Case `pyg_object`: a PyG Data of --edges random edges over --nodes nodes with 16-dim float32 features, labels and a
train mask, to a 2-partition store with fanout.partition_pyg (method hash): seconds, edges_per_s, and its two steps
(writing the tables, then fanout-partition --format tables). Beside it, the machine's own partitioner on the same
edge list (the edges alone, as a SNAP text file written before the clock starts, partitioned by fanout-partition
--format snap --method hash in bounded memory): native_edges_per_s and ratio = edges_per_s / native_edges_per_s.
The tables are Parquet where pyarrow imports (the case's table_format says which), else CSV text.

Case `tables_vs_native` (needs pyarrow): an R-MAT graph of 2^--rmat-scale nodes (22 by
default), 16 edges per node (a, b, c = 0.57, 0.19, 0.19, drawn with numpy under a fixed seed) and 64-dim float32
features, written as Parquet (nodes: id and a fixed-size list column; edges: src, dst) before the clock starts, and
partitioned from the tables (fanout-partition --format tables, 2 partitions, hash) against the native R-MAT path on a
graph of the same size (fanout-partition --format rmat --rmat-scale S --feature-dim 64, 2 partitions, hash), which
generates its edges in process: edges_per_s of each, ratio = tables edges/s / native edges/s, and peak_rss_bytes of
each (the tool's own report of its process; the pyarrow reader is a child process of its own, not counted).
Case `string_ids` (needs pyarrow): the same tables with every id a string
("user_" and the number: nodes, sources and destinations), "id_type": "string" in the schema, partitioned the same
way in the same rounds: its edges_per_s and ratio = string-id edges/s / int64-id edges/s.
Case `string_ids_spilled` (needs pyarrow): the string-id tables again with --string-id-memory (64M by default), so
that their ids go to disk and edges find their endpoints through the join in buckets (the run must say so):
edges_per_s, ratio = int64-id edges/s / its edges/s, ratio_to_in_memory = string ids in memory / on disk.
Rounds alternate them (three); medians. Checks free disk first, removes what it writes.

Case `spark_local` (needs pyspark, pyarrow, Java): the Spark job (python -m fanout.spark, docs/DATA.md "On Spark") in
Spark's local-cluster mode (2 executors of 1 core and 2 GiB heap, 1 GiB overhead each; a driver of 1 GiB) on the
tables_vs_native Parquet input, against fanout-partition --format tables on the same tables, alternated in rounds:
seconds, native_seconds, ratio = native / Spark; peak_rss_bytes of each executor (its JVM and everything it starts,
sampled every 0.2 s) beside executor_limit_bytes (heap + overhead, what a cluster manager enforces); driver_bytes
(the driver's processes); and the same job on the graph 4x smaller: the driver's memory and the rows it collected at
both sizes (small.driver_bytes, driver_bytes_ratio_4x_edges).
"""
import argparse
import importlib
import json
import os
import re
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
    ap.add_argument("--cases", default="tables_vs_native,string_ids,string_ids_spilled,pyg_object,spark_local",
                    help="comma-separated: tables_vs_native, string_ids, string_ids_spilled, pyg_object, "
                         "spark_local (default: all)")
    ap.add_argument("--string-id-memory", default="64M",
                    help="string_ids_spilled: fanout-partition's --string-id-memory, small enough that the ids of "
                         "the R-MAT tables go to disk (default 64M)")
    ap.add_argument("--rmat-scale", type=int, default=22, help="tables_vs_native: R-MAT scale")
    ap.add_argument("--work", help="scratch folder (default: a temporary one, removed)")
    ap.add_argument("--json", help="write the cases here")
    a = ap.parse_args()
    wanted = [c for c in a.cases.split(",") if c]
    for c in wanted:
        if c not in ("pyg_object", "tables_vs_native", "string_ids", "string_ids_spilled", "spark_local"):
            sys.exit("fanout bench ingest: unknown case %r (pyg_object, tables_vs_native, string_ids, "
                     "string_ids_spilled, spark_local)" % c)
    cases = []

    def save():  # after each case: a later case that fails leaves the earlier ones written
        if a.json:
            Path(a.json).parent.mkdir(parents=True, exist_ok=True)
            Path(a.json).write_text(json.dumps(cases, indent=2) + "\n")

    if {"tables_vs_native", "string_ids", "string_ids_spilled"} & set(wanted):
        try:
            importlib.import_module("pyarrow.parquet")  # the tables are Parquet
            have_pyarrow = None
        except ImportError as e:
            have_pyarrow = str(e)
        if have_pyarrow is None:
            both = tables_vs_native(a, "string_ids" in wanted or "string_ids_spilled" in wanted,
                                    "string_ids_spilled" in wanted)
            cases += [c for c in both if c["case"] in wanted]
        else:
            log("tables_vs_native and string_ids need pyarrow (./run installs it): %s" % have_pyarrow)
            cases += [{"case": c, "skipped": "needs pyarrow: " + have_pyarrow}
                      for c in ("tables_vs_native", "string_ids", "string_ids_spilled") if c in wanted]
        save()
    if "pyg_object" in wanted:
        cases.append(pyg_object(a))
        save()
    if "spark_local" in wanted:
        try:
            importlib.import_module("pyspark")
            importlib.import_module("pyarrow.parquet")
            missing = shutil.which("java") is None and "java (Debian's openjdk-17-jre-headless)"
        except ImportError as e:
            missing = str(e)
        if missing:
            log("spark_local needs pyspark, pyarrow and Java (./run installs them): %s" % missing)
            cases.append({"case": "spark_local", "skipped": "needs " + missing})
        else:
            cases.append(spark_local(a))
    print(json.dumps(cases, indent=2))
    save()


def _run_tool(args, must_say=None, env=None):
    """Runs fanout-partition (progress on), returning (seconds, its peak RSS in bytes from its last line);
    `must_say`: a text its output must hold (else the run did not do what the case names)."""
    t0 = time.perf_counter()
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("fanout bench ingest: %s failed:\n%s" % (" ".join(map(str, args)), r.stdout[-3000:]))
    if must_say is not None and must_say not in r.stdout:
        sys.exit("fanout bench ingest: %s did not say %r:\n%s" % (" ".join(map(str, args)), must_say,
                                                                  r.stdout[-3000:]))
    m = re.search(r"peak RSS ([0-9.]+) GiB", r.stdout)
    return secs, (float(m.group(1)) * 2**30 if m else None)


def _rmat_edges(scale, edges, seed):
    """R-MAT (a, b, c, d = 0.57, 0.19, 0.19, 0.05) edges under a fixed seed, as int64 src, dst."""
    rng = np.random.default_rng(seed)
    src = np.zeros(edges, np.int64)
    dst = np.zeros(edges, np.int64)
    for bit in range(scale):
        r = rng.random(edges, dtype=np.float32)
        down = r >= 0.76  # quadrants c or d: the source's bit set
        right = ((r >= 0.57) & (r < 0.76)) | (r >= 0.95)  # b or d: the destination's bit set
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    return src, dst


def _write_rmat_tables(tdir, scale, string_ids):
    """R-MAT scale `scale` (16 edges per node, 64-dim features) as Parquet in tdir: graph.json over nodes.parquet
    and edges.parquet (int64 ids); with string_ids also graph_str.json over the same graph with string ids."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, dim = 1 << scale, 64
    e = 16 * n
    tdir.mkdir(parents=True, exist_ok=True)
    log("writing R-MAT scale %d (%d nodes, %d edges, %d-dim features) as Parquet in %s" % (scale, n, e, dim, tdir))
    src, dst = _rmat_edges(scale, e, 1)
    pq.write_table(pa.table({"src": src, "dst": dst}), str(tdir / "edges.parquet"), row_group_size=1 << 20)
    if string_ids:
        import pyarrow.compute as pc

        def names(ids):
            return pc.binary_join_element_wise("user_", pc.cast(pa.array(ids), pa.string()), "")

        log("writing the same tables with string ids")
        with pq.ParquetWriter(str(tdir / "edges_str.parquet"),
                              pa.schema([("src", pa.string()), ("dst", pa.string())])) as w:
            for k in range(0, e, 1 << 20):
                w.write_table(pa.table({"src": names(src[k:k + (1 << 20)]), "dst": names(dst[k:k + (1 << 20)])}))
    del src, dst
    x = np.random.default_rng(2).standard_normal((n, dim), dtype=np.float32)
    pq.write_table(pa.table({"id": np.arange(n, dtype=np.int64),
                             "x": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), dim)}),
                   str(tdir / "nodes.parquet"), row_group_size=1 << 18)
    if string_ids:
        pq.write_table(pa.table({"id": names(np.arange(n, dtype=np.int64)),
                                 "x": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), dim)}),
                       str(tdir / "nodes_str.parquet"), row_group_size=1 << 18)
    del x
    (tdir / "graph.json").write_text(json.dumps({
        "name": "rmat-tables", "nodes": [{"files": "nodes.parquet", "id": "id", "features": "x"}],
        "edges": [{"files": "edges.parquet", "source": "src", "destination": "dst"}]}))
    (tdir / "graph_str.json").write_text(json.dumps({
        "name": "rmat-tables", "nodes": [{"files": "nodes_str.parquet", "id": "id", "id_type": "string",
                                          "features": "x"}],
        "edges": [{"files": "edges_str.parquet", "source": "src", "destination": "dst"}]}))


def tables_vs_native(a, string_ids, spilled=False):
    import fanout

    n, dim = 1 << a.rmat_scale, 64
    e = 16 * n
    work = Path(a.work or tempfile.mkdtemp(prefix="fanout-bench-tables-"))
    need = e * 16 * 3 + n * dim * 4 * 3
    free = shutil.disk_usage(work).free
    if free < need:
        sys.exit("fanout bench ingest: tables_vs_native needs about %.1f GB free in %s, has %.1f GB"
                 % (need / 1e9, work, free / 1e9))
    tool = fanout.find_binary("fanout-partition")
    tables_s, native_s, tables_rss, native_rss, str_s, str_rss = [], [], [], [], [], []
    sp_s, sp_rss = [], []
    try:
        tdir = work / "tables"
        _write_rmat_tables(tdir, a.rmat_scale, string_ids)
        env_py = os.environ.get("FANOUT_PYTHON")
        os.environ.setdefault("FANOUT_PYTHON", sys.executable)
        for r in range(a.rounds):
            s, rss = _run_tool([tool, "--format", "tables", "--schema", str(tdir / "graph.json"), "--parts", "2",
                                "--method", "hash", "--output", str(work / "out-tables"), "--force"])
            tables_s.append(s)
            tables_rss.append(rss)
            shutil.rmtree(work / "out-tables")
            if string_ids:
                s, rss = _run_tool([tool, "--format", "tables", "--schema", str(tdir / "graph_str.json"), "--parts",
                                    "2", "--method", "hash", "--output", str(work / "out-tables"), "--force"])
                str_s.append(s)
                str_rss.append(rss)
                shutil.rmtree(work / "out-tables")
            if spilled:  # the same, the ids past --string-id-memory: on disk, joined in buckets
                s, rss = _run_tool([tool, "--format", "tables", "--schema", str(tdir / "graph_str.json"), "--parts",
                                    "2", "--method", "hash", "--output", str(work / "out-tables"), "--force",
                                    "--string-id-memory", a.string_id_memory], must_say="string ids past their memory")
                sp_s.append(s)
                sp_rss.append(rss)
                shutil.rmtree(work / "out-tables")
            s, rss = _run_tool([tool, "--format", "rmat", "--rmat-scale", str(a.rmat_scale), "--feature-dim",
                                str(dim), "--parts", "2", "--method", "hash", "--output", str(work / "out-native"),
                                "--force"])
            native_s.append(s)
            native_rss.append(rss)
            shutil.rmtree(work / "out-native")
            log("round %d: tables (Parquet) %.1f s,%s%s native rmat %.1f s"
                % (r + 1, tables_s[-1], " string ids %.1f s," % str_s[-1] if string_ids else "",
                   " string ids on disk %.1f s," % sp_s[-1] if spilled else "", native_s[-1]))
        if env_py is None:
            del os.environ["FANOUT_PYTHON"]
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    t, nat = statistics.median(tables_s), statistics.median(native_s)
    out = []
    if spilled:
        sp, st = statistics.median(sp_s), statistics.median(str_s)
        out.append({"case": "string_ids_spilled", "table_format": "parquet", "rmat_scale": a.rmat_scale, "nodes": n,
                    "edges": e, "feature_dim": dim, "string_id_memory": a.string_id_memory, "seconds": sp,
                    "edges_per_s": e / sp, "in_memory_seconds": st, "ratio_to_in_memory": st / sp,
                    "int64_seconds": t, "ratio": t / sp,
                    "peak_rss_bytes": max(x for x in sp_rss if x) if any(sp_rss) else None,
                    "rounds": a.rounds, "cpus": os.cpu_count()})
    if string_ids:
        st = statistics.median(str_s)
        out.append({"case": "string_ids", "table_format": "parquet", "rmat_scale": a.rmat_scale, "nodes": n,
                    "edges": e, "feature_dim": dim, "id": "'user_' + number", "seconds": st, "edges_per_s": e / st,
                    "int64_seconds": t, "int64_edges_per_s": e / t, "ratio": t / st,
                    "peak_rss_bytes": max(x for x in str_rss if x) if any(str_rss) else None,
                    "rounds": a.rounds, "cpus": os.cpu_count()})
    return out + [{"case": "tables_vs_native", "table_format": "parquet", "rmat_scale": a.rmat_scale, "nodes": n,
            "edges": e, "feature_dim": dim, "parts": 2, "method": "hash", "seconds": t, "edges_per_s": e / t,
            "native_seconds": nat, "native_edges_per_s": e / nat, "ratio": nat / t,
            "peak_rss_bytes": max(x for x in tables_rss if x) if any(tables_rss) else None,
            "native_peak_rss_bytes": max(x for x in native_rss if x) if any(native_rss) else None,
            "rounds": a.rounds, "cpus": os.cpu_count()}]


def _process_tree():
    """pid -> (ppid, rss bytes, command line) of every process."""
    out = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        out[int(d)] = (int(fields[1]), int(fields[21]) * page, cmd)
    return out


def _descendants(tree, root):
    kids = {}
    for pid, (ppid, _, _) in tree.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def _run_spark(args, env):
    """Runs the Spark job (python -m fanout.spark) in local-cluster mode, sampling the resident memory of each
    executor (its JVM and everything it starts: Python workers, fanout-spark-task writers and readers) and of the
    driver (the rest of the job's processes) every 0.2 s. Returns (seconds, report, executor peaks, driver peak)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    execs, driver = {}, 0
    import threading
    err = []
    th = threading.Thread(target=lambda: err.append(p.stderr.read()))
    th.start()
    while p.poll() is None:
        tree = _process_tree()
        everyone = _descendants(tree, p.pid)
        in_exec = set()
        for pid in everyone:
            if "CoarseGrainedExecutorBackend" in tree.get(pid, (0, 0, ""))[2]:
                sub = _descendants(tree, pid)
                in_exec.update(sub)
                execs[pid] = max(execs.get(pid, 0), sum(tree[x][1] for x in sub if x in tree))
        driver = max(driver, sum(tree[x][1] for x in everyone if x in tree and x not in in_exec))
        time.sleep(0.2)
    th.join()
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("fanout bench ingest: the Spark job failed:\n%s" % err[0][-4000:])
    return secs, sorted(execs.values(), reverse=True), driver


def spark_local(a):
    """Case spark_local: the Spark job (python -m fanout.spark) in Spark's local-cluster mode, 2 executors of one
    core each, on the tables_vs_native Parquet input, against fanout-partition --format tables on the same tables
    (both 2 partitions, hash); rounds alternate the two; medians. And the job once more on the graph 4x smaller
    (R-MAT scale - 2): the driver's memory and the rows it collected at both sizes."""
    import pyspark

    import fanout

    n = 1 << a.rmat_scale
    e = 16 * n
    work = Path(a.work or tempfile.mkdtemp(prefix="fanout-bench-spark-"))
    need = e * 16 * 6 + n * 64 * 4 * 4
    free = shutil.disk_usage(work).free
    if free < need:
        sys.exit("fanout bench ingest: spark_local needs about %.1f GB free in %s, has %.1f GB"
                 % (need / 1e9, work, free / 1e9))
    tool = fanout.find_binary("fanout-partition")
    env = dict(os.environ)
    env.setdefault("FANOUT_PYTHON", sys.executable)
    env["PYSPARK_PYTHON"] = sys.executable
    env["SPARK_HOME"] = os.path.dirname(pyspark.__file__)  # local-cluster starts its executors from there
    conf = {"executor_memory": "2g", "executor_memory_overhead": "1g", "driver_memory": "1g",
            "writer_memory": "512M"}
    limit = (2 + 1) << 30  # what a cluster manager gives each executor: memory + overhead

    def spark_args(tdir, out, report):
        return [sys.executable, "-m", "fanout.spark", "--master", "local-cluster[2,1,2048]", "--schema",
                str(tdir / "graph.json"), "--output", str(out), "--parts", "2", "--method", "hash", "--force",
                "--quiet", "--executor-memory", conf["executor_memory"], "--driver-memory", conf["driver_memory"],
                "--executor-memory-overhead", conf["executor_memory_overhead"], "--writer-memory",
                conf["writer_memory"], "--local-dir", str(work / "spark-local"), "--json", str(report)]

    spark_s, native_s, execs, drivers, reports = [], [], [], [], []
    try:
        big, small = work / "tables", work / "tables-small"
        _write_rmat_tables(big, a.rmat_scale, False)
        _write_rmat_tables(small, a.rmat_scale - 2, False)
        for r in range(a.rounds):
            secs, ex, drv = _run_spark(spark_args(big, work / "out-spark", work / "report.json"), env)
            spark_s.append(secs)
            execs.append(ex)
            drivers.append(drv)
            reports.append(json.loads((work / "report.json").read_text()))
            shutil.rmtree(work / "out-spark")
            s, _ = _run_tool([tool, "--format", "tables", "--schema", str(big / "graph.json"), "--parts", "2",
                              "--method", "hash", "--output", str(work / "out-native"), "--force"], env=env)
            native_s.append(s)
            shutil.rmtree(work / "out-native")
            log("round %d: Spark job %.1f s (executors' peak %s, driver's %.2f GiB), native tool %.1f s"
                % (r + 1, spark_s[-1], ", ".join("%.2f GiB" % (x / 2**30) for x in ex), drv / 2**30, native_s[-1]))
        secs_small, ex_small, drv_small = _run_spark(spark_args(small, work / "out-spark", work / "report.json"),
                                                     env)
        report_small = json.loads((work / "report.json").read_text())
        shutil.rmtree(work / "out-spark")
        log("scale %d: Spark job %.1f s, driver's peak %.2f GiB" % (a.rmat_scale - 2, secs_small, drv_small / 2**30))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    secs, nat = statistics.median(spark_s), statistics.median(native_s)
    peak = [max(x[i] for x in execs if len(x) > i) for i in range(max(len(x) for x in execs))]
    return {"case": "spark_local", "table_format": "parquet", "rmat_scale": a.rmat_scale, "nodes": n, "edges": e,
            "feature_dim": 64, "parts": 2, "method": "hash", "master": "local-cluster[2,1,2048]",
            "spark_version": pyspark.__version__, "conf": conf,
            "seconds": secs, "native_seconds": nat, "ratio": nat / secs, "edges_per_s": e / secs,
            "peak_rss_bytes": peak, "executor_limit_bytes": limit,
            "executors_within_limit": all(x <= limit for x in peak),
            "driver_bytes": max(drivers), "driver_collected_rows": reports[-1]["driver_collected_rows"],
            "steps_seconds": reports[len(reports) // 2]["seconds"],
            "small": {"rmat_scale": a.rmat_scale - 2, "edges": e // 4, "seconds": secs_small,
                      "driver_bytes": drv_small, "driver_collected_rows": report_small["driver_collected_rows"],
                      "peak_rss_bytes": ex_small},
            "driver_bytes_ratio_4x_edges": max(drivers) / drv_small,
            "rounds": a.rounds, "cpus": os.cpu_count()}


def pyg_object(a):
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
    from fanout.tables import _have_pyarrow
    return {"case": "pyg_object", "table_format": "parquet" if _have_pyarrow() else "csv", "edges": a.edges, "nodes": a.nodes, "feature_dim": 16, "parts": 2,
              "method": "hash", "seconds": secs, "edges_per_s": a.edges / secs,
              "write_tables_s": statistics.median(write_s), "partition_s": statistics.median(part_s),
              "native_snap_seconds": native, "native_edges_per_s": a.edges / native,
              "ratio": native / secs, "rounds": a.rounds, "cpus": os.cpu_count()}


if __name__ == "__main__":
    main()
