"""Your own graph in (docs/DATA.md): tables with a schema, and PyG objects.

``partition_tables(schema, output, parts=...)`` runs ``fanout-partition --format tables``.
``partition_pyg(data, output, parts=...)`` writes a PyG ``Data`` or ``HeteroData`` as tables (Parquet through pyarrow
where it imports, else CSV) with a schema in a scratch folder and partitions them the same way: the store serves the graph the object holds (node ``i`` of a type
keeps ``i`` as its original id, so ``Cluster.original_ids`` maps served ids back to the object's).
"""

import json
import os
import shutil
import tempfile
import warnings

import numpy as np
import torch

from .errors import InvalidArgument


def partition_tables(schema, output, *, parts, method="hash", force=False, quiet=True, **options):
    """Partitions the tables a schema names (``fanout-partition --format tables --schema SCHEMA``; the other
    options as keyword arguments, as ``fanout.partition`` takes them). Raises InvalidArgument with the tool's message
    (naming the file, line and column) on bad input; nothing is written then."""
    from . import partition

    return partition(None, output, format="tables", parts=parts, method=method, force=force, quiet=quiet,
                     schema=str(schema), **options)


def _numpy(t):
    if t is None:
        return None
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)


def _edge_time(store):
    for name in ("time", "edge_time"):
        t = getattr(store, name, None) if name in store else None
        if t is not None:
            return t
    return None


def _have_pyarrow():
    try:
        import pyarrow.parquet as pq
        return pq is not None
    except ImportError:
        return False


def _write_table(path, header, cols, fmt, parquet):
    """Writes columns (numpy arrays; a 2-D float32 one is a list column) as Parquet or as CSV text."""
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrays = []
        for c in cols:
            if c.ndim == 2:
                arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(c).reshape(-1)),
                                                                c.shape[1]))
            else:
                arrays.append(pa.array(c))
        pq.write_table(pa.table(arrays, names=header), path, row_group_size=1 << 20)
        return
    flat, flat_fmt = [], []
    for c, f in zip(cols, fmt):
        if c.ndim == 2:
            flat += [c.astype(np.float64)[:, k] for k in range(c.shape[1])]
            flat_fmt += [f] * c.shape[1]
        else:
            flat.append(c.astype(np.float64))
            flat_fmt.append(f)
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        if len(cols[0]) > 0:
            np.savetxt(f, np.column_stack(flat), fmt=flat_fmt, delimiter=",")


def _write_nodes(path, n, x, y, masks, what, parquet):
    cols, fmt, header = [np.arange(n, dtype=np.int64)], ["%d"], ["id"]
    spec = {"id": "id"}
    if x is not None:
        x = _numpy(x)
        if x.ndim == 1:
            x = x.reshape(-1, 1)
        if x.ndim != 2 or x.shape[0] != n:
            raise InvalidArgument("%s.x has shape %s; expected [%d, features]" % (what, tuple(x.shape), n))
        if not np.issubdtype(x.dtype, np.number):
            raise InvalidArgument("%s.x is of %s, not numbers" % (what, x.dtype))
        x = x.astype(np.float32)
        if parquet:  # one list column
            cols.append(x)
            fmt.append("%.9g")
            header.append("x")
            spec["features"] = "x"
        else:  # a scalar column per feature
            names = ["f%d" % k for k in range(x.shape[1])]
            cols += [x[:, k] for k in range(x.shape[1])]
            fmt += ["%.9g"] * x.shape[1]
            header += names
            spec["features"] = names
    if y is not None:
        y = _numpy(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1 or y.shape[0] != n or not (np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_):
            raise InvalidArgument("%s.y must hold one integer class per node (shape [%d]); it has shape %s of %s"
                                  % (what, n, tuple(y.shape), y.dtype))
        cols.append(np.where(y < 0, -1, y).astype(np.int64))
        fmt.append("%d")
        header.append("label")
        spec["label"] = "label"
    for key, m in masks.items():
        m = _numpy(m)
        if m.dtype != np.bool_ or m.shape != (n,):
            raise InvalidArgument("%s.%s must be a bool mask of shape [%d]" % (what, key, n))
        cols.append(m if parquet else m.astype(np.int64))
        fmt.append("%d")
        header.append(key)
        spec[key] = key
    _write_table(path, header, cols, fmt, parquet)
    return spec


def _write_edges(path, edge_index, time, weight, n_src, n_dst, what, parquet):
    ei = _numpy(edge_index)
    if ei is None or ei.ndim != 2 or ei.shape[0] != 2:
        raise InvalidArgument("%s.edge_index must have shape [2, edges]" % what)
    ei = ei.astype(np.int64)
    if ei.size and (ei.min() < 0 or ei[0].max() >= n_src or ei[1].max() >= n_dst):
        raise InvalidArgument("%s.edge_index names a node outside its node type's %d / %d nodes"
                              % (what, n_src, n_dst))
    cols, fmt, header = [ei[0], ei[1]], ["%d", "%d"], ["src", "dst"]
    if time is not None:
        t = _numpy(time).reshape(-1)
        if t.shape[0] != ei.shape[1] or not np.issubdtype(t.dtype, np.integer):
            raise InvalidArgument("%s's edge times must be one integer per edge (%d), not shape %s of %s"
                                  % (what, ei.shape[1], tuple(t.shape), t.dtype))
        cols.append(t.astype(np.int64))
        fmt.append("%d")
        header.append("time")
    if weight is not None:
        w = _numpy(weight)
        if w.ndim == 2 and w.shape[1] == 1:
            w = w[:, 0]
        if w.ndim != 1 or w.shape[0] != ei.shape[1] or not (np.issubdtype(w.dtype, np.floating)
                                                           or np.issubdtype(w.dtype, np.integer)):
            raise InvalidArgument("%s.edge_weight must be one number per edge (%d), not shape %s of %s"
                                  % (what, ei.shape[1], tuple(w.shape), w.dtype))
        w = w.astype(np.float32)
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidArgument("%s.edge_weight[%d] is %r: weights must be finite and >= 0" % (what, i, float(w[i])))
        cols.append(w)
        fmt.append("%.9g")
        header.append("weight")
    _write_table(path, header, cols, fmt, parquet)


def write_pyg_tables(data, folder, *, name="pyg", table_format="auto"):
    """Writes ``data`` (a PyG ``Data`` or ``HeteroData``) into ``folder`` as tables and ``graph.json``, the
    schema ``partition_tables`` reads; returns the schema's path. ``table_format``: ``"parquet"`` (binary, the
    features one list column; needs pyarrow), ``"csv"`` (text, a column per feature), or ``"auto"`` (Parquet where
    pyarrow imports). Stored: node features ``x`` (one row of numbers per
    node), labels ``y`` (one integer per node; negative: none), ``train_mask``/``val_mask``/``test_mask``, edge
    times (``time`` or ``edge_time``, one integer per edge, on every edge type or none) and edge weights
    (``edge_weight``, one number >= 0 per edge; an edge type without them gets weight 1 where others have them).
    Edge attributes (``edge_attr``) are not stored (Fanout's stores hold none): a warning says so."""
    if table_format not in ("auto", "parquet", "csv"):
        raise InvalidArgument("table_format must be 'auto', 'parquet' or 'csv', not %r" % (table_format,))
    parquet = table_format == "parquet" or (table_format == "auto" and _have_pyarrow())
    if parquet and not _have_pyarrow():
        raise InvalidArgument("table_format='parquet' needs pyarrow (pip install pyarrow)")
    ext = ".parquet" if parquet else ".csv"
    os.makedirs(folder, exist_ok=True)
    hetero = hasattr(data, "node_types") and hasattr(data, "edge_types") and callable(getattr(data, "metadata", None))
    mask_keys = ("train_mask", "val_mask", "test_mask")
    if hetero:
        node_types, edge_types = list(data.node_types), list(data.edge_types)
        stores = {nt: data[nt] for nt in node_types}
    else:
        node_types, edge_types = ["node"], [("node", "to", "node")]
        stores = {"node": data}
    if not edge_types:
        raise InvalidArgument("the graph has no edges (no edge_index)")
    nodes, counts = [], {}
    for nt in node_types:
        st = stores[nt]
        n = st.num_nodes
        if n is None:
            raise InvalidArgument("node type '%s' has no num_nodes (and no x to infer it from)" % nt)
        counts[nt] = int(n)
        masks = {k: st[k] for k in mask_keys if k in st}
        file = "nodes_%d%s" % (len(nodes), ext)
        spec = _write_nodes(os.path.join(folder, file), counts[nt], st.x if "x" in st else None,
                            st.y if "y" in st else None, masks, "node type '%s'" % nt if hetero else "data", parquet)
        spec.update({"type": nt, "files": file})
        nodes.append(spec)
    edges, times = [], []
    for et in edge_types:
        st = data[et] if hetero else data
        if "edge_attr" in st and st["edge_attr"] is not None:
            warnings.warn("fanout.partition_pyg: edge_attr of %s is not stored (Fanout's stores hold no edge "
                          "attributes; edge_weight is stored)" % (et if hetero else "data",))
        weight = st["edge_weight"] if "edge_weight" in st else None
        t = _edge_time(st)
        times.append(t is not None)
        file = "edges_%d%s" % (len(edges), ext)
        what = "edge type %s" % (et,) if hetero else "data"
        _write_edges(os.path.join(folder, file), st.edge_index if "edge_index" in st else None, t, weight,
                     counts[et[0]], counts[et[2]], what, parquet)
        spec = {"type": et[1], "files": file, "source": "src", "source_type": et[0], "destination": "dst",
                "destination_type": et[2]}
        if t is not None:
            spec["time"] = "time"
        if weight is not None:
            spec["weight"] = "weight"
        edges.append(spec)
    if any(times) and not all(times):
        raise InvalidArgument("edge times are given for some edge types and not others: give every edge type a "
                              "'time' (or 'edge_time'), or none")
    schema = {"name": name, "heterogeneous": bool(hetero), "nodes": nodes, "edges": edges}
    path = os.path.join(folder, "graph.json")
    with open(path, "w") as f:
        json.dump(schema, f, indent=1)
    return path


def partition_pyg(data, output, *, parts, method="hash", force=False, quiet=True, scratch_dir=None, name="pyg",
                  table_format="auto", **options):
    """Partitions a PyG ``Data`` or ``HeteroData`` into a Fanout dataset folder ``output`` (``parts`` partitions;
    ``method`` hash, random, range or metis; the other ``fanout-partition`` options as keyword arguments, e.g.
    ``direction="out"``, ``undirected=True``, ``feature_dtype="float16"``). The object is written as tables
    (``write_pyg_tables``: Parquet where pyarrow imports, else CSV; ``table_format`` chooses) in a scratch folder
    under ``scratch_dir`` (default: the system's), removed after. Returns
    ``output``. Node ``i`` of each type keeps ``i`` as its original id (``Cluster.original_ids``)."""
    scratch = tempfile.mkdtemp(prefix="fanout-pyg-", dir=scratch_dir)
    try:
        schema = write_pyg_tables(data, scratch, name=name, table_format=table_format)
        return partition_tables(schema, output, parts=parts, method=method, force=force, quiet=quiet, **options)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
