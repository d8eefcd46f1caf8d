"""Partition tables on Spark: the same schema as ``fanout-partition --format tables`` (docs/DATA.md), for graphs
past one machine. Run it with ``spark-submit`` on a cluster or in Spark's local mode::

    spark-submit --master yarn  "$(python -c 'import fanout.spark as s; print(s.__file__)')" \\
        --schema /shared/graph.json --output /shared/graph-16 --parts 16 --method hash
    python -m fanout.spark --master 'local[2]' --schema graph.json --output out --parts 2

What runs where (docs/DATA.md "On Spark"):

- The driver checks the schema, cuts Parquet files into slices of row groups from their footers, counts, and
  publishes: it handles per-slice and per-partition numbers only (row counts, offsets, edge counts), never a node or
  an edge.
- The executors read the tables, one slice per task, with the native reader (``fanout-spark-task nodes`` /
  ``edges``: CSV or Parquet, the native tool's errors). Node tasks write their rows, by partition, to node files in
  the job's folder; one task writes the id map (id -> new id, partition) there; edge tasks resolve their endpoints
  through it, number their edges and route each to the task of the partition that stores it (Spark's one shuffle;
  past ``map_nodes`` nodes Spark joins instead); each partition's store is then written by ``fanout-spark-task
  write`` (the native writer, which places the edges by row and edge id) in that task.
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


def _edge_attrs(ctx):
    """The per-edge columns beside the ids, in stream order: (name, Spark type, dtype) for the time and the
    weight where the schema names them."""
    return ([("time", "long", "<i8")] if ctx["timed"] else []) + \
        ([("weight", "float", "<f4")] if ctx["weighted"] else [])


def _strings(f, n, what):
    import pyarrow as pa

    off = _i64(f, n + 1, what)
    data = _exact(f, int(off[-1]), what)
    if off[-1] >= 2**31:
        _fail("%s: one block's ids hold more than 2 GiB" % what)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(off.astype("<i4")), pa.py_buffer(data)])


def _unit_args(ctx, unit):
    """fanout-spark-task's arguments for one input slice: a file, or a run of a Parquet file's row groups."""
    file_index, first_group, end_group, first_row = unit[:4]
    args = ["--schema", ctx["schema"], "--file-index", str(file_index)]
    if first_group is not None:
        args += ["--row-groups", "%d:%d" % (first_group, end_group), "--first-row", str(first_row)]
    return args


def _node_unit_type(ctx, u):
    """The node type (index) of node slice u."""
    return ctx["node_file_table"][ctx["node_units"][u][0]]


def _edge_unit_table(ctx, u):
    """The edge table (index) of edge slice u."""
    return ctx["edge_file_table"][ctx["edge_units"][u][0]]


def _strings_of(ctx, t):
    return ctx["node_tables"][t]["string_ids"]


def _as_key(ctx, keys):
    """Ids as the job's key column holds them: strings where any node type has string ids (ints as decimal text),
    else int64."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if ctx["string_ids"] and not pa.types.is_string(keys.type):
        return pc.cast(keys, pa.string())
    return keys


def _stream_blocks(ctx, args, magic, what, read_block):
    """Runs a fanout-spark-task reader and yields read_block(stdout, n) for each block until its end (a block of
    0 rows); a cut stream or a failed reader fails the task with the reader's own message."""
    p, err = _run_reader(ctx, args)
    f = p.stdout
    try:
        if f.read(8) != magic:
            raise EOFError("the header")
        while True:
            n = int(_i64(f, 1, "a block header")[0])
            if n == 0:
                break
            yield read_block(f, n)
    except EOFError as e:
        p.stdout.close()
        _finish(p, err, "reading " + what)
        _fail("%s: the reader's stream ends inside %s" % (what, e))
    p.stdout.close()
    _finish(p, err, "reading " + what)


def _node_blocks(ctx, unit_index, ids_only):
    """The node stream of one slice, block by block: (n, dim, keys, labels, splits, features)."""
    import pyarrow as pa

    def block(f, n):
        dim = int(_i64(f, 1, "a block header")[0])
        keys = _strings(f, n, "the ids") if _strings_of(ctx, _node_unit_type(ctx, unit_index)) else \
            pa.array(_i64(f, n, "the ids"))
        labels = _i64(f, n, "the labels")
        splits = np.frombuffer(_exact(f, n, "the splits"), dtype=np.uint8)
        feats = np.frombuffer(_exact(f, 4 * n * dim, "the features"), dtype="<f4").reshape(n, dim)
        return n, dim, keys, labels, splits, feats

    args = ["nodes"] + _unit_args(ctx, ctx["node_units"][unit_index]) + (["--ids-only"] if ids_only else [])
    what = "node slice %d (%s)" % (unit_index, ctx["node_files"][ctx["node_units"][unit_index][0]])
    return _stream_blocks(ctx, args, b"FNSN0001", what, block)


def _read_node_ids(ctx):
    """Slices -> (unit, row, type, key): each slice's node ids, rows counted from its start."""
    import pyarrow as pa

    def fn(batches):
        for b in batches:
            for u in b.column(0).to_pylist():
                row, t = 0, _node_unit_type(ctx, int(u))
                for n, _, keys, _, _, _ in _node_blocks(ctx, int(u), True):
                    yield pa.RecordBatch.from_arrays(
                        [pa.array(np.full(n, u, dtype=np.int32)), pa.array(np.arange(row, row + n, dtype=np.int64)),
                         pa.array(np.full(n, t, dtype=np.int32)), _as_key(ctx, keys)],
                        names=["unit", "row", "type", "key"])
                    row += n
    return fn


def _write_node_files(ctx):
    """Slices -> the node files: each slice's rows of partition p, in row order, to nodes/u<unit>-p<p>.bin (the
    writer of partition p reads them in slice order); yields each slice's count, feature width, largest label and
    the largest |value| of each feature column."""
    import pyarrow as pa

    def fn(batches):
        for b in batches:
            for u in b.column(0).to_pylist():
                u = int(u)
                files, row, widths, max_label = {}, 0, set(), -1
                max_abs = None
                t = _node_unit_type(ctx, u)
                strings = _strings_of(ctx, t)
                try:
                    for n, dim, keys, labels, splits, feats in _node_blocks(ctx, u, False):
                        widths.add(dim)
                        if len(widths) > 1:
                            _fail("node slice %d (%s): feature rows of %s values" %
                                  (u, ctx["node_files"][ctx["node_units"][u][0]], sorted(widths)))
                        max_label = max(max_label, int(labels.max()))
                        if ctx["int8"] and dim:
                            m = np.abs(feats).max(axis=0)
                            max_abs = m if max_abs is None else np.maximum(max_abs, m)
                        dense = ctx["unit_offsets"][u] + np.arange(row, row + n, dtype=np.int64)
                        original = dense - ctx["type_first"][t] if strings else keys.to_numpy()
                        part = _parts_of(ctx, dense, original)
                        row += n
                        for p in np.unique(part):
                            sel = np.nonzero(part == p)[0]
                            f = files.get(int(p))
                            if f is None:
                                f = files[int(p)] = open(_node_file(ctx, u, int(p)) + ".tmp", "wb")
                                f.write(b"FNSP0001")
                            parts = []
                            if strings:
                                picked = keys.take(pa.array(sel))
                                off, names = _column_bytes(picked)
                                parts += [off.astype("<i8").tobytes(), names]
                            else:
                                names = b""
                                if ctx["string_ids"]:  # another type has names: these have empty ones
                                    parts.append(np.zeros(len(sel) + 1, dtype="<i8").tobytes())
                            f.write(np.array([len(sel), dim, len(names)], dtype="<i8").tobytes())
                            f.write(labels[sel].astype("<i8").tobytes())
                            f.write(splits[sel].tobytes())
                            f.write(original[sel].astype("<i8").tobytes())
                            for x in parts:
                                f.write(x)
                            f.write(np.ascontiguousarray(feats[sel]).tobytes())
                    for p, f in files.items():
                        f.write(np.zeros(3, dtype="<i8").tobytes())
                        f.close()
                        os.replace(_node_file(ctx, u, p) + ".tmp", _node_file(ctx, u, p))
                except BaseException:
                    for p, f in files.items():
                        f.close()
                        try:
                            os.unlink(_node_file(ctx, u, p) + ".tmp")
                        except OSError:
                            pass
                    raise
                yield pa.RecordBatch.from_arrays(
                    [pa.array([u], type=pa.int32()), pa.array([row], type=pa.int64()),
                     pa.array([widths.pop() if widths else -1], type=pa.int32()),
                     pa.array([max_label], type=pa.int64()),
                     pa.array([b"" if max_abs is None else max_abs.astype("<f4").tobytes()], type=pa.binary())],
                    names=["unit", "n", "width", "max_label", "max_abs"])
    return fn


def _node_file(ctx, unit, part):
    return os.path.join(ctx["nodes_dir"], "u%d-p%d.bin" % (unit, part))


def _edge_blocks(ctx, u):
    """The edge stream of slice u, block by block: (n, sources, destinations, attrs): the ids as Arrow arrays,
    attrs a list of numpy arrays, one per _edge_attrs column (the times as int64, the weights as float32)."""
    import pyarrow as pa

    et = ctx["edge_tables"][_edge_unit_table(ctx, u)]
    st, dt = _strings_of(ctx, et["source_type"]), _strings_of(ctx, et["destination_type"])

    def block(f, n):
        src = _strings(f, n, "the sources") if st else pa.array(_i64(f, n, "the sources"))
        dst = _strings(f, n, "the destinations") if dt else pa.array(_i64(f, n, "the destinations"))
        attrs = [np.frombuffer(_exact(f, int(np.dtype(dt).itemsize) * n, "the %ss" % name), dtype=dt)
                 for name, _, dt in _edge_attrs(ctx)]
        return n, src, dst, attrs

    args = ["edges"] + _unit_args(ctx, ctx["edge_units"][u]) + (["--timed"] if ctx["timed"] else []) + \
        (["--weighted"] if ctx["weighted"] else [])
    what = "edge slice %d (%s)" % (u, ctx["edge_files"][ctx["edge_units"][u][0]])
    return _stream_blocks(ctx, args, b"FNSE0001", what, block)


def _read_edges(ctx):
    """Slices -> (unit, row, st, dt, src, dst, attrs): each slice's edges as its file holds them, with their
    endpoints' node types (for Spark's join)."""
    import pyarrow as pa

    def fn(batches):
        for b in batches:
            for u in b.column(0).to_pylist():
                row = 0
                et = ctx["edge_tables"][_edge_unit_table(ctx, int(u))]
                for n, src, dst, attrs in _edge_blocks(ctx, int(u)):
                    cols = [pa.array(np.full(n, u, dtype=np.int32)), pa.array(np.arange(row, row + n, dtype=np.int64)),
                            pa.array(np.full(n, et["source_type"], dtype=np.int32)),
                            pa.array(np.full(n, et["destination_type"], dtype=np.int32)),
                            _as_key(ctx, src), _as_key(ctx, dst)] + [pa.array(a) for a in attrs]
                    yield pa.RecordBatch.from_arrays(
                        cols, names=["unit", "row", "st", "dt", "src", "dst"] + [a[0] for a in _edge_attrs(ctx)])
                    row += n
    return fn


_ID_MAPS = {}  # path -> loaded id map, kept by a Python worker between its tasks


def _id_map(ctx, t):
    """Node type t's id map the index task wrote (memory-mapped where it is numbers)."""
    import pyarrow as pa

    path = os.path.join(ctx["idmap_dir"], "t%d" % t)
    m = _ID_MAPS.get(path)
    if m is None:
        with open(os.path.join(path, "index.json")) as f:
            m = json.load(f)
        if m["kind"] == "strings":
            with pa.memory_map(os.path.join(path, "strings.arrow")) as src:
                t = pa.ipc.open_file(src).read_all()
            m["keys"] = t.column("key").combine_chunks()
            m["new"] = t.column("new").to_numpy()
            m["part"] = t.column("part").to_numpy()
        else:
            for x in ("keys", "new", "part"):
                if os.path.exists(os.path.join(path, x + ".npy")):
                    m[x] = np.load(os.path.join(path, x + ".npy"), mmap_mode="r")
        for other in [x for x in _ID_MAPS if os.path.dirname(x) != ctx["idmap_dir"]]:
            del _ID_MAPS[other]  # another job's
        _ID_MAPS[path] = m
    return m


def _lookup(m, keys):
    """Arrow ids -> (new ids, partitions, found) through the id map."""
    import pyarrow.compute as pc

    n = len(keys)
    new = np.full(n, -1, dtype=np.int64)
    part = np.zeros(n, dtype=np.int32)
    if m["kind"] == "strings":
        idx = pc.index_in(keys, value_set=m["keys"]).fill_null(-1).to_numpy()
        ok = idx >= 0
        new[ok], part[ok] = m["new"][idx[ok]], m["part"][idx[ok]]
        return new, part, ok
    k = keys.to_numpy()
    if m["kind"] == "direct":  # ids in a compact range: an array indexed by id - lo
        span = len(m["new"])
        i = k - m["lo"]
        ok = (i >= 0) & (i < span)
        new[ok] = m["new"][i[ok]]
        ok &= new >= 0
        part[ok] = m["part"][i[ok]]
        return new, part, ok
    if len(m["keys"]) == 0:  # a node type without nodes
        return new, part, np.zeros(n, dtype=bool)
    pos = np.minimum(np.searchsorted(m["keys"], k), len(m["keys"]) - 1)
    ok = m["keys"][pos] == k
    new[ok], part[ok] = m["new"][pos[ok]], m["part"][pos[ok]]
    return new, part, ok


def _edge_copies(ctx, u, su, sp, dv, dp, keep, loop, kept_seen, nl_seen):
    """The stored copies of slice u's kept edges (u -> v) in the native tool's edge order (docs/DATA.md): as read
    (type: the table's), reversed where the table names a "reverse" (its reverse type), and, undirected, each
    non-loop of both reversed again (the reverse of its type, as AddReverseEdgeTypes gives it). Each copy: (part,
    row, eid, neighbor, type, selection), stored in the row of its destination ("in"; "out": its source)."""
    i = _edge_unit_table(ctx, u)
    e = ctx["edge_numbering"]
    rank = np.cumsum(keep) - 1 + kept_seen
    fwd = e["base"][i] + e["kept_off"][u] + rank[keep]
    out = [(su, sp, dv, dp, fwd, e["type"][i], keep)]
    if e["rtype"][i] >= 0:
        out.append((dv, dp, su, sp, fwd + e["kept"][i], e["rtype"][i], keep))
    if ctx["undirected"]:
        nl = keep & ~loop
        rnl = np.cumsum(nl) - 1 + nl_seen
        ufwd = e["ubase"][i] + e["nl_off"][u] + rnl[nl]
        out.append((dv, dp, su, sp, ufwd, e["reverse_type"][e["type"][i]], nl))
        if e["rtype"][i] >= 0:
            out.append((su, sp, dv, dp, ufwd + e["nonloops"][i], e["reverse_type"][e["rtype"][i]], nl))
    stored = []
    for a, ap, z, zp, eid, t, sel in out:  # edge a -> z
        tgt, tp, nb = (z, zp, a) if ctx["incoming"] else (a, ap, z)
        stored.append((tp[sel], tgt[sel], eid, nb[sel], t, sel))
    return stored


def _edge_fn(ctx, emit):
    """Slices -> their edges resolved through the id maps of their endpoints' node types, in the slice's task (no
    join in Spark). Counting (emit False): per slice its rows, kept edges, kept self-loops and dangling edges, and its
    first dangling edge. Emitting: each kept edge's stored copies (_edge_copies) as (route, part, row, eid, nbr,
    attrs[, etype])."""
    import pyarrow as pa

    def fn(batches):
        k = ctx["parts"]
        routes = np.asarray(ctx.get("routes", np.zeros(k, dtype=np.int64)), dtype=np.int64)
        names = ["route", "part", "row", "eid", "nbr"] + [a[0] for a in _edge_attrs(ctx)] + \
            (["etype"] if ctx["hetero"] else [])
        for b in batches:
            for u in b.column(0).to_pylist():
                u = int(u)
                et = ctx["edge_tables"][_edge_unit_table(ctx, u)]
                ms, md = _id_map(ctx, et["source_type"]), _id_map(ctx, et["destination_type"])
                row = kept_seen = nl_seen = 0
                counts = [0, 0, 0, 0]
                bad = (-1, -1, "")
                for n, src, dst, attrs in _edge_blocks(ctx, u):
                    su, sp, fs = _lookup(ms, src)
                    dv, dp, fd = _lookup(md, dst)
                    dangling = ~(fs & fd)
                    loop = ~dangling & (su == dv)
                    keep = ~dangling & ~(loop & ctx["drop_self_loops"])
                    if dangling.any() and bad[0] < 0:
                        i = int(np.argmax(dangling))
                        bad = (row + i, 0, str(src[i])) if not fs[i] else (row + i, 1, str(dst[i]))
                        if emit and not ctx["drop_dangling"]:
                            _fail(_dangling_message(ctx, u, *bad))
                    row += n
                    if not emit:
                        counts[0] += n
                        counts[1] += int(keep.sum())
                        counts[2] += int((keep & loop).sum())
                        counts[3] += int(dangling.sum())
                        continue
                    for p_, r_, e_, n_, t_, sel in _edge_copies(ctx, u, su, sp, dv, dp, keep, loop, kept_seen,
                                                               nl_seen):
                        if len(p_):
                            cols = [pa.array(routes[p_]), pa.array(p_.astype(np.int32)), pa.array(r_), pa.array(e_),
                                    pa.array(n_)] + [pa.array(a[sel]) for a in attrs]
                            if ctx["hetero"]:
                                cols.append(pa.array(np.full(len(p_), t_, dtype=np.int32)))
                            yield pa.RecordBatch.from_arrays(cols, names=names)
                    kept_seen += int(keep.sum())
                    nl_seen += int((keep & ~loop).sum())
                if not emit:
                    yield pa.RecordBatch.from_arrays(
                        [pa.array([u], type=pa.int32())] + [pa.array([c], type=pa.int64()) for c in counts] +
                        [pa.array([bad[0]], type=pa.int64()), pa.array([bad[1]], type=pa.int32()),
                         pa.array([bad[2]], type=pa.string())],
                        names=["unit", "rows", "kept", "loops", "dangling", "bad_row", "bad_end", "bad_key"])
    return fn


def _dangling_message(ctx, u, row, end, key):
    f, _, _, first_row = ctx["edge_units"][u][:4]
    et = ctx["edge_tables"][_edge_unit_table(ctx, u)]
    t = ctx["node_tables"][et["source_type"] if end == 0 else et["destination_type"]]["type"]
    return ("%s row %d, the %s: '%s' names no node of type '%s' (the schema's \"dangling_edges\": \"drop\" counts "
            "and drops such edges)" % (ctx["edge_files"][f], first_row + row + 1,
                                        "source" if end == 0 else "destination", str(key)[:40], t))


def _id_pieces_fn(ctx):
    """(unit, row, key) -> each slice's (key, new id, partition) to idmap/u<unit>.arrow."""
    import pyarrow as pa

    renumber = _renumber_fn(ctx)

    def fn(batches):
        files = {}  # slice -> (file, writer, path)
        for b in renumber(batches):
            units = b.column("unit").to_numpy()
            for u in np.unique(units):
                sub = b if (units == u).all() else b.filter(pa.array(units == u))
                sub = pa.RecordBatch.from_arrays(sub.columns[1:], names=sub.schema.names[1:])
                if int(u) not in files:
                    path = os.path.join(ctx["idmap_dir"], "u%d.arrow" % u)
                    f = pa.OSFile(path + ".tmp", "wb")
                    files[int(u)] = (f, pa.ipc.new_file(f, sub.schema), path)
                files[int(u)][1].write_batch(sub)
        for f, w, path in files.values():
            w.close()
            f.close()
            os.replace(path + ".tmp", path)
        yield pa.RecordBatch.from_arrays([pa.array(list(files), type=pa.int32())], names=["unit"])
    return fn


def _index_fn(ctx, units):
    """One task: the slices' id pieces -> each node type's id map the edge tasks read (idmap/t<type>/index.json and
    arrays): ids in a compact range as arrays indexed by id, other integer ids sorted, string ids as one Arrow
    table."""
    import pyarrow as pa

    def fn(batches):
        for _ in batches:
            pass
        for typ in range(len(ctx["node_tables"])):
            _write_id_map(ctx, typ, [u for u in range(units) if _node_unit_type(ctx, u) == typ])
        yield pa.RecordBatch.from_arrays([pa.array([1], type=pa.int32())], names=["ok"])
    return fn


def _write_id_map(ctx, typ, units):
    """Node type typ's id map from the id pieces of its slices `units` (removed after)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tables = []
    for u in units:
        path = os.path.join(ctx["idmap_dir"], "u%d.arrow" % u)
        if os.path.exists(path):
            with pa.memory_map(path) as src:
                tables.append(pa.ipc.open_file(src).read_all())
    d = os.path.join(ctx["idmap_dir"], "t%d" % typ)
    os.makedirs(d, exist_ok=True)
    t = pa.concat_tables(tables) if tables else None
    if t is not None and not _strings_of(ctx, typ) and pa.types.is_string(t.column("key").type):
        i = t.schema.get_field_index("key")  # int ids held as text (beside another type's string ids)
        t = t.set_column(i, "key", pc.cast(t.column("key"), pa.int64()))
    if t is None or t.num_rows == 0:  # a type without nodes: an empty sorted map
        for x, dt in (("keys", np.int64), ("new", np.int64), ("part", np.int32)):
            np.save(os.path.join(d, x + ".npy"), np.zeros(0, dtype=dt))
        index = {"kind": "sorted"}
    elif _strings_of(ctx, typ):
        with pa.OSFile(os.path.join(d, "strings.arrow"), "wb") as f, pa.ipc.new_file(f, t.schema) as w:
            w.write_table(t)
        index = {"kind": "strings"}
    else:
        keys = t.column("key").to_numpy()
        new = t.column("new").to_numpy()
        part = t.column("part").to_numpy().astype(np.int32)
        lo, hi = int(keys.min()), int(keys.max())
        if hi - lo + 1 <= 4 * len(keys) + 65536:
            dn = np.full(hi - lo + 1, -1, dtype=np.int64)
            dp = np.zeros(hi - lo + 1, dtype=np.int32)
            dn[keys - lo], dp[keys - lo] = new, part
            np.save(os.path.join(d, "new.npy"), dn)
            np.save(os.path.join(d, "part.npy"), dp)
            index = {"kind": "direct", "lo": lo}
        else:
            order = np.argsort(keys, kind="stable")
            np.save(os.path.join(d, "keys.npy"), keys[order])
            np.save(os.path.join(d, "new.npy"), new[order])
            np.save(os.path.join(d, "part.npy"), part[order])
            index = {"kind": "sorted"}
    for u in units:
        try:
            os.unlink(os.path.join(ctx["idmap_dir"], "u%d.arrow" % u))
        except OSError:
            pass
    with open(os.path.join(d, "index.json.tmp"), "w") as f:
        json.dump(index, f)
    os.replace(os.path.join(d, "index.json.tmp"), os.path.join(d, "index.json"))


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
    if ctx["method"] in ("random", "file"):
        assignment = np.memmap(ctx["assignment"], dtype="<i4", mode="r", shape=(n,))
        return np.asarray(assignment[dense], dtype=np.int32)
    if k == 1:
        return np.zeros(len(dense), dtype=np.int32)
    if ctx["method"] == "range":
        return ((dense * k) // n).astype(np.int32)
    key = np.uint64(_mix64_int((ctx["seed"] ^ 0x6861736870617274) & _MASK))
    with np.errstate(over="ignore"):
        return _draw_below(_mix64(key ^ original.astype(np.uint64)), k).astype(np.int32)


def _dense_and_original(ctx, batch):
    """Each node's dense id (slices in order: node types in schema order, then files) and original id (its int64 id,
    or, with string ids, its row within its type)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    units = batch.column("unit").to_numpy()
    dense = ctx["unit_offsets"][units] + batch.column("row").to_numpy()
    types = batch.column("type").to_numpy()
    named = ctx["type_strings"][types]
    original = dense - ctx["type_first"][types]
    if not named.all():
        keys = batch.column("key")
        if pa.types.is_string(keys.type):  # int ids held as text beside string ids of other types
            ints = np.zeros(len(keys), dtype=np.int64)
            ints[~named] = pc.cast(keys.filter(pa.array(~named)), pa.int64()).to_numpy()
        else:
            ints = keys.to_numpy()
        original = np.where(named, original, ints)
    return dense, original


def _parts_fn(ctx):
    import pyarrow as pa

    def fn(batches):
        for b in batches:
            dense, original = _dense_and_original(ctx, b)
            yield pa.RecordBatch.from_arrays([b.column("unit"), pa.array(_parts_of(ctx, dense, original))],
                                             names=["unit", "part"])
    return fn


def _renumber_fn(ctx):
    """(unit, row, key) -> (key, new, part): each node's new id is its part's first id, plus the part's nodes in
    earlier slices, plus those before it in its slice (the native renumbering: by part, then input order). A
    slice's rows come in order, in one task."""
    import pyarrow as pa

    def fn(batches):
        k = ctx["parts"]
        seen = {}  # slice -> nodes of each part so far
        for b in batches:
            dense, original = _dense_and_original(ctx, b)
            part = _parts_of(ctx, dense, original)
            new = np.empty(len(part), dtype=np.int64)
            units = b.column("unit").to_numpy()
            for u in np.unique(units):
                sel = np.nonzero(units == u)[0]
                counts = seen.setdefault(int(u), np.zeros(k, dtype=np.int64))
                p = part[sel]
                order = np.argsort(p, kind="stable")
                ps = p[order]
                rank = np.arange(len(ps)) - np.searchsorted(ps, np.arange(k))[ps]
                new[sel[order]] = ctx["part_offsets"][ps] + ctx["unit_part_prefix"][int(u)][ps] + counts[ps] + rank
                counts += np.bincount(p, minlength=k)
            yield pa.RecordBatch.from_arrays([b.column("unit"), b.column("type"), b.column("key"), pa.array(new),
                                              pa.array(part)], names=["unit", "type", "key", "new", "part"])
    return fn


def _column_bytes(col):
    """The concatenated values of a binary or string Arrow array (no nulls) and its offsets from 0."""
    off = np.frombuffer(col.buffers()[1], dtype="<i4")[col.offset:col.offset + len(col) + 1].astype(np.int64)
    data = col.buffers()[2]
    raw = b"" if data is None else data.to_pybytes()[off[0]:off[-1]]
    return off - off[0], raw


class _PartFeed:
    """One partition's stored edges, piped to ``fanout-spark-task write`` as they come (in any order: the writer
    places them by row and edge id); the writer takes the partition's nodes from the node files."""

    def __init__(self, ctx, part):
        self.part = part
        args = [ctx["task"], "write", "--meta", ctx["meta"], "--staging", ctx["staging"], "--part", str(part),
                "--nodes-dir", ctx["nodes_dir"], "--units", str(len(ctx["node_units"])), "--spill-dir",
                ctx["spill_dir"], "--memory-limit", ctx["writer_memory"]]
        if ctx["normalize"]:
            args.append("--normalize-features")
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                  env=_task_env())
        self.timed, self.weighted, self.typed = ctx["timed"], ctx["weighted"], ctx["hetero"]
        self._send(b"FNSW0003")

    def _send(self, data):
        try:
            self.p.stdin.write(data)
        except BrokenPipeError:
            self.close()  # raises with the writer's message
            _fail("partition %d: the writer stopped reading" % self.part)

    def feed(self, b):
        self._send(np.array([len(b)], dtype="<i8").tobytes())
        for c in ("row", "eid", "nbr") + (("time",) if self.timed else ()) + (("etype",) if self.typed else ()):
            self._send(memoryview(np.ascontiguousarray(b.column(c).to_numpy(), dtype="<i8")))  # no nulls
        if self.weighted:
            self._send(memoryview(np.ascontiguousarray(b.column("weight").to_numpy(), dtype="<f4")))

    def close(self):
        try:
            self.p.stdin.write(np.zeros(1, dtype="<i8").tobytes())
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        out = self.p.stdout.read()
        _finish(self.p, self.err, "writing partition %d" % self.part)
        return json.loads(out.decode())


_DANGLING = "an edge names a node no node table has"


def _writer_fn(ctx):
    import pyarrow as pa

    def fn(batches):
        feeds = {}  # part -> its writer (one, where Spark gave the task one partition)
        try:
            for b in batches:
                if b.column("row").null_count or b.column("nbr").null_count:
                    _fail(_DANGLING)
                parts = b.column("part").to_numpy()
                for p in np.unique(parts):
                    feed = feeds.get(int(p))
                    if feed is None:
                        feed = feeds[int(p)] = _PartFeed(ctx, int(p))
                    feed.feed(b if (parts == p).all() else b.filter(pa.array(parts == p)))
            done = [feed.close() for feed in feeds.values()]
        except BaseException:
            for feed in feeds.values():
                feed.p.kill()
                feed.p.wait()
            raise
        yield pa.RecordBatch.from_pylist(done, schema=pa.schema(
            [("part", pa.int32()), ("edges", pa.int64()), ("cut_edges", pa.int64()), ("bytes", pa.int64()),
             ("slices", pa.int64()), ("receive_seconds", pa.float64()), ("write_seconds", pa.float64())]))
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


class _Log:
    def __init__(self, quiet):
        import time

        self.quiet, self.t0, self.clock = quiet, time.perf_counter(), time.perf_counter

    def __call__(self, msg):
        if not self.quiet:
            print("fanout.spark: [%6.1f s] %s" % (self.clock() - self.t0, msg), flush=True)


def _slices(files, rows_per_slice):
    """Each file cut into slices (one task each): a CSV file whole; a Parquet file in runs of whole row groups of
    about rows_per_slice rows, from its footer (metadata only). Returns [(file index, first group, end group,
    first row, rows or None where only reading tells)] (groups None for a whole file)."""
    import pyarrow.parquet as pq

    out = []
    for i, f in enumerate(files):
        if not f.endswith((".parquet", ".pq")):
            out.append((i, None, None, 0, None))
            continue
        try:
            md = pq.ParquetFile(f).metadata
        except Exception as e:  # noqa: BLE001 - the file's own fault, named
            raise errors.InvalidArgument("%s: not a readable Parquet file (%s)" % (f, e)) from None
        first, rows, start = 0, 0, 0
        for g in range(md.num_row_groups):
            rows += md.row_group(g).num_rows
            if rows >= rows_per_slice or g == md.num_row_groups - 1:
                out.append((i, first, g + 1, start, rows))
                first, start, rows = g + 1, start + rows, 0
        if md.num_row_groups == 0:
            out.append((i, None, None, 0, 0))
    return out


def partition_on_spark(spark, schema, output, *, parts, method="hash", seed=1, assignment=None,
                       undirected=False, drop_self_loops=False, direction="in", feature_dtype="float32",
                       normalize_features=False, chunk_nodes=65536, force=False, bin_dir=None, quiet=True,
                       map_nodes=1 << 25, slice_rows=(1 << 18, 1 << 21), writer_memory="1G", report=None):
    """Partitions the tables ``schema`` names on the Spark session ``spark`` into the dataset folder ``output``
    (as ``fanout-partition --format tables`` would with the same options) and returns its meta.json as a dict.

    ``method``: hash, random, range, or file (``assignment``: one part per line, node by node in the tables'
    order, as gpmetis writes it). ``map_nodes``: up to this many nodes, one task writes their id map to the job's
    folder (about 12 bytes per node) and each edge task resolves its edges' endpoints through it (no join in
    Spark); above it, Spark joins the edges to the nodes (shuffling both).
    ``slice_rows``: about how many rows of a Parquet node / edge file one task reads (whole row groups; a CSV file
    is one task). ``writer_memory``: the memory a partition's writer places edges in (a slice of its chunks at a
    time; 40 bytes per edge). ``report``:
    a dict that receives the seconds of each step and the rows the driver collected. Raises fanout.InvalidArgument
    naming the file, row and column on bad input, and fanout.NotSupported for what the job does not take yet
    (int8 features with normalize_features); nothing is published then. Heterogeneous schemas (several node and
    edge types, reverse types) are taken as the native tool takes them, and edge times and weights (the schema's
    ``time`` and ``weight`` columns) ride with each edge to its writer.
    """
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
    os.makedirs(os.path.join(job, "nodes"))
    os.makedirs(os.path.join(job, "spill"))
    persisted = []
    report = report if report is not None else {}
    try:
        ctx = {"task": task, "schema": schema, "string_ids": plan["string_ids"], "hetero": bool(plan["hetero"]),
               "node_tables": plan["node_tables"], "edge_tables": plan["edge_tables"],
               "node_file_table": plan["node_file_table"], "edge_file_table": plan["edge_file_table"],
               "parts": parts, "method": method,
               "seed": int(seed), "staging": staging, "normalize": bool(normalize_features),
               "dataset_id": begun["dataset_id"], "nodes_dir": os.path.join(job, "nodes"),
               "node_files": plan["node_files"], "edge_files": plan["edge_files"],
               "int8": feature_dtype == "int8", "spill_dir": os.path.join(job, "spill"),
               "writer_memory": str(writer_memory), "timed": bool(plan["timed"]),
               "weighted": bool(plan.get("weighted", False))}
        opts = dict(undirected=bool(undirected), drop_self_loops=bool(drop_self_loops), direction=direction,
                    feature_dtype=feature_dtype, normalize=bool(normalize_features), chunk_nodes=int(chunk_nodes),
                    assignment=assignment, map_nodes=int(map_nodes),
                    slice_rows=(int(slice_rows[0]), int(slice_rows[1])))
        # Larger Arrow batches for the job's Python steps (fewer, cheaper hand-overs); the session's own value
        # comes back after.
        batch_conf = "spark.sql.execution.arrow.maxRecordsPerBatch"
        saved = spark.conf.get(batch_conf, None)
        spark.conf.set(batch_conf, str(1 << 17))
        try:
            meta = _run(spark, plan, ctx, job, persisted, schema, opts, _Log(quiet), report)
        finally:
            if saved is None:
                spark.conf.unset(batch_conf)
            else:
                spark.conf.set(batch_conf, saved)
        _task(task, "commit", "--meta", os.path.join(job, "meta.json"), "--staging", staging, "--output", output)
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


def _run(spark, plan, ctx, job, persisted, schema, o, log, report):
    import time

    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    t_step = [time.perf_counter()]
    collected = [0]

    def step(name):
        now = time.perf_counter()
        report.setdefault("seconds", {})[name] = now - t_step[0]
        t_step[0] = now

    def collect(df):
        rows = df.collect()
        collected[0] += len(rows)
        return rows

    task, k = ctx["task"], ctx["parts"]
    key_type = "string" if plan["string_ids"] else "long"
    ctx["node_units"] = _slices(plan["node_files"], o["slice_rows"][0])
    ctx["edge_units"] = _slices(plan["edge_files"], o["slice_rows"][1])
    nu, eu = len(ctx["node_units"]), len(ctx["edge_units"])
    log("%s: %d node file(s) in %d slice(s), %d edge file(s) in %d slice(s), %d partition(s), method %s" %
        (plan["name"], len(plan["node_files"]), nu, len(plan["edge_files"]), eu, k, ctx["method"]))

    # Node ids: one task per slice; counted, checked for duplicates, given their parts and new ids.
    ids_raw = spark.range(0, nu, 1, nu).mapInArrow(_read_node_ids(ctx),
                                                   "unit int, row long, type int, key %s" % key_type)
    ids_raw = ids_raw.persist(StorageLevel.MEMORY_AND_DISK)
    persisted.append(ids_raw)
    per_unit = {r["unit"]: r["count"] for r in collect(ids_raw.groupBy("unit").count())}
    counts = np.array([per_unit.get(i, 0) for i in range(nu)], dtype=np.int64)
    num_nodes = int(counts.sum())
    if num_nodes == 0:
        raise errors.InvalidArgument("schema %s: no nodes" % schema)
    if k > num_nodes:
        raise errors.InvalidArgument("--parts %d exceeds the %d nodes of the graph" % (k, num_nodes))
    dup = collect(ids_raw.groupBy("type", "key").count().where("count > 1").limit(1))
    if dup:
        first = collect(ids_raw.where((F.col("type") == dup[0]["type"]) & (F.col("key") == dup[0]["key"]))
                        .orderBy("unit", "row").limit(2))

        def where(r):
            f, _, _, first_row = ctx["node_units"][r["unit"]][:4]
            return "%s row %d" % (plan["node_files"][f], first_row + r["row"] + 1)

        raise errors.InvalidArgument("node type '%s': id %r is listed twice (%s and %s, rows counted from 1)" %
                                     (ctx["node_tables"][dup[0]["type"]]["type"], dup[0]["key"], where(first[0]),
                                      where(first[1])))
    # Slices come type by type (the plan's node_files are in schema order): each type's first dense id.
    T = len(ctx["node_tables"])
    unit_types = np.array([_node_unit_type(ctx, u) for u in range(nu)], dtype=np.int64)
    type_counts = np.bincount(unit_types, weights=counts, minlength=T).astype(np.int64)
    ctx.update(num_nodes=num_nodes, unit_offsets=np.r_[0, np.cumsum(counts)][:-1].astype(np.int64),
               type_first=np.r_[0, np.cumsum(type_counts)][:-1].astype(np.int64),
               type_strings=np.array([t["string_ids"] for t in ctx["node_tables"]], dtype=bool))
    step("node_ids")
    if ctx["method"] in ("random", "file"):
        ctx["assignment"] = os.path.join(job, "assignment.i32")
        args = ["assign", "--method", ctx["method"], "--parts", str(k), "--seed", str(ctx["seed"]), "--num-nodes",
                str(num_nodes), "--out", ctx["assignment"]]
        if o["assignment"] is not None:
            args += ["--assignment", os.path.abspath(str(o["assignment"]))]
        # One executor computes it (4 bytes per node; the random method's shuffle is sequential).
        collect(spark.range(0, 1, 1, 1).mapInArrow(_assign_fn(ctx, args), "ok int"))
    per = np.zeros((nu, k), dtype=np.int64)
    for r in collect(ids_raw.mapInArrow(_parts_fn(ctx), "unit int, part int").groupBy("unit", "part").count()):
        per[r["unit"], r["part"]] = r["count"]
    part_nodes = per.sum(axis=0)
    ctx["part_offsets"] = np.r_[0, np.cumsum(part_nodes)][:-1].astype(np.int64)
    ctx["unit_part_prefix"] = (np.cumsum(per, axis=0) - per).astype(np.int64)
    # Heterogeneous: each partition's nodes by type (the renumbering above is by part, then slice, so by type).
    by_part_type = np.zeros((k, T), dtype=np.int64)
    for u in range(nu):
        by_part_type[:, unit_types[u]] += per[u]
    type_bounds = np.r_[0, np.cumsum(by_part_type.reshape(-1))].astype(np.int64)
    local_map = num_nodes <= o["map_nodes"]
    if local_map:  # the id map to files every edge task reads (one task builds it: ~12 bytes per node)
        ctx["idmap_dir"] = os.path.join(job, "idmap")
        os.makedirs(ctx["idmap_dir"])
        collect(ids_raw.mapInArrow(_id_pieces_fn(ctx), "unit int"))
        collect(spark.range(0, 1, 1, 1).mapInArrow(_index_fn(ctx, nu), "ok int"))
    else:  # too large for one executor: Spark joins the edges to it
        id_map = ids_raw.mapInArrow(_renumber_fn(ctx), "unit int, type int, key %s, new long, part int" % key_type)
        id_map = id_map.drop("unit").persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(id_map)
    step("partition")
    log("%d nodes in %d partition(s)" % (num_nodes, k))

    # Node rows: one task per slice writes them to the node files, by partition.
    stats = collect(spark.range(0, nu, 1, nu).mapInArrow(
        _write_node_files(ctx), "unit int, n long, width int, max_label long, max_abs binary"))
    for r in stats:
        if r["n"] != counts[r["unit"]]:
            raise errors.InvalidArgument("node slice %d: %d rows read, %d the first time (did the tables change?)"
                                         % (r["unit"], r["n"], counts[r["unit"]]))
    type_dims = []
    for t in range(T):  # each type's width (every row of a type has it); the store's is the widest
        widths = {r["width"] for r in stats if r["n"] > 0 and unit_types[r["unit"]] == t}
        if len(widths) > 1:
            raise errors.InvalidArgument("node type '%s': feature rows of different widths (%s values)" %
                                         (ctx["node_tables"][t]["type"], ", ".join(str(w) for w in sorted(widths))))
        type_dims.append(max(widths.pop(), 0) if widths else 0)
    dim = max(type_dims)
    max_label = max((r["max_label"] for r in stats), default=-1)
    feature_max_abs = None
    if ctx["int8"] and dim > 0:
        m = np.zeros(dim, dtype=np.float32)
        for r in stats:
            if r["max_abs"]:
                x = np.frombuffer(r["max_abs"], dtype="<f4")
                m[:len(x)] = np.maximum(m[:len(x)], x)
        feature_max_abs = [float(x) for x in m]
    step("node_rows")
    log("node rows written (%d features)" % dim)

    # Spark task p gets exactly partition p's edges: each partition is routed by a key whose hash Spark's
    # partitioner sends to task p (found by Spark's own hash; k rows come back).
    routes = {r["b"]: r["id"] for r in collect(
        spark.range(0, 64 * k + 64, 1, 1).select("id", F.expr("pmod(hash(id), %d)" % k).alias("b"))
        .groupBy("b").agg(F.min("id").alias("id")))}
    routed = len(routes) == k  # else (never seen) Spark samples the partitions to spread them
    attr_cols = "".join(", %s %s" % (name, t) for name, t, _ in _edge_attrs(ctx))
    record_schema = "route long, part int, row long, eid long, nbr long" + attr_cols + \
        (", etype int" if ctx["hetero"] else "")
    ctx["routes"] = np.array([routes[p] for p in range(k)] if routed else range(k), dtype=np.int64)
    ctx.update(incoming=o["direction"] == "in", undirected=o["undirected"], drop_self_loops=o["drop_self_loops"],
               drop_dangling=plan["drop_dangling"])

    # Each slice's rows, kept edges and kept self-loops: from the Parquet footers where nothing can be dropped
    # and no reverse edges are added (every row an edge, in order); else counted (one pass).
    footer_rows = [u[4] for u in ctx["edge_units"]]
    rows = np.array([x or 0 for x in footer_rows], dtype=np.int64)
    kept, loops, dangling = rows.copy(), np.zeros(eu, dtype=np.int64), 0
    counted = (plan["drop_dangling"] or o["drop_self_loops"] or o["undirected"] or
               any(x is None for x in footer_rows))
    j = None
    if not local_map:
        raw_edges = spark.range(0, eu, 1, eu).mapInArrow(
            _read_edges(ctx), "unit int, row long, st int, dt int, src %s, dst %s%s" % (key_type, key_type, attr_cols))
        ids = id_map.select("type", "key", "new", "part")
        j = raw_edges.join(ids.select(F.col("type").alias("st"), F.col("key").alias("src"), F.col("new").alias("su"),
                                      F.col("part").alias("sp")), ["st", "src"], "left") \
            .join(ids.select(F.col("type").alias("dt"), F.col("key").alias("dst"), F.col("new").alias("dv"),
                             F.col("part").alias("dp")), ["dt", "dst"], "left")
    dangling_col = F.col("su").isNull() | F.col("dv").isNull()
    keep = ~dangling_col
    if o["drop_self_loops"]:
        keep = keep & (F.col("su") != F.col("dv"))

    def first_dangling():
        b = collect(j.where(dangling_col).orderBy("unit", "row").limit(1))[0]
        end, key = (0, b["src"]) if b["su"] is None else (1, b["dst"])
        return errors.InvalidArgument(_dangling_message(ctx, b["unit"], b["row"], end, key))

    if counted and local_map:
        first_bad = None
        for r in collect(spark.range(0, eu, 1, eu).mapInArrow(
                _edge_fn(ctx, False), "unit int, rows long, kept long, loops long, dangling long, bad_row long, "
                                      "bad_end int, bad_key string")):
            u = r["unit"]
            rows[u], kept[u], loops[u] = r["rows"], r["kept"], r["loops"]
            dangling += r["dangling"]
            if r["bad_row"] >= 0 and (first_bad is None or u < first_bad[0]):
                first_bad = (u, r["bad_row"], r["bad_end"], r["bad_key"])
        if dangling and not plan["drop_dangling"]:
            raise errors.InvalidArgument(_dangling_message(ctx, *first_bad))
    elif counted:
        loop_kept = keep & (F.col("su") == F.col("dv"))
        for r in collect(j.groupBy("unit").agg(
                F.count(F.lit(1)).alias("rows"), F.sum(keep.cast("long")).alias("kept"),
                F.sum(F.coalesce(loop_kept, F.lit(False)).cast("long")).alias("loops"),
                F.sum(dangling_col.cast("long")).alias("dangling"))):
            u = r["unit"]
            rows[u], kept[u], loops[u] = r["rows"], r["kept"] or 0, r["loops"] or 0
            dangling += r["dangling"] or 0
        if dangling and not plan["drop_dangling"]:
            raise first_dangling()
    # The native tool's edge order and types (LoadTables, then ApplyEdgeOptions): each table's kept rows, then
    # (a "reverse") the same reversed; undirected, the non-loops of all of that reversed again, in the same order.
    nonloop = kept - loops
    tables = ctx["edge_tables"]
    unit_tables = np.array([_edge_unit_table(ctx, u) for u in range(eu)], dtype=np.int64)
    K = np.bincount(unit_tables, weights=kept, minlength=len(tables)).astype(np.int64)
    NL = np.bincount(unit_tables, weights=nonloop, minlength=len(tables)).astype(np.int64)
    copies = np.array([2 if t["reverse"] else 1 for t in tables], dtype=np.int64)
    e1 = int((K * copies).sum())
    num_edges = e1 + (int((NL * copies).sum()) if o["undirected"] else 0)
    kept_off, nl_off = np.zeros(eu, dtype=np.int64), np.zeros(eu, dtype=np.int64)
    for i in range(len(tables)):  # each slice's offset within its table (slices in file order)
        us = np.nonzero(unit_tables == i)[0]
        kept_off[us] = np.r_[0, np.cumsum(kept[us])][:-1]
        nl_off[us] = np.r_[0, np.cumsum(nonloop[us])][:-1]
    edge_types, etype, rtype = [], [], []
    for t in tables:
        etype.append(len(edge_types))
        edge_types.append([t["source_type"], t["type"], t["destination_type"]])
        rtype.append(len(edge_types) if t["reverse"] else -1)
        if t["reverse"]:
            edge_types.append([t["destination_type"], t["reverse"], t["source_type"]])
    reverse_type = list(range(len(edge_types)))
    if o["undirected"] and ctx["hetero"]:  # AddReverseEdgeTypes
        reverse_type = []
        for x in range(len(edge_types)):
            s_, r_, d_ = edge_types[x]
            reverse_type.append(x if s_ == d_ else len(edge_types))
            if s_ != d_:
                edge_types.append([d_, "rev_" + r_, s_])
    numbering = dict(kept=K, nonloops=NL, kept_off=kept_off, nl_off=nl_off, type=etype, rtype=rtype,
                     reverse_type=reverse_type, base=np.r_[0, np.cumsum(K * copies)][:-1].astype(np.int64),
                     ubase=e1 + np.r_[0, np.cumsum(NL * copies)][:-1].astype(np.int64))
    ctx["edge_numbering"] = numbering
    step("edge_counts")
    log("%d edges%s" % (num_edges, "; dropped %d edges whose endpoint no node table has" % dangling
                        if dangling else ""))

    # meta.json's contents (the native tool's), first for the writers (without the partitions' edge counts, which
    # they report), then final.
    options = {"undirected": o["undirected"], "drop_duplicates": False, "drop_self_loops": o["drop_self_loops"],
               "seed": ctx["seed"], "metis_balance_edges": True, "feature_dtype": o["feature_dtype"],
               "normalize_features": o["normalize"], "direction": o["direction"]}
    meta_plan = {"name": plan["name"], "source_path": schema, "num_nodes": num_nodes, "num_edges": num_edges,
                 "num_parts": k, "offsets": [int(x) for x in np.r_[ctx["part_offsets"], num_nodes]],
                 "feature_dim": dim, "feature_dtype": o["feature_dtype"], "num_classes": max_label + 1,
                 "has_labels": max_label >= 0, "has_split": plan["has_split"], "has_names": ctx["string_ids"],
                 "has_edge_times": plan["timed"], "has_edge_weights": ctx["weighted"],
                 "direction": o["direction"], "chunk_nodes": o["chunk_nodes"], "method": ctx["method"],
                 "options": options, "dataset_id": ctx["dataset_id"],
                 "stats": {"nodes": [int(x) for x in part_nodes], "edges": [0] * k, "cut_edges": 0}}
    if feature_max_abs is not None:
        meta_plan["feature_max_abs"] = feature_max_abs
    if ctx["hetero"]:
        meta_plan["hetero"] = {"node_types": [t["type"] for t in ctx["node_tables"]], "edge_types": edge_types,
                               "type_bounds": [int(x) for x in type_bounds], "feature_dims": type_dims}

    def write_meta(name):
        with open(os.path.join(job, "plan.json"), "w") as f:
            json.dump(meta_plan, f)
        _task(task, "meta", "--plan", os.path.join(job, "plan.json"), "--out", os.path.join(job, name))
        return os.path.join(job, name)

    ctx["meta"] = write_meta("meta-writers.json")

    # The edges where they are stored, with their ids: an edge's place among the kept edges in input order (the
    # tables' rows, then the reverses of the non-loops).
    if local_map:  # resolved, numbered and routed in the slices' own tasks
        edges = spark.range(0, eu, 1, eu).mapInArrow(_edge_fn(ctx, True), record_schema)
    else:
        kept_edges = j.where(keep) if counted else j
        by_unit = Window.partitionBy("unit").orderBy("row")
        incoming = o["direction"] == "in"

        def with_ids(df, counts, offs, types, reverse):
            # Each slice's edges (of one copy: _edge_copies) numbered from its offset, by rank; the slices of
            # tables without a reverse have none of the reversed copies.
            n = numbering
            units = [u for u in range(eu) if not reverse or n["rtype"][unit_tables[u]] >= 0]
            offsets = spark.createDataFrame([(u, int(offs[u]), int(types[unit_tables[u]])) for u in units],
                                            "unit int, off long, etype int")
            df = df.join(F.broadcast(offsets), "unit")
            if (counts == rows).all():
                return df.withColumn("eid", F.col("off") + F.col("row"))
            return df.withColumn("eid", F.col("off") + F.row_number().over(by_unit) - 1)

        def stored(df, reverse):
            # Edge u -> v (reversed: v -> u) is stored in the row of v (out: u), its neighbor u (out: v).
            tgt_row, tgt_part, nb = ("dv", "dp", "su") if incoming != reverse else ("su", "sp", "dv")
            return df.select(F.col(tgt_part).alias("part"), F.col(tgt_row).alias("row"), "eid",
                             F.col(nb).alias("nbr"), *[a[0] for a in _edge_attrs(ctx)],
                             *(["etype"] if ctx["hetero"] else []))

        n = numbering
        base, ubase = n["base"][unit_tables], n["ubase"][unit_tables]
        rtypes = np.array(n["rtype"])
        rev_types = [n["reverse_type"][x] for x in n["type"]]
        rrev_types = [n["reverse_type"][x] if x >= 0 else -1 for x in n["rtype"]]
        any_reverse = bool((rtypes >= 0).any())
        edges = stored(with_ids(kept_edges, kept, base + kept_off, n["type"], False), False)
        if any_reverse:
            edges = edges.unionByName(stored(with_ids(kept_edges, kept, base + K[unit_tables] + kept_off, n["rtype"],
                                                      True), True))
        if o["undirected"]:
            nl = kept_edges.where(F.col("su") != F.col("dv"))
            edges = edges.unionByName(stored(with_ids(nl, nonloop, ubase + nl_off, rev_types, False), True))
            if any_reverse:
                edges = edges.unionByName(stored(with_ids(nl, nonloop, ubase + NL[unit_tables] + nl_off, rrev_types,
                                                          True), False))
        route = spark.createDataFrame([(p, int(ctx["routes"][p])) for p in range(k)], "part int, route long")
        edges = edges.join(F.broadcast(route), "part")
    # One placeholder per partition: every partition gets a writer, edges or not. Spark moves each edge to the
    # task of its partition; the writer there orders them.
    marks = spark.createDataFrame([(int(ctx["routes"][p]), p, -1, -1, -1) +
                                   tuple(0.0 if t == "float" else 0 for _, t, _ in _edge_attrs(ctx)) +
                                   ((0,) if ctx["hetero"] else ()) for p in range(k)], record_schema)
    records = edges.unionByName(marks)
    records = (records.repartition(k, "route") if routed else records.repartitionByRange(k, "route")).drop("route")
    try:
        written = collect(records.mapInArrow(
            _writer_fn(ctx), "part int, edges long, cut_edges long, bytes long, slices long, "
                             "receive_seconds double, write_seconds double"))
    except Exception as e:
        if _DANGLING in str(e) and j is not None:
            raise first_dangling() from None
        raise
    if sorted(r["part"] for r in written) != list(range(k)):
        raise errors.Internal("partitions written: %s, of %d" % (sorted(r["part"] for r in written), k))
    by_part = {r["part"]: r for r in written}
    meta_plan["stats"]["edges"] = [int(by_part[p]["edges"]) for p in range(k)]
    meta_plan["stats"]["cut_edges"] = int(sum(r["cut_edges"] for r in written))
    if sum(meta_plan["stats"]["edges"]) != num_edges:
        raise errors.Internal("the partitions stored %d edges, of %d" % (sum(meta_plan["stats"]["edges"]), num_edges))
    write_meta("meta.json")
    with open(os.path.join(job, "meta.json")) as f:
        meta = json.load(f)
    step("write")
    report["driver_collected_rows"] = collected[0]
    report["store_bytes"] = sum(r["bytes"] for r in written)
    report["writer_slices"] = sum(r["slices"] for r in written)
    report["writers"] = [{x: r[x] for x in ("part", "edges", "receive_seconds", "write_seconds")} for r in written]
    log("wrote %d partition(s), %d bytes" % (k, report["store_bytes"]))
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
    ap.add_argument("--map-nodes", type=int, default=1 << 25,
                    help="up to this many nodes, each edge task resolves endpoints through an id map file (about 12 "
                         "bytes per node); above it, Spark joins (default 33554432; 0: always join)")
    ap.add_argument("--writer-memory", default="1G",
                    help="memory a partition's writer places its edges in (default 1G; 32 bytes per edge of a slice)")
    ap.add_argument("--executor-memory-overhead", help="spark.executor.memoryOverhead: what an executor may hold "
                    "beyond its JVM heap (Python workers, the writers' slices), e.g. 1g")
    ap.add_argument("--driver-memory", help="spark.driver.memory (default: --executor-memory's)")
    ap.add_argument("--json", help="write the run's report (seconds per step, rows the driver collected) here")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    a = ap.parse_args(argv)
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = SparkSession.builder.appName("fanout-partition-spark")
    if a.master:
        b = b.master(a.master).config("spark.ui.enabled", "false")
    if a.executor_memory:
        b = b.config("spark.executor.memory", a.executor_memory)
    if a.executor_memory_overhead:
        b = b.config("spark.executor.memoryOverhead", a.executor_memory_overhead)
    if a.driver_memory or a.executor_memory:
        b = b.config("spark.driver.memory", a.driver_memory or a.executor_memory)
    if a.local_dir:
        b = b.config("spark.local.dir", a.local_dir)
    spark = b.getOrCreate()
    report = {}
    if a.quiet:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        meta = partition_on_spark(spark, a.schema, a.output, parts=a.parts, method=a.method, seed=a.seed,
                                  assignment=a.assignment, undirected=a.undirected,
                                  drop_self_loops=a.drop_self_loops, direction=a.direction,
                                  feature_dtype=a.feature_dtype, normalize_features=a.normalize_features,
                                  chunk_nodes=a.chunk_nodes, force=a.force, bin_dir=a.bin_dir, quiet=a.quiet,
                                  map_nodes=a.map_nodes, writer_memory=a.writer_memory, report=report)
    except errors.Error as e:
        print("fanout.spark: error: %s" % e, file=sys.stderr)
        return 1
    finally:
        spark.stop()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)
    print("wrote %s: %d nodes, %d edges, %d partition(s)" % (a.output, meta["num_nodes"], meta["num_edges"],
                                                              meta["num_parts"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
