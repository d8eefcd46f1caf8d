"""Partition tables on Spark: the same schema as ``fanout-partition --format tables`` (docs/DATA.md), for graphs
past one machine. Run it with ``spark-submit`` on a cluster or in Spark's local mode::

    spark-submit --master yarn  "$(python -c 'import fanout.spark as s; print(s.__file__)')" \\
        --schema /shared/graph.json --output /shared/graph-16 --parts 16 --method hash
    python -m fanout.spark --master 'local[2]' --schema graph.json --output out --parts 2

What runs where (docs/DATA.md "On Spark"):

- The driver checks the schema, counts, and publishes: it handles per-file and per-partition numbers only (row
  counts, offsets, edge counts), never a node or an edge.
- The executors read the tables, one file per task, with the native reader (``fanout-spark-task nodes`` /
  ``edges``: CSV or Parquet, the native tool's errors); Spark joins the edges' endpoint ids to the nodes' new ids,
  shuffles each edge to the partition that stores it and sorts each partition's records; each partition's store is
  then written by ``fanout-spark-task write`` (the native writer) on the executor that holds it.
- The dataset is published as the native tool publishes it: everything goes to a staging folder beside the output,
  renamed into place after the last partition is written and synced. A run that fails or is killed publishes
  nothing (its staging folder is removed, or by the next run once its driver is gone).

Dense ids, partitions, renumbering, edge ids and each row's neighbor order are the native tool's, so the same
tables, schema and method give the same stores (only the random dataset id differs).

The output, the schema's files and the job's scratch must be on a filesystem every executor sees under the same
path (NFS, a parallel filesystem, or one host in local mode), and the fanout binaries must be installed at the same
path on every host (``--bin-dir``).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from . import errors
from ._bins import find_binary

__all__ = ["partition_on_spark", "main"]

_ERROR_TAG = "FANOUT-TASK-ERROR<<"
_ERROR_END = ">>"
_MAX_BATCH_BYTES = 1 << 28  # a yielded Arrow batch's feature bytes (Spark's binary column takes int32 offsets)


# ----------------------------------------------------------------------------------------------------------
# Executor side: the native tool's streams as Arrow batches, and records fed to the native writer.


def _task_env():
    env = dict(os.environ)
    env.setdefault("FANOUT_PYTHON", sys.executable)  # the Parquet reader's interpreter: this worker's (has pyarrow)
    return env


def _run_reader(ctx, args):
    """Starts a fanout-spark-task reader; its stderr goes to a file (read when it ends)."""
    err = tempfile.TemporaryFile()
    p = subprocess.Popen([ctx["task"]] + args, stdout=subprocess.PIPE, stderr=err, env=_task_env())
    return p, err


def _fail(message):
    raise RuntimeError(_ERROR_TAG + message + _ERROR_END)


def _finish(p, err, what):
    rc = p.wait()
    err.seek(0)
    text = err.read().decode("utf-8", "replace").strip()
    err.close()
    if rc != 0:
        _fail(text.replace("fanout-spark-task: error: ", "") or "%s failed (exit %d)" % (what, rc))


def _exact(f, n, what):
    b = f.read(n)
    if len(b) != n:
        raise EOFError(what)
    return b


def _i64(f, n, what):
    return np.frombuffer(_exact(f, 8 * n, what), dtype="<i8")


def _strings(f, n, what):
    import pyarrow as pa

    off = _i64(f, n + 1, what)
    data = _exact(f, int(off[-1]), what)
    if off[-1] >= 2**31:
        _fail("%s: one block's ids hold more than 2 GiB" % what)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(off.astype("<i4")), pa.py_buffer(data)])


def _binary_rows(mat):
    """A 2-D float32 array as a binary column, one row per value."""
    import pyarrow as pa

    n = mat.shape[0]
    width = mat.shape[1] * 4
    off = (np.arange(n + 1, dtype="<i8") * width).astype("<i4")
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(off), pa.py_buffer(np.ascontiguousarray(mat))])


def _read_nodes(ctx, file_index):
    import pyarrow as pa

    args = ["nodes", "--schema", ctx["schema"], "--file-index", str(file_index)]
    if ctx["string_ids"]:
        args.append("--string-ids")
    p, err = _run_reader(ctx, args)
    f = p.stdout
    row = 0
    try:
        if f.read(8) != b"FNSN0001":
            raise EOFError("the header")
        while True:
            n = int(_i64(f, 1, "a block header")[0])
            if n == 0:
                break
            dim = int(_i64(f, 1, "a block header")[0])
            keys = _strings(f, n, "the ids") if ctx["string_ids"] else pa.array(_i64(f, n, "the ids"))
            labels = _i64(f, n, "the labels")
            splits = np.frombuffer(_exact(f, n, "the splits"), dtype=np.int8)
            feats = np.frombuffer(_exact(f, 4 * n * dim, "the features"), dtype="<f4").reshape(n, dim)
            step = max(1, min(n, _MAX_BATCH_BYTES // max(1, 4 * dim)))
            for a in range(0, n, step):
                z = min(n, a + step)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(np.full(z - a, file_index, dtype=np.int32)),
                     pa.array(np.arange(row + a, row + z, dtype=np.int64)), keys.slice(a, z - a),
                     pa.array(labels[a:z]), pa.array(splits[a:z]), _binary_rows(feats[a:z])],
                    names=["file", "row", "key", "label", "split", "feat"])
            row += n
    except EOFError as e:
        p.stdout.close()
        _finish(p, err, "reading node file %d" % file_index)
        _fail("node file %d: the reader's stream ends inside %s" % (file_index, e))
    p.stdout.close()
    _finish(p, err, "reading node file %d" % file_index)


def _read_edges(ctx, file_index):
    import pyarrow as pa

    args = ["edges", "--schema", ctx["schema"], "--file-index", str(file_index)]
    if ctx["string_ids"]:
        args.append("--string-ids")
    p, err = _run_reader(ctx, args)
    f = p.stdout
    row = 0
    try:
        if f.read(8) != b"FNSE0001":
            raise EOFError("the header")
        while True:
            n = int(_i64(f, 1, "a block header")[0])
            if n == 0:
                break
            if ctx["string_ids"]:
                src = _strings(f, n, "the sources")
                dst = _strings(f, n, "the destinations")
            else:
                src = pa.array(_i64(f, n, "the sources"))
                dst = pa.array(_i64(f, n, "the destinations"))
            yield pa.RecordBatch.from_arrays(
                [pa.array(np.full(n, file_index, dtype=np.int32)), pa.array(np.arange(row, row + n, dtype=np.int64)),
                 src, dst], names=["file", "row", "src", "dst"])
            row += n
    except EOFError as e:
        p.stdout.close()
        _finish(p, err, "reading edge file %d" % file_index)
        _fail("edge file %d: the reader's stream ends inside %s" % (file_index, e))
    p.stdout.close()
    _finish(p, err, "reading edge file %d" % file_index)


def _file_reader(ctx, read):
    def fn(batches):
        for b in batches:
            for i in b.column(0).to_pylist():
                yield from read(ctx, int(i))
    return fn


_MIX1, _MIX2, _MASK = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, (1 << 64) - 1


def _mix64(z):
    """common/random.h's Mix64 over a uint64 array."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    return z ^ (z >> np.uint64(31))


def _mix64_int(z):
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK
    return z ^ (z >> 31)


def _draw_below(x, k):
    """common/random.h's DrawBelow: (x * k) >> 64, exactly, for k < 2^31."""
    k = np.uint64(k)
    hi, lo = x >> np.uint64(32), x & np.uint64(0xFFFFFFFF)
    return (hi * k + ((lo * k) >> np.uint64(32))) >> np.uint64(32)


def _parts_of(ctx, dense, original):
    """Each node's part, as datasets/partitioner.cc's ComputeNodePartition gives it."""
    k, n = ctx["parts"], ctx["num_nodes"]
    if k == 1:
        return np.zeros(len(dense), dtype=np.int32)
    method = ctx["method"]
    if method == "range":
        return ((dense * k) // n).astype(np.int32)
    if method == "hash":
        key = np.uint64(_mix64_int((ctx["seed"] ^ 0x6861736870617274) & _MASK))
        with np.errstate(over="ignore"):
            return _draw_below(_mix64(key ^ original.astype(np.uint64)), k).astype(np.int32)
    assignment = np.memmap(ctx["assignment"], dtype="<i4", mode="r", shape=(n,))
    return np.asarray(assignment[dense], dtype=np.int32)


def _dense_and_original(ctx, batch):
    files = batch.column("file").to_numpy()
    dense = ctx["file_offsets"][files] + batch.column("row").to_numpy()
    original = dense if ctx["string_ids"] else batch.column("key").to_numpy()
    return dense, original


def _parts_fn(ctx):
    import pyarrow as pa

    def fn(batches):
        for b in batches:
            dense, original = _dense_and_original(ctx, b)
            yield pa.RecordBatch.from_arrays([b.column("file"), pa.array(_parts_of(ctx, dense, original))],
                                             names=["file", "part"])
    return fn


def _renumber_fn(ctx):
    """Each node's new id: its part's first id, plus the part's nodes in earlier files, plus those before it in
    its file (the native renumbering: by part, then input order)."""
    import pyarrow as pa

    def fn(batches):
        k = ctx["parts"]
        seen = {}  # file -> nodes of each part so far in this task
        for b in batches:
            dense, original = _dense_and_original(ctx, b)
            part = _parts_of(ctx, dense, original)
            new = np.empty(len(part), dtype=np.int64)
            files = b.column("file").to_numpy()
            for f in np.unique(files):
                sel = np.nonzero(files == f)[0]
                counts = seen.setdefault(int(f), np.zeros(k, dtype=np.int64))
                p = part[sel]
                order = np.argsort(p, kind="stable")
                ps = p[order]
                starts = np.searchsorted(ps, np.arange(k))
                rank = np.arange(len(ps)) - starts[ps]
                base = ctx["part_offsets"][ps] + ctx["file_part_prefix"][int(f)][ps] + counts[ps]
                new[sel[order]] = base + rank
                counts += np.bincount(p, minlength=k)
            cols = [b.column("key"), pa.array(new), pa.array(part), b.column("label"), b.column("split"),
                    b.column("feat"), pa.array(original.astype(np.int64))]
            yield pa.RecordBatch.from_arrays(cols, names=["key", "new", "part", "label", "split", "feat", "orig"])
    return fn


def _max_abs_fn(dim):
    import pyarrow as pa

    def fn(batches):
        m = np.zeros(dim, dtype=np.float32)
        for b in batches:
            col = b.column("feat")
            if len(col) == 0:
                continue
            data = np.frombuffer(col.buffers()[2], dtype="<f4")
            off = np.frombuffer(col.buffers()[1], dtype="<i4")[col.offset:col.offset + len(col) + 1]
            rows = data[off[0] // 4:off[-1] // 4].reshape(-1, dim)
            m = np.maximum(m, np.abs(rows).max(axis=0))
        yield pa.RecordBatch.from_arrays([pa.array([m.tobytes()], type=pa.binary())], names=["m"])
    return fn


def _column_bytes(col):
    """The concatenated values of a binary or string Arrow array (no nulls) and its offsets from 0."""
    off = np.frombuffer(col.buffers()[1], dtype="<i4")[col.offset:col.offset + len(col) + 1].astype(np.int64)
    data = col.buffers()[2]
    raw = b"" if data is None else data.to_pybytes()[off[0]:off[-1]]
    return off - off[0], raw


class _PartFeed:
    """One partition's records, piped to ``fanout-spark-task write`` as they come (sorted by row, then edge id)."""

    def __init__(self, ctx, part):
        self.part = part
        args = [ctx["task"], "write", "--meta", ctx["meta"], "--staging", ctx["staging"], "--part", str(part),
                "--edges", str(ctx["part_edges"][part])]
        if ctx["normalize"]:
            args.append("--normalize-features")
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                  env=_task_env())
        self.ctx = ctx
        self._send(b"FNSW0001")

    def _send(self, data):
        try:
            self.p.stdin.write(data)
        except BrokenPipeError:
            self.close()  # raises with the writer's message
            _fail("partition %d: the writer stopped reading" % self.part)

    def feed(self, b):
        import pyarrow.compute as pc

        n = len(b)
        eid = b.column("eid").to_numpy(zero_copy_only=False)
        node = eid < 0
        m = int(node.sum())
        nodes = b.filter(node) if m else None
        name_off, names = (np.zeros(1, dtype=np.int64), b"")
        if m and self.ctx["string_ids"]:
            name_off, names = _column_bytes(nodes.column("name"))
        head = np.array([n, m, len(names) if self.ctx["string_ids"] else 0], dtype="<i8")
        parts = [head.tobytes(), b.column("row").to_numpy().astype("<i8").tobytes(), eid.astype("<i8").tobytes(),
                 pc.fill_null(b.column("nbr"), -1).to_numpy().astype("<i8").tobytes()]
        if m:
            parts += [pc.fill_null(nodes.column("label"), -1).to_numpy().astype("<i8").tobytes(),
                      pc.fill_null(nodes.column("split"), 0).to_numpy().astype(np.uint8).tobytes(),
                      nodes.column("orig").to_numpy().astype("<i8").tobytes()]
            if self.ctx["string_ids"]:
                parts += [name_off.astype("<i8").tobytes(), names]
            feat_off, feats = _column_bytes(nodes.column("feat"))
            if len(feats) != m * 4 * self.ctx["feature_dim"]:
                _fail("partition %d: feature rows of %d bytes for %d nodes of %d features" %
                      (self.part, len(feats), m, self.ctx["feature_dim"]))
            parts.append(feats)
        elif self.ctx["string_ids"]:
            parts.append(name_off.astype("<i8").tobytes())
        self._send(b"".join(parts))

    def close(self):
        try:
            self.p.stdin.write(np.zeros(3, dtype="<i8").tobytes())
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        out = self.p.stdout.read()
        _finish(self.p, self.err, "writing partition %d" % self.part)
        return json.loads(out.decode())


def _writer_fn(ctx):
    import pyarrow as pa

    def fn(batches):
        feed = None
        done = []
        for b in batches:
            parts = b.column("part").to_numpy()
            if len(parts) == 0:
                continue
            cuts = np.nonzero(np.diff(parts))[0] + 1
            for a, z in zip(np.r_[0, cuts], np.r_[cuts, len(parts)]):
                p = int(parts[a])
                if feed is None or feed.part != p:
                    if feed is not None:
                        done.append(feed.close())
                    feed = _PartFeed(ctx, p)
                feed.feed(b.slice(int(a), int(z - a)))
        if feed is not None:
            done.append(feed.close())
        yield pa.RecordBatch.from_arrays(
            [pa.array([d["part"] for d in done], type=pa.int32()), pa.array([d["edges"] for d in done], type=pa.int64()),
             pa.array([d["bytes"] for d in done], type=pa.int64())], names=["part", "edges", "bytes"])
    return fn


# ----------------------------------------------------------------------------------------------------------
# Driver side.


def _task(task, *args):
    r = subprocess.run([task] + list(args), capture_output=True, text=True, env=_task_env())
    if r.returncode != 0:
        msg = r.stderr.strip().replace("fanout-spark-task: error: ", "")
        cls = errors.NotSupported if msg.startswith("NotSupported") else errors.InvalidArgument
        raise cls(msg)
    return r.stdout


def _unwrap(e):
    """A Spark failure as the task's own message where a task raised one."""
    m = re.search(re.escape(_ERROR_TAG) + r"(.*?)" + re.escape(_ERROR_END), str(e), re.S)
    if m:
        return errors.InvalidArgument(m.group(1).strip())
    return None


def _log(quiet, msg):
    if not quiet:
        print("fanout.spark: " + msg, flush=True)


def partition_on_spark(spark, schema, output, *, parts, method="hash", seed=1, assignment=None,
                       undirected=False, drop_self_loops=False, direction="in", feature_dtype="float32",
                       normalize_features=False, chunk_nodes=65536, force=False, bin_dir=None, quiet=True):
    """Partitions the tables ``schema`` names on the Spark session ``spark`` into the dataset folder ``output``
    (as ``fanout-partition --format tables`` would with the same options) and returns its meta.json as a dict.

    ``method``: hash, random, range, or file (``assignment``: one part per line, node by node in the tables'
    order, as gpmetis writes it). Raises fanout.InvalidArgument naming the file, row and column on bad input, and
    fanout.NotSupported for what the job does not take yet (several node or edge types, edge times, feature files);
    nothing is published then.
    """
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    task = os.path.join(bin_dir, "fanout-spark-task") if bin_dir else find_binary("fanout-spark-task")
    schema = os.path.abspath(str(schema))
    output = os.path.abspath(str(output))
    if method not in ("hash", "random", "range", "file"):
        raise errors.InvalidArgument("method %r: the Spark job takes hash, random, range or file (METIS needs the "
                                     "whole graph on one host: run gpmetis there and pass its output with "
                                     "method='file')" % method)
    if (method == "file") != (assignment is not None):
        raise errors.InvalidArgument("method 'file' takes an assignment file, and only it does")
    if direction not in ("in", "out"):
        raise errors.InvalidArgument("direction %r: 'in' or 'out'" % direction)
    if feature_dtype not in ("float32", "float16", "bfloat16", "int8"):
        raise errors.InvalidArgument("feature_dtype %r: float32, float16, bfloat16 or int8" % feature_dtype)
    if feature_dtype == "int8" and normalize_features:
        raise errors.NotSupported("int8 features with normalize_features are not taken by the Spark job yet")
    if not isinstance(parts, int) or not 1 <= parts <= 4096:
        raise errors.InvalidArgument("parts %r: an integer in [1, 4096]" % (parts,))
    if chunk_nodes < 1:
        raise errors.InvalidArgument("chunk_nodes must be positive")
    plan = json.loads(_task(task, "plan", "--schema", schema))
    begun = json.loads(_task(task, "begin", "--output", output, "--owner-pid", str(os.getpid()),
                             *(["--force"] if force else [])))
    staging, output = begun["staging"], begun["output"]
    job = staging + ".job"
    os.makedirs(job)
    persisted = []
    try:
        ctx = {"task": task, "schema": schema, "string_ids": plan["string_ids"], "parts": parts, "method": method,
               "seed": int(seed), "staging": staging, "normalize": bool(normalize_features),
               "dataset_id": begun["dataset_id"]}
        meta = _run(spark, plan, ctx, job, persisted, output, schema, undirected, drop_self_loops, direction,
                    feature_dtype, normalize_features, chunk_nodes, assignment, quiet, StorageLevel, Window, F)
        _task(task, "commit", "--meta", os.path.join(job, "meta.json"), "--staging", staging, "--output", output)
        _log(quiet, "published %s" % output)
        return meta
    except Exception as e:
        clean = _unwrap(e)
        if clean is not None:
            raise clean from None
        raise
    finally:
        for df in persisted:
            df.unpersist()
        shutil.rmtree(job, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)  # gone already where it was published


def _run(spark, plan, ctx, job, persisted, output, schema, undirected, drop_self_loops, direction, feature_dtype,
         normalize, chunk_nodes, assignment, quiet, StorageLevel, Window, F):
    task, k = ctx["task"], ctx["parts"]
    key_type = "string" if plan["string_ids"] else "long"
    nf, ef = len(plan["node_files"]), len(plan["edge_files"])
    _log(quiet, "%s: %d node file(s), %d edge file(s), %d partition(s), method %s" %
         (plan["name"], nf, ef, k, ctx["method"]))

    # Nodes: one task per file, kept (on the executors' disks) for the passes below.
    raw = spark.range(0, nf, 1, nf).mapInArrow(
        _file_reader(ctx, _read_nodes),
        "file int, row long, key %s, label long, split tinyint, feat binary" % key_type)
    raw = raw.persist(StorageLevel.DISK_ONLY)
    persisted.append(raw)
    per_file = {r["file"]: r for r in raw.groupBy("file").agg(
        F.count(F.lit(1)).alias("n"), F.max("label").alias("max_label"),
        F.min(F.length("feat")).alias("min_w"), F.max(F.length("feat")).alias("max_w")).collect()}
    counts = np.array([per_file[i]["n"] if i in per_file else 0 for i in range(nf)], dtype=np.int64)
    num_nodes = int(counts.sum())
    if num_nodes == 0:
        raise errors.InvalidArgument("schema %s: no nodes" % schema)
    if k > num_nodes:
        raise errors.InvalidArgument("--parts %d exceeds the %d nodes of the graph" % (k, num_nodes))
    widths = {w for r in per_file.values() for w in (r["min_w"], r["max_w"])}
    if len(widths) > 1:
        raise errors.InvalidArgument("node type '%s': feature rows of different widths (%s values)" %
                                     (plan["node_type"], ", ".join(str(w // 4) for w in sorted(widths))))
    dim = (widths.pop() // 4) if widths else 0
    max_label = max((r["max_label"] for r in per_file.values() if r["max_label"] is not None), default=-1)
    dup = raw.groupBy("key").count().where("count > 1").limit(1).collect()
    if dup:
        first = raw.where(F.col("key") == dup[0]["key"]).orderBy("file", "row").limit(2).collect()
        raise errors.InvalidArgument(
            "node type '%s': id %r is listed twice (%s row %d and %s row %d, rows counted from 1)" %
            (plan["node_type"], dup[0]["key"], plan["node_files"][first[0]["file"]], first[0]["row"] + 1,
             plan["node_files"][first[1]["file"]], first[1]["row"] + 1))
    ctx.update(num_nodes=num_nodes, file_offsets=np.r_[0, np.cumsum(counts)][:-1].astype(np.int64))
    _log(quiet, "%d nodes, %d features" % (num_nodes, dim))

    # Parts, then the new ids (by part, then input order).
    if ctx["method"] in ("random", "file"):
        ctx["assignment"] = os.path.join(job, "assignment.i32")
        args = ["assign", "--method", ctx["method"], "--parts", str(k), "--seed", str(ctx["seed"]), "--num-nodes",
                str(num_nodes), "--out", ctx["assignment"]]
        if assignment is not None:
            args += ["--assignment", os.path.abspath(str(assignment))]
        # One executor computes it (4 bytes per node; the random method's shuffle is sequential).
        spark.range(0, 1, 1, 1).mapInArrow(_assign_fn(ctx, args), "ok int").collect()
    fp = raw.select("file", "row", "key").mapInArrow(_parts_fn(ctx), "file int, part int") \
        .groupBy("file", "part").count().collect()
    per = np.zeros((nf, k), dtype=np.int64)
    for r in fp:
        per[r["file"], r["part"]] = r["count"]
    part_nodes = per.sum(axis=0)
    ctx["part_offsets"] = np.r_[0, np.cumsum(part_nodes)][:-1].astype(np.int64)
    ctx["file_part_prefix"] = (np.cumsum(per, axis=0) - per).astype(np.int64)
    nodes = raw.mapInArrow(_renumber_fn(ctx), "key %s, new long, part int, label long, split tinyint, feat binary, "
                                              "orig long" % key_type)
    nodes = nodes.persist(StorageLevel.DISK_ONLY)
    persisted.append(nodes)
    feature_max_abs = None
    if feature_dtype == "int8" and dim > 0:
        m = np.zeros(dim, dtype=np.float32)
        for r in nodes.select("feat").mapInArrow(_max_abs_fn(dim), "m binary").collect():
            m = np.maximum(m, np.frombuffer(r["m"], dtype=np.float32))
        feature_max_abs = [float(x) for x in m]

    # Edges: one task per file, endpoints joined to the new ids.
    raw_edges = spark.range(0, ef, 1, ef).mapInArrow(_file_reader(ctx, _read_edges),
                                                     "file int, row long, src %s, dst %s" % (key_type, key_type))
    ids = nodes.select("key", "new", "part")
    j = raw_edges.join(ids.withColumnRenamed("key", "src").withColumnRenamed("new", "su")
                       .withColumnRenamed("part", "sp"), "src", "left") \
        .join(ids.withColumnRenamed("key", "dst").withColumnRenamed("new", "dv").withColumnRenamed("part", "dp"),
              "dst", "left")
    j = j.withColumn("dangling", F.col("su").isNull() | F.col("dv").isNull()) \
        .withColumn("loop", F.col("su") == F.col("dv"))
    j = j.persist(StorageLevel.DISK_ONLY)
    persisted.append(j)
    if not plan["drop_dangling"]:
        bad = j.where("dangling").orderBy("file", "row").limit(1).collect()
        if bad:
            b = bad[0]
            end, key = ("source", b["src"]) if b["su"] is None else ("destination", b["dst"])
            raise errors.InvalidArgument(
                "%s row %d, the %s: '%s' names no node of type '%s' (the schema's \"dangling_edges\": \"drop\" "
                "counts and drops such edges)" % (plan["edge_files"][b["file"]], b["row"] + 1, end, str(key)[:40],
                                                  plan["node_type"]))
    keep = ~F.col("dangling")
    if drop_self_loops:
        keep = keep & ~F.col("loop")
    stats = {r["file"]: r for r in j.groupBy("file").agg(
        F.count(F.lit(1)).alias("rows"), F.sum(keep.cast("long")).alias("kept"),
        F.sum((keep & F.col("loop")).cast("long")).alias("loops"),
        F.sum(F.col("dangling").cast("long")).alias("dangling")).collect()}
    rows = np.array([stats[i]["rows"] if i in stats else 0 for i in range(ef)], dtype=np.int64)
    kept = np.array([(stats[i]["kept"] or 0) if i in stats else 0 for i in range(ef)], dtype=np.int64)
    loops = np.array([(stats[i]["loops"] or 0) if i in stats else 0 for i in range(ef)], dtype=np.int64)
    dangling = sum((stats[i]["dangling"] or 0) for i in stats)
    e1 = int(kept.sum())
    kept_edges = j.where(keep)
    offsets = spark.createDataFrame([(i, int(o)) for i, o in enumerate(np.r_[0, np.cumsum(kept)][:-1])],
                                    "file int, off long")
    by_file = Window.partitionBy("file").orderBy("row")
    fwd = kept_edges.join(F.broadcast(offsets), "file")
    if (kept == rows).all():  # nothing dropped: an edge's id is its row's place in the input
        fwd = fwd.withColumn("eid", F.col("off") + F.col("row"))
    else:
        fwd = fwd.withColumn("eid", F.col("off") + F.row_number().over(by_file) - 1)
    incoming = direction == "in"

    def stored(df, reverse):
        # Edge u -> v (reversed: v -> u) is stored in the row of v (out: u), its neighbor u (out: v).
        tgt_row, tgt_part, nb = ("dv", "dp", "su") if incoming != reverse else ("su", "sp", "dv")
        return df.select(F.col(tgt_part).alias("part"), F.col(tgt_row).alias("row"), "eid",
                         F.col(nb).alias("nbr"), (F.col("sp") != F.col("dp")).alias("cut"))

    edges = stored(fwd, False)
    num_edges = e1
    if undirected:
        nonloop = kept - loops
        rev = kept_edges.where(~F.col("loop"))
        if loops.sum() == 0:
            rev = fwd.withColumn("eid", F.col("eid") + e1)
        else:
            roff = spark.createDataFrame([(i, int(o)) for i, o in enumerate(np.r_[0, np.cumsum(nonloop)][:-1])],
                                         "file int, off long")
            rev = rev.join(F.broadcast(roff), "file") \
                .withColumn("eid", F.col("off") + F.row_number().over(by_file) - 1 + e1)
        edges = edges.unionByName(stored(rev, True))
        num_edges = e1 + int(nonloop.sum())
    part_stats = {r["part"]: r for r in edges.groupBy("part").agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.col("cut").cast("long")).alias("cut")).collect()}
    part_edges = [int(part_stats[p]["n"]) if p in part_stats else 0 for p in range(k)]
    cut = sum(int(r["cut"] or 0) for r in part_stats.values())
    _log(quiet, "%d edges%s" % (num_edges, "; dropped %d edges whose endpoint no node table has" % dangling
                                if dangling else ""))

    # meta.json's contents (the native tool's, from these counts).
    options = {"undirected": bool(undirected), "drop_duplicates": False, "drop_self_loops": bool(drop_self_loops),
               "seed": ctx["seed"], "metis_balance_edges": True, "feature_dtype": feature_dtype,
               "normalize_features": bool(normalize), "direction": direction}
    meta_plan = {"name": plan["name"], "source_path": schema, "num_nodes": num_nodes, "num_edges": num_edges,
                 "num_parts": k, "offsets": [int(x) for x in np.r_[ctx["part_offsets"], num_nodes]],
                 "feature_dim": dim, "feature_dtype": feature_dtype, "num_classes": max_label + 1,
                 "has_labels": max_label >= 0, "has_split": plan["has_split"], "has_names": plan["string_ids"],
                 "direction": direction, "chunk_nodes": int(chunk_nodes), "method": ctx["method"],
                 "options": options, "dataset_id": ctx["dataset_id"],
                 "stats": {"nodes": [int(x) for x in part_nodes], "edges": part_edges, "cut_edges": cut}}
    if feature_max_abs is not None:
        meta_plan["feature_max_abs"] = feature_max_abs
    with open(os.path.join(job, "plan.json"), "w") as f:
        json.dump(meta_plan, f)
    ctx["meta"] = os.path.join(job, "meta.json")
    _task(task, "meta", "--plan", os.path.join(job, "plan.json"), "--out", ctx["meta"])
    with open(ctx["meta"]) as f:
        meta = json.load(f)
    ctx.update(feature_dim=dim, part_edges=part_edges)

    # Each partition's records (its nodes, each followed by its stored edges in edge id order), written on the
    # executor that holds them.
    node_records = nodes.select("part", F.col("new").alias("row"), F.lit(-1).cast("long").alias("eid"),
                                F.lit(None).cast("long").alias("nbr"), "label", "split", "orig",
                                (F.col("key") if plan["string_ids"] else F.lit(None).cast("string")).alias("name"),
                                "feat")
    edge_records = edges.drop("cut")
    records = node_records.unionByName(edge_records, allowMissingColumns=True)
    records = records.repartitionByRange(k, "part").sortWithinPartitions("part", "row", "eid")
    written = records.mapInArrow(_writer_fn(ctx), "part int, edges long, bytes long").collect()
    done = {r["part"] for r in written}
    if len(done) != len(written):
        raise errors.Internal("a partition was written by two tasks")
    for p in range(k):
        if p not in done:  # a partition without nodes (hash or a given assignment)
            if part_nodes[p] != 0:
                raise errors.Internal("partition %d has nodes but was not written" % p)
            _write_empty(ctx, p)
    _log(quiet, "wrote %d partition(s), %d bytes" % (k, sum(r["bytes"] for r in written)))
    return meta


def _assign_fn(ctx, args):
    import pyarrow as pa

    def fn(batches):
        for _ in batches:
            pass
        r = subprocess.run([ctx["task"]] + args, capture_output=True, text=True, env=_task_env())
        if r.returncode != 0:
            _fail(r.stderr.strip().replace("fanout-spark-task: error: ", ""))
        yield pa.RecordBatch.from_arrays([pa.array([1], type=pa.int32())], names=["ok"])
    return fn


def _write_empty(ctx, part):
    feed = _PartFeed(ctx, part)
    feed.close()


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m fanout.spark",
        description="Partition tables with a schema (docs/DATA.md) on Spark into a Fanout dataset folder, as "
                    "fanout-partition --format tables does on one host. Run with spark-submit, or directly for "
                    "Spark's local mode (--master).")
    ap.add_argument("--schema", required=True, help="the tables' schema (graph.json)")
    ap.add_argument("--output", required=True, help="the dataset folder to publish (must not exist unless --force)")
    ap.add_argument("--parts", type=int, required=True, help="number of partitions K")
    ap.add_argument("--method", default="hash", choices=["hash", "random", "range", "file"],
                    help="partitioner (default hash; file: --assignment)")
    ap.add_argument("--assignment", help="--method file: one part per line, node by node (gpmetis's output)")
    ap.add_argument("--seed", type=int, default=1, help="random and hash seed (default 1)")
    ap.add_argument("--undirected", action="store_true", help="add the reverse of every edge")
    ap.add_argument("--drop-self-loops", action="store_true", help="remove u -> u edges")
    ap.add_argument("--direction", default="in", choices=["in", "out"], help="stored adjacency (default in)")
    ap.add_argument("--feature-dtype", default="float32", choices=["float32", "float16", "bfloat16", "int8"])
    ap.add_argument("--normalize-features", action="store_true", help="scale each feature row to sum |x| = 1")
    ap.add_argument("--chunk-nodes", type=int, default=65536, help="nodes per stored chunk")
    ap.add_argument("--force", action="store_true", help="replace an existing output folder (atomically)")
    ap.add_argument("--bin-dir", help="folder of the fanout binaries on every host (default: found as "
                                      "fanout.find_binary finds them)")
    ap.add_argument("--master", help="Spark master when not run by spark-submit (e.g. 'local[2]')")
    ap.add_argument("--executor-memory", help="spark.executor.memory (and the driver's in local mode), e.g. 2g")
    ap.add_argument("--local-dir", help="spark.local.dir: Spark's shuffle and spill folder")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    a = ap.parse_args(argv)
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = SparkSession.builder.appName("fanout-partition-spark")
    if a.master:
        b = b.master(a.master).config("spark.ui.enabled", "false")
    if a.executor_memory:
        b = b.config("spark.executor.memory", a.executor_memory).config("spark.driver.memory", a.executor_memory)
    if a.local_dir:
        b = b.config("spark.local.dir", a.local_dir)
    spark = b.getOrCreate()
    if a.quiet:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        meta = partition_on_spark(spark, a.schema, a.output, parts=a.parts, method=a.method, seed=a.seed,
                                  assignment=a.assignment, undirected=a.undirected,
                                  drop_self_loops=a.drop_self_loops, direction=a.direction,
                                  feature_dtype=a.feature_dtype, normalize_features=a.normalize_features,
                                  chunk_nodes=a.chunk_nodes, force=a.force, bin_dir=a.bin_dir, quiet=a.quiet)
    except errors.Error as e:
        print("fanout.spark: error: %s" % e, file=sys.stderr)
        return 1
    finally:
        spark.stop()
    print("wrote %s: %d nodes, %d edges, %d partition(s)" % (a.output, meta["num_nodes"], meta["num_edges"],
                                                              meta["num_parts"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
