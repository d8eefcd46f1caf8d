"""fanout.pyg: Fanout as PyTorch Geometric's remote backend.

``FeatureStore(cluster)`` and ``GraphStore(cluster)`` are PyG's remote-backend interface over a
``fanout.Cluster``; ``NeighborSampler(cluster, num_neighbors)`` is a ``torch_geometric.sampler.BaseSampler``
that samples through Fanout's servers (no copy of the topology into the trainer). With them PyG's own
loaders run on Fanout::

    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    sampler = fanout.pyg.NeighborSampler(cluster, num_neighbors=[10, 5])
    loader = torch_geometric.loader.NodeLoader(data=(fs, gs), node_sampler=sampler,
                                               input_nodes=cluster.split_nodes("train"), batch_size=128,
                                               num_workers=2)

``LinkLoader(data=(fs, gs), link_sampler=sampler, edge_label_index=..., neg_sampling=...)`` samples links
(negatives strict by default: never an existing edge); heterogeneous datasets take PyG's per-edge-type
``num_neighbors`` dict and typed inputs, with node ids local to their type as PyG's; ``input_time`` /
``edge_label_time`` make sampling temporal (disjoint trees, as PyG's).

A batch's sample is a pure function of its seeds, the sampler's ``seed``, its epoch
(``sampler.set_epoch(e)``) and the position of its first input: the same batch gives the same subgraph in
any DataLoader worker, on any number of servers. Each worker process connects on its own (UCX state does
not survive a fork): the objects keep the cluster's recipe and reconnect the first time they are used in a
new process.
"""
import collections
import os
import warnings

try:
    import torch_geometric  # noqa: F401
    from torch_geometric.data import EdgeAttr, TensorAttr
    from torch_geometric.data import FeatureStore as _PygFeatureStore
    from torch_geometric.data import GraphStore as _PygGraphStore
    from torch_geometric.sampler import BaseSampler, HeteroSamplerOutput, SamplerOutput
    from torch_geometric.loader import NodeLoader as _PygNodeLoader
except ImportError as e:  # pragma: no cover - exercised where PyG is absent
    raise ImportError("fanout.pyg needs PyTorch Geometric (the torch-geometric package: "
                      "pip install torch-geometric), which does not import here: %s" % e) from e

import torch

from . import Cluster, InvalidArgument, NotSupported, _core, _ids, _ids_buffer, _tensor

# Rows a read-ahead batch brought with it (NeighborSampler(input_nodes=...)), keyed by the batch's n_id
# tensor object: PyG's filter step asks the FeatureStore for exactly that index next, and gets these
# instead of a second request. A few entries at most; each is taken once.
_STASH = collections.OrderedDict()
_STASH_MAX = 4


class IndexOutOfRange(InvalidArgument, IndexError):
    """A feature-store index outside the node store (an IndexError, as an in-memory tensor raises)."""


class _PerProcess:
    """A fanout.Cluster usable in this process (the one given where it was made, a reconnected one in a
    process forked from there: DataLoader workers), with the dataset's shape cached."""

    def __init__(self, cluster):
        if not isinstance(cluster, Cluster):
            raise InvalidArgument("fanout.pyg needs a fanout.Cluster (got %s)" % type(cluster).__name__)
        self._cluster = cluster
        self._pid = os.getpid()
        self._shape(cluster)

    def _shape(self, c):
        self.num_nodes, self.feature_dim, self.num_classes = c.num_nodes, c.feature_dim, c.num_classes
        self.node_types, self.edge_types = c.node_types, c.edge_types
        self.feature_dims = c.node_type_feature_dims
        # Global ids of each node type, ascending: a type-local id (PyG's) is a position here.
        self.of_type = {t: c.nodes_of_type(t) for t in self.node_types}

    @property
    def hetero(self):
        return bool(self.node_types)

    def get(self):
        if os.getpid() != self._pid:
            self._cluster._forget_after_fork()
            self._cluster = self._cluster.reconnect()
            self._pid = os.getpid()
        return self._cluster

    def to_global(self, node_type, local, what="index"):
        """Type-local ids (PyG's, for a heterogeneous dataset) as global ids, range-checked."""
        n = self.of_type[node_type].numel() if self.hetero else self.num_nodes
        local = local.to(torch.long)
        if local.numel() and (int(local.min()) < 0 or int(local.max()) >= n):
            bad = local[(local < 0) | (local >= n)][0]
            raise IndexOutOfRange("%s %d is out of range for %s (%d nodes)" % (
                what, int(bad), "node type %r" % node_type if self.hetero else "the graph", n))
        return self.of_type[node_type][local] if self.hetero else local

    def to_local(self, node_type, global_ids):
        return torch.searchsorted(self.of_type[node_type], global_ids) if self.hetero else global_ids

    def check_group(self, group_name):
        if self.hetero:
            if group_name not in self.of_type:
                raise KeyError("fanout.pyg: node type %r is not one of %s" % (group_name, self.node_types))
        elif group_name is not None:
            raise KeyError("fanout.pyg: the dataset is homogeneous (group None); group %r does not exist"
                           % (group_name,))

    def __getstate__(self):  # spawned workers: the recipe travels, the connections do not
        return {"recipe": self._cluster._recipe}

    def __setstate__(self, state):
        self._cluster = Cluster._from_recipe(state["recipe"])
        self._pid = os.getpid()
        self._shape(self._cluster)


def _in_worker():
    return torch.utils.data.get_worker_info() is not None


def _index(index, n):
    """A TensorAttr index as an int64 tensor of ids into a store of n nodes (None: every node)."""
    if index is None:
        return torch.arange(n, dtype=torch.long)
    if isinstance(index, slice):
        return torch.arange(n, dtype=torch.long)[index]
    if isinstance(index, int):
        return torch.tensor([index], dtype=torch.long)
    t = torch.as_tensor(index)
    if t.dtype == torch.bool:
        if t.numel() != n:
            raise IndexOutOfRange("a boolean index has %d entries, the store %d nodes" % (t.numel(), n))
        return t.nonzero().flatten()
    if t.is_floating_point():
        raise InvalidArgument("a feature-store index must hold integer ids, not %s" % t.dtype)
    return t.to(torch.long).flatten()


class FeatureStore(_PygFeatureStore):
    """The cluster's node features (``x``, float32) and labels (``y``, int64; -1 unknown) as a read-only
    PyG FeatureStore. Homogeneous datasets: group ``None``, ids are global. Heterogeneous ones: one group
    per node type (``x`` where the type has feature columns, ``y`` where the dataset has classes), ids
    local to the type as PyG's. Rows are fetched from the servers (or read from co-located exports) for
    any index; ``multi_get_tensor`` asks once per attribute for all groups of the call (one request per
    server for every ``x``, one for every ``y``)."""

    def __init__(self, cluster):
        super().__init__()
        self._remote = _PerProcess(cluster)

    def _attrs_of(self, group):
        r = self._remote
        dim = r.feature_dims[r.node_types.index(group)] if r.hetero else r.feature_dim
        return (("x",) if dim > 0 else ()) + (("y",) if r.num_classes > 0 else ())

    def _size_of(self, group):
        r = self._remote
        return r.of_type[group].numel() if r.hetero else r.num_nodes

    def _global(self, attr):
        r = self._remote
        r.check_group(attr.group_name)
        if attr.attr_name not in self._attrs_of(attr.group_name):
            raise KeyError("fanout.pyg.FeatureStore: no attribute %r for %s (it has %s)" % (
                attr.attr_name, "node type %r" % attr.group_name if r.hetero else "the graph",
                list(self._attrs_of(attr.group_name))))
        local = _index(attr.index, self._size_of(attr.group_name))
        return r.to_global(attr.group_name, local)

    def _get_tensor(self, attr):
        return self._multi_get_tensor([attr])[0]

    def _multi_get_tensor(self, attrs):
        if attrs and not self._remote.hetero:
            hit = _STASH.get(id(attrs[0].index))
            if hit is not None and all(a.index is hit[0] and a.attr_name in ("x", "y") for a in attrs):
                del _STASH[id(attrs[0].index)]  # a read-ahead batch's own rows: no second request
                got = {"x": hit[1], "y": hit[2]}
                if all(got[a.attr_name] is not None for a in attrs):
                    return [got[a.attr_name] for a in attrs]
        ids = [self._global(a) for a in attrs]
        c = self._remote.get()
        out = [None] * len(attrs)
        for name in ("x", "y"):
            which = [i for i, a in enumerate(attrs) if a.attr_name == name]
            if not which:
                continue
            all_ids = torch.cat([ids[i] for i in which]) if len(which) > 1 else ids[which[0]]
            buf = _ids_buffer(all_ids)
            if name == "x" and _in_worker():
                # In a DataLoader worker the batch goes to the trainer through shared memory: the
                # rows are written there at once instead of being copied there when pickled.
                got = torch.empty((all_ids.numel(), self._remote.feature_dim), dtype=torch.float32)
                got.share_memory_()
                c._c.features_into(buf, got.numpy())
            else:
                got = _tensor(c._c.features(buf) if name == "x" else c._c.labels(buf))
            at = 0
            for i in which:
                n = ids[i].numel()
                part = got[at:at + n]
                at += n
                if name == "x" and self._remote.hetero:  # the type's own columns
                    part = part[:, :self._remote.feature_dims[self._remote.node_types.index(attrs[i].group_name)]]
                out[i] = part
        return out

    def _get_tensor_size(self, attr):
        r = self._remote
        r.check_group(attr.group_name)
        if attr.attr_name not in self._attrs_of(attr.group_name):
            return None
        n = self._size_of(attr.group_name)
        if attr.attr_name == "y":
            return (n,)
        dim = r.feature_dims[r.node_types.index(attr.group_name)] if r.hetero else r.feature_dim
        return (n, dim)

    def get_all_tensor_attrs(self):
        groups = self._remote.node_types if self._remote.hetero else [None]
        return [TensorAttr(group_name=g, attr_name=a) for g in groups for a in self._attrs_of(g)]

    def _put_tensor(self, tensor, attr):
        raise NotSupported("fanout.pyg.FeatureStore is read-only: the servers' partitions are the data "
                           "(repartition with fanout-partition to change them)")

    def _remove_tensor(self, attr):
        raise NotSupported("fanout.pyg.FeatureStore is read-only: the servers' partitions are the data")


class GraphStore(_PygGraphStore):
    """The cluster's topology as a read-only PyG GraphStore: one edge type (``None``, ``num_nodes x
    num_nodes``) for a homogeneous dataset, else one per (src, rel, dst) type with type-local ids, in COO
    layout. Asking for a whole ``edge_index`` works but copies that topology into this process (warned
    once); sample with ``fanout.pyg.NeighborSampler`` instead."""

    def __init__(self, cluster):
        super().__init__()
        self._remote = _PerProcess(cluster)
        self._warned = False

    def get_all_edge_attrs(self):
        r = self._remote
        if not r.hetero:
            return [EdgeAttr(edge_type=None, layout="coo", is_sorted=False, size=(r.num_nodes, r.num_nodes))]
        return [EdgeAttr(edge_type=et, layout="coo", is_sorted=False,
                         size=(r.of_type[et[0]].numel(), r.of_type[et[2]].numel())) for et in r.edge_types]

    def _get_edge_index(self, edge_attr):
        r = self._remote
        et = edge_attr.edge_type
        if r.hetero and et not in r.edge_types:
            raise KeyError("fanout.pyg.GraphStore: edge type %r is not one of %s" % (et, r.edge_types))
        if not self._warned:
            warnings.warn("fanout.pyg.GraphStore: the whole edge_index is being copied into this process "
                          "(every edge of every partition); fanout.pyg.NeighborSampler samples on the "
                          "servers without that copy", stacklevel=3)
            self._warned = True
        c = self._remote.get()
        # Every stored edge, as one-hop full-neighbor sampling of the nodes that store them (the target
        # type's), 64 Ki seeds a call.
        options = dict(num_neighbors=[-1], features=False, labels=False, edge_ids=False)
        targets = r.of_type[et[2]] if r.hetero else torch.arange(r.num_nodes, dtype=torch.long)
        if r.hetero:
            e = r.edge_types.index(et)
            options["type_fanouts"] = [[-1] if i == e else [0] for i in range(len(r.edge_types))]
        rows, cols = [], []
        for begin in range(0, targets.numel(), 65536):
            d = c._c.sample_batch(options, _ids_buffer(targets[begin:begin + 65536]), None, None, 0)
            n_id, ei = _tensor(d["n_id"]), _tensor(d["edge_index"])
            rows.append(n_id[ei[0]])  # the neighbor (source) ...
            cols.append(n_id[ei[1]])  # ... of the node it is stored with (target)
        row, col = torch.cat(rows), torch.cat(cols)
        if r.hetero:
            row, col = r.to_local(et[0], row), r.to_local(et[2], col)
        return row, col

    def _put_edge_index(self, edge_index, edge_attr):
        raise NotSupported("fanout.pyg.GraphStore is read-only: the servers' partitions are the graph")

    def _remove_edge_index(self, edge_attr):
        raise NotSupported("fanout.pyg.GraphStore is read-only: the servers' partitions are the graph")


def _tensors(d):
    """A batch dict from C++ with its capsules as tensors (each capsule can be consumed once)."""
    return {k: (_tensor(v) if type(v).__name__ == "PyCapsule" else v) for k, v in d.items()}


def _per_hop_counts(types, sizes, num_types):
    """Per type, the count of each hop's entries (types in hop order; sizes: entries per hop)."""
    out = [[] for _ in range(num_types)]
    at = 0
    for n in sizes:
        counts = torch.bincount(types[at:at + n], minlength=num_types).tolist() if n else [0] * num_types
        for t in range(num_types):
            out[t].append(int(counts[t]))
        at += n
    return out


class NeighborSampler(BaseSampler):
    """PyG's BaseSampler over Fanout's servers.

    ``num_neighbors``: a list of hop fanouts (-1: all), or for a heterogeneous dataset PyG's dict
    {edge type: [fanout per hop]} (a list applies to every edge type). ``replace``: with replacement.
    ``temporal_strategy``: "uniform" or "last" for temporal inputs (``input_time`` /
    ``edge_label_time``; the dataset needs edge timestamps). ``strict_negatives`` (default True): negatives
    of PyG's ``NegativeSampling`` are never existing edges (checked on the servers); False keeps PyG's
    unchecked draws. ``sampler``: "neighbor" (default) or "labor" (LABOR-0, homogeneous node sampling:
    fewer distinct nodes per batch at the same expected fanout; each batch's importance weights travel
    in ``SamplerOutput.metadata[2]``, and ``fanout.pyg.NodeLoader`` puts them on the batch as
    ``edge_weight``). ``input_nodes`` (optional: the same seeds as the PyG loader's ``input_nodes``): read
    ahead. Batches asked for in order (PyG's NodeLoader with ``shuffle=False``) then come from a
    ``fanout.NodeLoader`` over those seeds that samples and fetches the next batches (and their ``x``,
    ``y``) on its worker threads while PyG works on this one; anything else is sampled on demand as
    without it. Homogeneous, not temporal, main process only.

    Randomness: batch b of epoch e is sampled with the request seed fanout.NodeLoader / LinkLoader use for
    batch b of epoch e (``seed``), where b is the batch's first input position divided by ``batch_size``
    (default 1: the position itself). Give the PyG loader's batch size (and shuffle=False) and PyG's
    loader yields exactly ``fanout.NodeLoader``'s batches. Call ``set_epoch(e)`` before each epoch for fresh
    samples (DataLoader workers started afterwards see it)."""

    def __init__(self, cluster, num_neighbors, *, replace=False, seed=0, temporal_strategy="uniform",
                 strict_negatives=True, batch_size=1, sampler="neighbor", input_nodes=None):
        self._remote = r = _PerProcess(cluster)
        # Read-ahead (homogeneous node batches in the main process): with the loader's input nodes known,
        # batches asked for in order (PyG's NodeLoader, shuffle=False) come from a fanout.NodeLoader over
        # the same seeds that samples and fetches the next ones on its worker threads meanwhile.
        self._input_nodes = None if input_nodes is None else _ids(input_nodes, cluster)
        self._ahead = None
        self._type_fanouts = None
        if isinstance(num_neighbors, dict):
            from . import _type_fanouts
            self._type_fanouts, _ = _type_fanouts(cluster, num_neighbors)
            fanouts = []  # the hops come from the per-type lists (C++'s HeteroHopFanouts)
        else:
            fanouts = [int(k) for k in num_neighbors]
            if not fanouts or any(k == 0 or k < -1 for k in fanouts):
                raise InvalidArgument("num_neighbors must be a list of hop fanouts > 0 (or -1: every neighbor), "
                                      "got %r" % (list(num_neighbors),))
            if r.hetero:
                self._type_fanouts = [list(fanouts)] * len(r.edge_types)
        if temporal_strategy not in ("uniform", "last"):
            raise InvalidArgument("temporal_strategy must be 'uniform' or 'last', not %r" % (temporal_strategy,))
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgument("batch_size must be an integer >= 1, not %r" % (batch_size,))
        if sampler not in ("neighbor", "labor"):
            raise InvalidArgument("sampler must be 'neighbor' or 'labor', not %r" % (sampler,))
        if sampler == "labor" and self._type_fanouts is not None:
            raise NotSupported("fanout.pyg: LABOR sampling of heterogeneous (per-edge-type) hops is not supported")
        self.sampler = sampler
        self.num_neighbors = num_neighbors if isinstance(num_neighbors, dict) else fanouts
        self._fanouts = fanouts
        self.replace = bool(replace)
        self.seed = int(seed)
        self.temporal_strategy = temporal_strategy
        self.strict_negatives = bool(strict_negatives)
        self.batch_size = batch_size
        self.epoch = 0

    def __getstate__(self):  # spawned DataLoader workers: no read-ahead loader travels (workers sample on demand)
        state = dict(self.__dict__)
        state["_ahead"] = None
        return state

    def set_epoch(self, epoch):
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise InvalidArgument("epoch must be a non-negative integer, not %r" % (epoch,))
        self.epoch = epoch

    @property
    def edge_permutation(self):
        return None

    def _request_seed(self, input_id):
        first = int(input_id[0]) if input_id is not None and input_id.numel() else 0
        return _core.batch_request_seed(self.seed, self.epoch, first // self.batch_size)

    def _options(self):
        o = dict(num_neighbors=self._fanouts, replace=self.replace, edge_ids=True, features=False, labels=False,
                 temporal_strategy=self.temporal_strategy, sampler=self.sampler)
        if self._type_fanouts is not None:
            o["type_fanouts"] = self._type_fanouts
        return o

    @staticmethod
    def _times(time):
        if time is None:
            return None
        if time.is_floating_point():
            raise InvalidArgument("seed times must be integers (e.g. Unix seconds), not %s" % time.dtype)
        return _ids_buffer(time)

    # Nodes ###################################################################################

    def sample_from_nodes(self, index, **kwargs):
        r = self._remote
        if r.hetero:
            if index.input_type is None:
                raise InvalidArgument("fanout.pyg: a heterogeneous dataset needs typed input nodes "
                                      "(input_nodes=(node_type, ids))")
            r.check_group(index.input_type)
        elif index.input_type is not None:
            raise InvalidArgument("fanout.pyg: the dataset is homogeneous; input type %r does not exist"
                                  % (index.input_type,))
        seeds = r.to_global(index.input_type, index.node, "input node")
        d = self._read_ahead(index, seeds)
        if d is None:
            d = _tensors(r.get()._c.sample_batch(self._options(), _ids_buffer(seeds), None,
                                                 self._times(index.time), self._request_seed(index.input_id)))
        out, _ = self._output(d)
        out.metadata = (index.input_id, index.time)
        if d.get("edge_weight") is not None:  # LABOR: NodeLoader reads [0] and [1]; fanout.pyg.NodeLoader [2]
            out.metadata = (index.input_id, index.time, d["edge_weight"])
        return out

    def _read_ahead(self, index, seeds):
        """The batch of `index` from the read-ahead loader (x and y stashed for the FeatureStore), or None
        where it cannot serve it: no input nodes given, heterogeneous or temporal, a DataLoader worker, or
        a batch other than the loader's next one (shuffled or out of order: sampled here instead)."""
        if (self._input_nodes is None or self._remote.hetero or index.time is not None or _in_worker()
                or index.input_id is None or not index.input_id.numel()):
            return None
        first, n = int(index.input_id[0]), index.input_id.numel()
        if first % self.batch_size or n > self.batch_size or int(index.input_id[-1]) != first + n - 1:
            return None
        b = first // self.batch_size
        a = self._ahead
        if a is None or a["epoch"] != self.epoch or a["next"] != b:
            if b != 0:
                self._ahead = None
                return None
            if a is None or a["loader"] is None:
                from . import NodeLoader
                a = {"loader": NodeLoader(self._remote.get(), self._input_nodes, list(self._fanouts),
                                          batch_size=self.batch_size, shuffle=False, seed=self.seed,
                                          replace=self.replace, sampler=self.sampler, edge_ids=True,
                                          features=True, labels=self._remote.num_classes > 0, rank=0,
                                          world_size=1)}
            a["loader"].set_epoch(self.epoch)
            a.update(epoch=self.epoch, next=0, it=iter(a["loader"]))
            self._ahead = a
        try:
            batch = next(a["it"])
        except StopIteration:
            a["next"] = -1
            return None
        a["next"] = b + 1
        if batch.index != b or not torch.equal(batch.n_id[:n], seeds):  # not the batch asked for
            a["next"] = -1
            return None
        _STASH[id(batch.n_id)] = (batch.n_id, batch.x, batch.y)
        while len(_STASH) > _STASH_MAX:
            _STASH.popitem(last=False)
        return {"n_id": batch.n_id, "edge_index": batch.edge_index, "e_id": batch.e_id, "batch": None,
                "num_sampled_nodes": batch.num_sampled_nodes, "num_sampled_edges": batch.num_sampled_edges,
                "edge_weight": batch.edge_weight}

    # Links ###################################################################################

    def sample_from_edges(self, index, neg_sampling=None):
        r = self._remote
        options = self._options()
        et = index.input_type
        if r.hetero:
            if et is None:
                raise InvalidArgument("fanout.pyg: a heterogeneous dataset needs typed seed edges "
                                      "(edge_label_index=(edge_type, [2, P]))")
            et = tuple(et)
            if et not in r.edge_types:
                raise InvalidArgument("fanout.pyg: edge type %r is not one of %s" % (et, r.edge_types))
            options["link_edge_type"] = r.edge_types.index(et)
            src, dst = r.to_global(et[0], index.row, "seed edge source"), r.to_global(et[2], index.col,
                                                                                     "seed edge destination")
        else:
            src, dst = (r.to_global(None, index.row, "seed edge source"),
                        r.to_global(None, index.col, "seed edge destination"))
        mode = "none"
        if neg_sampling is not None:
            if any(getattr(neg_sampling, w, None) is not None for w in ("src_weight", "dst_weight", "weight")):
                raise NotSupported("fanout.pyg: weighted negative sampling (NegativeSampling src_weight / "
                                   "dst_weight) is not supported; negatives are drawn uniformly among the end "
                                   "types' nodes")
            mode = neg_sampling.mode.value if hasattr(neg_sampling.mode, "value") else str(neg_sampling.mode)
            options.update(neg_mode=mode, neg_amount=float(neg_sampling.amount), neg_strict=self.strict_negatives)
        label = None
        if index.label is not None:
            lab = index.label
            if lab.is_floating_point():
                if not bool(torch.all(lab == lab.round())):
                    raise NotSupported("fanout.pyg: edge labels must be integer classes (got fractional %s "
                                       "values)" % lab.dtype)
                lab = lab.to(torch.long)
            label = _ids_buffer(lab)
        link = {"src": _ids_buffer(src), "dst": _ids_buffer(dst), "label": label}
        d = _tensors(r.get()._c.sample_batch(options, None, link, self._times(index.time),
                                             self._request_seed(index.input_id)))
        out, type_index = self._output(d, link_size=src.numel(), mode=mode)
        p = src.numel()
        seed_time = d["seed_time"]
        if mode == "triplet":
            meta = [d["src_index"], d["dst_pos_index"], d["dst_neg_index"]]
            if type_index is not None:
                meta = [type_index[m] for m in meta]
            out.metadata = (index.input_id, *meta, None if seed_time is None else seed_time[:p])
        else:
            eli, el = d["edge_label_index"], d["edge_label"]
            if type_index is not None:
                eli = type_index[eli]
            out.metadata = (index.input_id, eli, el, None if seed_time is None else seed_time[:eli.size(1)])
        return out

    # Output ##################################################################################

    def _output(self, d, link_size=None, mode=None):
        """A batch dict as PyG's SamplerOutput (homogeneous) or HeteroSamplerOutput; also the type-local
        index of each node of the batch (None when homogeneous)."""
        n_id, ei, e_id = d["n_id"], d["edge_index"], d["e_id"]
        nsn, nse = list(d["num_sampled_nodes"]), list(d["num_sampled_edges"])
        batch = d["batch"]
        if batch is not None and link_size is not None:
            # PyG numbers a temporal link batch's trees by seed edge: endpoint k -> its edge.
            p = link_size
            if mode == "triplet":  # endpoints [src (P), dst (P), dst_neg (P x per)]
                neg = d["dst_neg_index"]
                per = 1 if neg.dim() == 1 else neg.size(1)
                batch = torch.where(batch < 2 * p, batch % p, (batch - 2 * p) // per)
            else:
                half = d["edge_label_index"].size(1)
                batch = (batch % half) % p
        r = self._remote
        if not r.hetero:
            return SamplerOutput(node=n_id, row=ei[0], col=ei[1], edge=e_id, batch=batch,
                                 num_sampled_nodes=nsn, num_sampled_edges=nse), None
        nt, et = d["node_type"], d["edge_type"]
        T, R = len(r.node_types), len(r.edge_types)
        type_index = torch.empty_like(nt)
        node, row, col, edge, trees = {}, {}, {}, {}, {}
        for ti, name in enumerate(r.node_types):
            idx = (nt == ti).nonzero().flatten()
            type_index[idx] = torch.arange(idx.numel(), dtype=torch.long)
            node[name] = r.to_local(name, n_id[idx])
            if batch is not None:  # temporal: each node's tree, per type (PyG's batch dict)
                trees[name] = batch[idx]
        for e, key in enumerate(r.edge_types):
            sel = (et == e).nonzero().flatten()
            row[key], col[key] = type_index[ei[0, sel]], type_index[ei[1, sel]]
            edge[key] = e_id[sel] if e_id is not None else None
        node_hops = _per_hop_counts(nt, nsn, T)
        edge_hops = _per_hop_counts(et, nse, R)
        return HeteroSamplerOutput(
            node=node, row=row, col=col, edge=edge, batch=trees if batch is not None else None,
            num_sampled_nodes={name: node_hops[i] for i, name in enumerate(r.node_types)},
            num_sampled_edges={key: edge_hops[i] for i, key in enumerate(r.edge_types)}), type_index



class NodeLoader(_PygNodeLoader):
    """``torch_geometric.loader.NodeLoader`` that also puts a LABOR sampler's importance weights on
    each batch as ``edge_weight`` (float32 [E], one per edge of ``edge_index``; docs/SAMPLERS.md).
    Arguments as PyG's; with any other sampler it is PyG's NodeLoader."""

    def filter_fn(self, out):
        data = super().filter_fn(out)
        meta = getattr(out, "metadata", None)
        if isinstance(meta, tuple) and len(meta) > 2 and meta[2] is not None:
            data.edge_weight = meta[2]
        return data
