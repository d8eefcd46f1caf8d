"""Fanout for PyTorch: distributed graph sampling for GNN training.

The core is Fanout's C++ client (the same one the C++ loaders use), so a
Python training script gets the same batches at the same speed::

    import fanout
    with fanout.LocalCluster("/data/cora2") as lc:      # or fanout.Cluster.from_file(...)
        cluster = lc.cluster()
        loader = fanout.NodeLoader(cluster, cluster.split_nodes("train"),
                                   num_neighbors=[15, 10, 5], batch_size=1024)
        for batch in loader:
            out = model(batch.x, batch.edge_index)[:batch.batch_size]

Names follow PyG (NeighborLoader, Data): batch.x, batch.y, batch.edge_index,
batch.n_id, batch.e_id, batch.batch_size, batch.num_sampled_nodes, ...
"""

import json
import subprocess
import sys
import urllib.error
import urllib.request

from . import _build_info


def _built_for(e, what):
    """An ImportError that says which interpreter and torch this package was built for."""
    here = "%s (Python %d.%d)" % (sys.executable, *sys.version_info[:2])
    try:
        import torch as _t
        here += " with torch %s" % _t.__version__
    except ImportError:
        here += " without torch"
    return ImportError("fanout: cannot import %s (%s). This fanout package was built for %s (Python %s) with torch "
                       "%s; it is running under %s. Run it with that interpreter, or build Fanout for this one "
                       "(FANOUT_CMAKE_ARGS=-DFANOUT_PYTHON=%s ./run build)." % (what, e, _build_info.PYTHON, _build_info.PYTHON_VERSION,
                                                                   _build_info.TORCH_VERSION, here, sys.executable))


try:
    import torch
    from torch.utils.dlpack import from_dlpack as _from_dlpack
except ImportError as _e:
    raise _built_for(_e, "torch") from _e

from . import errors
from .errors import (Aborted, Corruption, DeadlineExceeded, Error, Internal, InvalidArgument, IOError,
                     NotFound, NotSupported, ResourceExhausted, Unauthenticated, Unavailable)

try:
    from . import _core
except ImportError as _e:
    raise _built_for(_e, "its compiled core fanout._core") from _e

__version__ = _core.__version__  # release+gCOMMIT, as fanout-server --version says
from ._bins import find_binary
from .local_cluster import LocalCluster

__all__ = [
    "Cluster", "NodeLoader", "SubgraphLoader", "LinkLoader", "RandomWalkLoader", "WalkBatch", "NegativeSampling",
    "Batch", "LocalCluster", "partition", "stats", "Error", "InvalidArgument",
    "NotFound", "Corruption", "IOError", "NotSupported", "Unavailable", "DeadlineExceeded",
    "ResourceExhausted", "Aborted", "Unauthenticated", "Internal",
]

_DATA_PLANES = ("auto", "ucx", "tcp")


def _have_pyg():
    try:
        import torch_geometric  # noqa: F401
        return True
    except ImportError:
        return False


def _tensor(capsule):
    return None if capsule is None else _from_dlpack(capsule)


def _ids_buffer(t):
    """An int64 tensor as a numpy array over the same memory (C++ reads it through the buffer protocol:
    one copy, no Python int per id)."""
    return t.detach().to(torch.long).contiguous().cpu().numpy()


def _check_local_sampling(local_sampling, allow_none=False):
    if local_sampling is None and allow_none:
        return
    if local_sampling not in ("auto", "off"):
        raise InvalidArgument("local_sampling must be \"auto\" or \"off\"%s, not %r"
                              % (" (or None: the cluster's)" if allow_none else "", local_sampling))


def _check_data_plane(data_plane):
    if data_plane not in _DATA_PLANES:
        raise InvalidArgument("data_plane must be one of %s, not %r" % (", ".join(_DATA_PLANES), data_plane))


class Cluster:
    """The sampling servers of one partitioned graph.

    ``Cluster(partitions=["host:port", ...])`` (one address, or a list of
    replica addresses, per partition) or ``Cluster.from_file(path)`` (a
    cluster file as fanout-ctl reads). ``data_plane``: "auto" (servers on this
    host are read from their sealed, read-only exports in this process; the
    others over UCX where they offer it, else Thrift), "ucx" or "tcp" (Thrift
    only). ``local_sampling``: "auto" (co-located partitions are also sampled
    here: no request per batch) or "off" (sampled over RPC).
    ``auth_token``: the servers' token (a tenant's, where they serve
    tenants: its requests are charged to it; a cluster file names a token
    file instead). ``call_timeout_ms``: a request's deadline; ``health_check_ms``: how often
    each replica of a partition with several is checked (0 = never); requests
    waiting on a replica that fails its check go to the next one at once.
    """

    def __init__(self, partitions=None, *, data_plane="auto", connect_timeout_ms=5000, call_timeout_ms=30000,
                 local_sampling="auto", health_check_ms=1000, auth_token=None, _core_cluster=None):
        # How to connect again (fanout.pyg reconnects in a DataLoader worker process).
        self._recipe = ("partitions", list(partitions) if partitions is not None else None,
                        dict(data_plane=data_plane, connect_timeout_ms=connect_timeout_ms,
                             call_timeout_ms=call_timeout_ms, local_sampling=local_sampling,
                             health_check_ms=health_check_ms, auth_token=auth_token))
        if _core_cluster is not None:
            self._c = _core_cluster
            return
        if partitions is None or isinstance(partitions, (str, bytes)):
            raise InvalidArgument("Cluster: partitions must be a list of addresses 'host:port' (got %r)"
                                  % (partitions,))
        _check_data_plane(data_plane)
        self._c = _core.Cluster.from_partitions(list(partitions), data_plane, int(connect_timeout_ms),
                                                int(call_timeout_ms), local_sampling=local_sampling,
                                                health_check_ms=int(health_check_ms),
                                                auth_token=str(auth_token or ""))

    @classmethod
    def from_file(cls, path, *, data_plane="auto", connect_timeout_ms=5000, call_timeout_ms=30000,
                  local_sampling="auto", health_check_ms=1000):
        _check_data_plane(data_plane)
        c = _core.Cluster.from_file(str(path), data_plane, int(connect_timeout_ms), int(call_timeout_ms),
                                    local_sampling=local_sampling, health_check_ms=int(health_check_ms))
        out = cls(_core_cluster=c, data_plane=data_plane)
        out._recipe = ("file", str(path), dict(data_plane=data_plane, connect_timeout_ms=connect_timeout_ms,
                                               call_timeout_ms=call_timeout_ms, local_sampling=local_sampling,
                                               health_check_ms=health_check_ms))
        return out

    def reconnect(self):
        """A new Cluster on the same servers with the same options (its own connections), e.g. in a
        process forked from this one: UCX state does not survive a fork."""
        return Cluster._from_recipe(self._recipe)

    @staticmethod
    def _from_recipe(recipe):
        kind, what, kw = recipe
        if kind == "file":
            return Cluster.from_file(what, **kw)
        if what is None:
            raise InvalidArgument("this Cluster cannot reconnect (it was made from another one)")
        out = Cluster(partitions=what, **kw)
        out._recipe = recipe
        return out

    def _forget_after_fork(self):
        """In a forked child: the inherited C++ cluster (threads and UCX state of the parent) is
        never touched or destroyed here."""
        self._c.forget_after_fork()

    def with_data_plane(self, data_plane):
        """The same servers, reached over another data-plane choice."""
        _check_data_plane(data_plane)
        out = Cluster(_core_cluster=self._c.with_data_plane(data_plane), data_plane=data_plane)
        kind, what, kw = self._recipe
        out._recipe = (kind, what, dict(kw, data_plane=data_plane))
        return out

    @property
    def num_nodes(self):
        return self._c.num_nodes

    @property
    def feature_dim(self):
        return self._c.feature_dim

    @property
    def num_classes(self):
        return self._c.num_classes

    @property
    def num_partitions(self):
        return self._c.num_partitions

    @property
    def addresses(self):
        return self._c.addresses

    @property
    def local_partitions(self):
        """Per partition: True where its server shares this host and its export is mapped here."""
        return list(self._c.local_partitions)

    @property
    def data_plane(self):
        """The data-plane choice asked for ("auto", "ucx" or "tcp"; a cluster file's own choice where the
        argument was left "auto"). What each partition uses is ``paths()``."""
        return self._c.data_plane

    @property
    def local_sampling(self):
        """"auto" (co-located partitions are sampled here) or "off" (over RPC), as asked for."""
        return "auto" if self._c.local_sampling else "off"

    def paths(self):
        """Each partition's path as it is: a list of dicts, one per partition and replica in use, with
        partition, replica (its address), path (where its features, labels and lookups come from:
        "local" = read in this process from a same-host server's export, "ucx", "thrift"), sampling
        (where its hops are sampled: "local" or the RPC path) and sessions (how many open sessions,
        loader workers included, go that way; 0 where none is open: what a new one takes)."""
        return self._c.paths()

    def features(self, ids):
        """The feature rows of global node ids ``ids`` as a float32 tensor [len(ids), feature_dim], whichever tier
        holds them (memory, or a server's disk tier) and whichever path reaches it; reduced-precision rows are
        converted here."""
        return _tensor(self._c.features(_ids_buffer(torch.as_tensor(ids).flatten())))

    def labels(self, ids):
        """The labels of global node ids ``ids`` (int64; -1 unknown)."""
        return _tensor(self._c.labels(_ids_buffer(torch.as_tensor(ids).flatten())))

    def health(self):
        """Every replica of every partition as this client sees it: a list of dicts with
        partition, address, healthy (its last health check), checks, checks_failed,
        failures (requests that failed there and were retried elsewhere), failovers_to and
        last_error. Health checks run where a partition has several replicas."""
        return self._c.health()

    def split_nodes(self, name):
        """The global ids of a split ("train", "val" or "test"), ascending, as an int64 tensor."""
        if not isinstance(name, str):
            raise InvalidArgument("split name must be 'train', 'val' or 'test', not %r" % (name,))
        return _tensor(self._c.split_nodes(name))

    # Heterogeneous datasets (empty for homogeneous ones), as PyG's HeteroData.metadata().
    @property
    def node_types(self):
        """The node type names (a list; empty for a homogeneous dataset)."""
        return list(self._c.node_types)

    @property
    def edge_types(self):
        """The edge types as (src_type, relation, dst_type) tuples (empty for a homogeneous dataset)."""
        return [tuple(t) for t in self._c.edge_types]

    @property
    def node_type_feature_dims(self):
        """Each node type's feature columns (0 = none), in node_types order."""
        return list(self._c.node_type_feature_dims)

    def metadata(self):
        """(node_types, edge_types), as PyG's HeteroData.metadata() (for to_hetero)."""
        return self.node_types, self.edge_types

    def is_hetero(self):
        return bool(self._c.node_types)

    def nodes_of_type(self, node_type):
        """The global ids of every node of a type, ascending, as an int64 tensor."""
        return _tensor(self._c.nodes_of_type(str(node_type)))

    def node_type_of(self, ids):
        """The node type (an index into node_types) of each global id, as an int64 tensor."""
        return _tensor(self._c.node_type_of(_ids_buffer(_ids(ids, self))))

    def original_ids(self, ids):
        """The dataset's own ids of global ids (per type in heterogeneous datasets: MovieLens'
        userId / movieId, an OGB type's row), as an int64 tensor."""
        return _tensor(self._c.original_ids(_ids_buffer(_ids(ids, self))))

    def edge_type_index(self, edge_type):
        """The index of an edge type given as (src, rel, dst), "src,rel,dst" or an unambiguous
        relation name."""
        if isinstance(edge_type, (tuple, list)) and all(isinstance(x, str) for x in edge_type):
            edge_type = ",".join(edge_type)
        return self._c.edge_type_index(str(edge_type))

    def sample_subgraph(self, seeds, num_neighbors=(10, 10), *, seed=0, features=True, labels=False,
                        edge_ids=False, deadline_ms=None, workers=4, pyg=True):
        """One online query: the k-hop subgraph of ``seeds`` (a handful: 1 to 4096 global ids) with
        ``num_neighbors`` per hop and the nodes' features, ready for a model's forward pass: a PyG ``Data``
        (``x``, ``edge_index``, ``n_id``, ``batch_size``; ``y``, ``e_id`` where asked) when PyG is installed and
        ``pyg``, else a ``fanout.Batch``. One round trip per hop (each to every partition at once) and one for
        the features; partitions whose server shares this host cost none. The same seeds and ``seed`` give the
        batch a NodeLoader with these options builds. ``deadline_ms``: DeadlineExceeded once it has passed
        (the query goes on in the background, bounded by the cluster's ``call_timeout_ms``: give a serving
        cluster one near the deadline). ``workers``: queries in flight at once from this cluster (threads
        calling at the same time; set by the first call). Served ahead of training work where the servers
        give this client's tenant class ``online`` (docs/TENANTS.md)."""
        ids = torch.as_tensor(seeds).flatten()
        if isinstance(num_neighbors, int) or not list(num_neighbors):
            raise InvalidArgument("num_neighbors must be a list of fanouts per hop, e.g. [10, 10]")
        if self.is_hetero():
            raise NotSupported("sample_subgraph of heterogeneous datasets: use fanout.pyg.NeighborSampler")
        if deadline_ms is not None and deadline_ms <= 0:
            raise InvalidArgument("deadline_ms must be positive (or None), not %r" % (deadline_ms,))
        batch = Batch(self._c.query(_ids_buffer(ids), [int(f) for f in num_neighbors], bool(features),
                                    bool(labels), bool(edge_ids), int(deadline_ms or 0), int(seed),
                                    int(workers)))
        return batch.to_pyg() if pyg and _have_pyg() else batch

    def random_walks(self, seeds, walk_length=5, *, num_walks=1, p=1.0, q=1.0, restart_prob=0.0, weighted=False,
                     top_k=0, visit_stride=1, seed=0, max_trials=100):
        """Random walks from ``seeds`` through the servers (client/walks.h; docs/SAMPLERS.md), as a
        WalkBatch: ``walks`` int64 [len(seeds) * num_walks, walk_length + 1] (walk j of seed i is
        row i * num_walks + j; column 0 the seed; -1 past a dead end). ``p``/``q``: node2vec's return
        and in-out parameters; ``restart_prob``: jump back to the start before a step;
        ``weighted``: steps by edge weight; ``top_k`` > 0: each seed's most visited nodes
        (PinSAGE neighborhoods) in ``top_nodes``/``top_counts``, counting the nodes at every
        ``visit_stride``-th step (2 on a user-item graph: items only; restarts then happen only
        before odd steps). Every step is a pure function of
        (walk, step, ``seed``): the same walks in process and through any number of servers."""
        ids = _ids(seeds, self)
        options = dict(walk_length=walk_length, num_walks=num_walks, p=float(p), q=float(q),
                       restart_prob=float(restart_prob), weighted=weighted, top_k=top_k,
                       visit_stride=visit_stride, max_trials=max_trials)
        d = self._c.random_walks(_ids_buffer(ids), options, int(seed))
        return WalkBatch(d, ids, num_walks)

    def __repr__(self):
        return "fanout.Cluster(%s)" % self._c.description


class Batch:
    """One mini-batch, shaped as PyG's NeighborLoader output.

    ``x`` float32 [N, F] (None without features), ``y`` int64 [N] (None
    without labels), ``edge_index`` int64 [2, E] (row 0 source/neighbor,
    row 1 target, local indices into n_id), ``n_id`` int64 [N] global ids
    (seeds first), ``e_id`` int64 [E] global edge ids (None unless
    edge_ids), ``batch_size`` seeds, ``num_sampled_nodes`` /
    ``num_sampled_edges`` per hop, ``input_id`` positions of the seeds in the
    loader's input_nodes, ``epoch`` and ``index`` of the batch.

    LinkLoader batches add PyG's LinkNeighborLoader fields (None otherwise):
    ``input_id`` positions of the seed edges, ``edge_label_index`` int64
    [2, P + M] and ``edge_label`` (none / binary), or ``src_index``,
    ``dst_pos_index``, ``dst_neg_index`` (triplet); all local indices into
    n_id.

    Temporal loaders (``input_time`` / ``edge_label_time``) add ``batch``
    int64 [N], the seed position whose tree each node belongs to (trees are
    disjoint, as PyG's temporal sampling), and ``seed_time`` [batch_size].

    Heterogeneous loaders add ``node_type`` [N] and ``edge_type`` [E]
    (indices into the cluster's node_types / edge_types) and yield a
    HeteroBatch built from this.

    LABOR loaders (``sampler="labor"``) add ``edge_weight`` float32 [E]: each
    sampled edge's importance weight (per target, an unbiased estimate of the
    mean over its neighbors: docs/SAMPLERS.md).
    """

    _LINK = ("edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index", "batch", "seed_time",
             "node_type", "edge_type", "edge_weight")
    __slots__ = ("x", "y", "edge_index", "n_id", "e_id", "original_id", "batch_size", "num_sampled_nodes",
                 "num_sampled_edges", "input_id", "epoch", "index") + _LINK

    def __init__(self, d):
        self.x = _tensor(d["x"])
        self.y = _tensor(d["y"])
        self.edge_index = _tensor(d["edge_index"])
        self.n_id = _tensor(d["n_id"])
        self.e_id = _tensor(d["e_id"])
        self.original_id = _tensor(d["original_id"])
        self.batch_size = d["batch_size"]
        self.num_sampled_nodes = list(d["num_sampled_nodes"])
        self.num_sampled_edges = list(d["num_sampled_edges"])
        self.input_id = _tensor(d.get("input_id"))
        for k in Batch._LINK:
            setattr(self, k, _tensor(d.get(k)))
        self.epoch = d["epoch"]
        self.index = d["index"]

    def to_pyg(self):
        """This batch as a torch_geometric.data.Data (needs PyG installed)."""
        try:
            from torch_geometric.data import Data
        except ImportError as e:
            raise NotSupported("to_pyg() needs PyTorch Geometric (torch_geometric), which is not installed "
                               "here (%s); the batch's tensors are usable as they are" % e)
        fields = {k: getattr(self, k) for k in ("x", "y", "edge_index", "n_id", "e_id", "input_id") + Batch._LINK
                  if getattr(self, k) is not None}
        return Data(batch_size=self.batch_size, num_sampled_nodes=self.num_sampled_nodes,
                    num_sampled_edges=self.num_sampled_edges, **fields)

    def __repr__(self):
        def shape(t):
            return None if t is None else list(t.shape)
        return ("fanout.Batch(epoch=%d, index=%d, batch_size=%d, x=%s, y=%s, edge_index=%s, n_id=%s, e_id=%s)"
                % (self.epoch, self.index, self.batch_size, shape(self.x), shape(self.y), shape(self.edge_index),
                   shape(self.n_id), shape(self.e_id)))


class TypeStore:
    """One node or edge type's tensors in a HeteroBatch (PyG's NodeStorage / EdgeStorage):
    attributes, or ``store["x"]``; absent ones are None."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __getitem__(self, key):
        return getattr(self, key)

    def __getattr__(self, key):  # only for names never set
        if key.startswith("__"):
            raise AttributeError(key)
        return None

    def keys(self):
        return [k for k, v in self.__dict__.items() if v is not None]

    def __repr__(self):
        def shape(v):
            return list(v.shape) if isinstance(v, torch.Tensor) else v
        return "TypeStore(%s)" % ", ".join("%s=%s" % (k, shape(v)) for k, v in self.__dict__.items() if v is not None)


class HeteroBatch:
    """One heterogeneous mini-batch, shaped as PyG's HeteroData.

    ``batch["movie"]``: ``n_id`` (global ids of the batch's movies, in
    batch order; the seeds of this type first), ``x`` (the type's own
    feature columns; None where it has none), ``y``, ``original_id`` (with
    original_ids=True), ``batch_size`` (seeds of this type) and ``index``
    (positions in the homogeneous batch). ``batch["user", "rates",
    "movie"]`` (or ``batch["rates"]`` when unambiguous): ``edge_index``
    [2, E] whose rows index the source type's and the destination type's
    n_id (row 0 the message source, as NeighborLoader's), and ``e_id``.
    LinkLoader batches put ``edge_label_index`` / ``edge_label`` (or
    ``src_index`` / ``dst_pos_index`` / ``dst_neg_index``) on the seed edge
    type, in those per-type indices, and ``input_id`` on the batch.
    ``x_dict``, ``edge_index_dict``, ``n_id_dict``, ``node_types``,
    ``edge_types`` and ``metadata()`` as HeteroData's; ``homogeneous`` is
    the Batch it was split from.
    """

    def __init__(self, batch, cluster, link_edge_type=None, split=None):
        """``split``: the C++ split of the batch by type (client::SplitByType, as the loader hands it)."""
        self.homogeneous = batch
        self.node_types = cluster.node_types
        self.edge_types = cluster.edge_types
        if split is None:
            raise InvalidArgument("HeteroBatch needs the loader's split of the batch by type")
        t = _tensor
        n_id, x, y, index, orig = (split[k] for k in ("n_id", "x", "y", "index", "original_id"))
        self._nodes = {name: TypeStore(n_id=t(n_id[i]), index=t(index[i]), x=t(x[i]), y=t(y[i]),
                                       original_id=t(orig[i]), batch_size=int(split["batch_size"][i]))
                       for i, name in enumerate(self.node_types)}
        self._edges = {key: TypeStore(edge_index=t(split["edge_index"][e]), e_id=t(split["e_id"][e]))
                       for e, key in enumerate(self.edge_types)}
        type_index = t(split["type_index"])
        self.type_index = type_index
        self.batch_size = batch.batch_size
        self.epoch, self.index = batch.epoch, batch.index
        self.input_id = batch.input_id
        if link_edge_type is not None:
            store = self._edges[self.edge_types[link_edge_type]]
            for k in ("edge_label_index", "src_index", "dst_pos_index", "dst_neg_index"):
                v = getattr(batch, k)
                setattr(store, k, None if v is None else type_index[v])
            store.edge_label = batch.edge_label
            store.input_id = batch.input_id

    def __getitem__(self, key):
        if isinstance(key, str) and key in self._nodes:
            return self._nodes[key]
        if isinstance(key, tuple) and key in self._edges:
            return self._edges[key]
        if isinstance(key, str):
            matches = [k for k in self._edges if k[1] == key]
            if len(matches) == 1:
                return self._edges[matches[0]]
        raise KeyError("%r is not a node type %s or an edge type %s of this batch"
                       % (key, self.node_types, self.edge_types))

    def metadata(self):
        return self.node_types, self.edge_types

    def to_pyg(self):
        """This batch as a torch_geometric.data.HeteroData (needs PyG installed)."""
        try:
            from torch_geometric.data import HeteroData
        except ImportError as e:
            raise NotSupported("to_pyg() needs PyTorch Geometric (torch_geometric), which is not installed "
                               "here (%s); the batch's tensors are usable as they are" % e)
        data = HeteroData()
        for key, store in list(self._nodes.items()) + list(self._edges.items()):
            for k in store.keys():
                if k != "index":
                    data[key][k] = getattr(store, k)
        return data

    @property
    def x_dict(self):
        return {k: v.x for k, v in self._nodes.items() if v.x is not None}

    @property
    def n_id_dict(self):
        return {k: v.n_id for k, v in self._nodes.items()}

    @property
    def edge_index_dict(self):
        return {k: v.edge_index for k, v in self._edges.items()}

    def __repr__(self):
        return ("fanout.HeteroBatch(epoch=%d, index=%d, batch_size=%d, nodes={%s}, edges={%s})"
                % (self.epoch, self.index, self.batch_size,
                   ", ".join("%s: %d" % (k, v.n_id.numel()) for k, v in self._nodes.items()),
                   ", ".join("%s: %d" % (",".join(k), v.edge_index.size(1)) for k, v in self._edges.items())))


def _type_fanouts(cluster, num_neighbors):
    """A num_neighbors dict {edge type: [fanout per hop]} as one list per edge type of the cluster
    (edge types left out are not sampled)."""
    if not cluster.is_hetero():
        raise InvalidArgument("num_neighbors as a dict (per edge type) needs a heterogeneous dataset; this one has "
                              "no edge types")
    lists = [None] * len(cluster.edge_types)
    hops = None
    for key, fanouts in num_neighbors.items():
        e = cluster.edge_type_index(key)
        if isinstance(fanouts, int) or not all(isinstance(f, int) and not isinstance(f, bool) for f in fanouts):
            raise InvalidArgument("num_neighbors[%r] must be a list of integer fanouts per hop, not %r"
                                  % (key, fanouts))
        if lists[e] is not None:
            raise InvalidArgument("num_neighbors names edge type %r twice" % (cluster.edge_types[e],))
        lists[e] = list(fanouts)
        if hops is not None and len(fanouts) != hops:
            raise InvalidArgument("num_neighbors[%r] has %d hops, another edge type %d: every edge type needs one "
                                  "fanout per hop" % (key, len(fanouts), hops))
        hops = len(fanouts)
    if hops is None or hops == 0:
        raise InvalidArgument("num_neighbors must name at least one edge type and one hop")
    return [l if l is not None else [0] * hops for l in lists], hops


def _typed_ids(input_nodes, cluster):
    """input_nodes as PyG's (node_type, ids / mask / split name / None = every node of the type)."""
    node_type, sel = input_nodes
    if node_type not in cluster.node_types:
        raise InvalidArgument("input node type %r is not one of %s" % (node_type, cluster.node_types))
    of_type = cluster.nodes_of_type(node_type)
    if sel is None:
        return of_type
    if isinstance(sel, torch.Tensor) and sel.dtype == torch.bool:  # a mask over this type's nodes, as PyG's
        if sel.numel() != of_type.numel():
            raise InvalidArgument("a boolean mask for node type %r has %d entries, the type %d nodes"
                                  % (node_type, sel.numel(), of_type.numel()))
        return of_type[sel.flatten()]
    ids = _ids(sel, cluster)
    t = cluster.node_types.index(node_type)
    if isinstance(sel, str):
        return ids[cluster.node_type_of(ids) == t] if ids.numel() else ids
    if ids.numel():
        types = cluster.node_type_of(ids)
        bad = (types != t).nonzero().flatten()
        if bad.numel():
            i = int(bad[0])
            raise InvalidArgument("input node %d (position %d) is a %s, not a %s"
                                  % (int(ids[i]), i, cluster.node_types[int(types[i])], node_type))
    return ids


def _times(t):
    if t is None:
        return None
    if isinstance(t, torch.Tensor):
        if t.is_floating_point() or t.dtype == torch.bool:
            raise InvalidArgument("input times must be integers (e.g. Unix seconds), not %s" % t.dtype)
        return _ids_buffer(t.flatten())
    try:
        return _ids_buffer(torch.as_tensor(list(t), dtype=torch.long))
    except (TypeError, ValueError, RuntimeError) as e:
        raise InvalidArgument("input times must be a tensor or sequence of integers: %s" % e)


def _check_epoch(epoch):
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise InvalidArgument("epoch must be a non-negative integer, not %r" % (epoch,))
    return epoch


def _ids(input_nodes, cluster):
    if isinstance(input_nodes, str):
        return cluster.split_nodes(input_nodes)
    if isinstance(input_nodes, torch.Tensor):
        if input_nodes.dtype == torch.bool:
            if input_nodes.numel() != cluster.num_nodes:
                raise InvalidArgument("a boolean input_nodes mask has %d entries, the graph %d nodes"
                                      % (input_nodes.numel(), cluster.num_nodes))
            return input_nodes.nonzero().flatten()
        if input_nodes.is_floating_point() or input_nodes.is_complex():
            raise InvalidArgument("input_nodes must hold integer ids, not %s" % input_nodes.dtype)
        return input_nodes.flatten().to(torch.long)
    try:
        return torch.as_tensor(list(input_nodes), dtype=torch.long)
    except (TypeError, ValueError, RuntimeError) as e:
        raise InvalidArgument("input_nodes must be a split name, a tensor or a sequence of integer ids: %s" % e)


class NodeLoader:
    """Mini-batches of sampled subgraphs around seed nodes, as PyG's
    NeighborLoader: ``for batch in loader`` walks one epoch (reshuffled
    each epoch when ``shuffle``); ``len(loader)`` is this rank's batch count.

    ``input_nodes``: a split name ("train", ...), a tensor or sequence of
    global ids, or a boolean mask. ``num_neighbors``: fanout per hop (-1 =
    all). Sampling is a pure function of ``seed``, the epoch and the batch:
    two runs give the same batches. ``RANK``/``WORLD_SIZE`` (torchrun) shard
    the epoch unless ``rank``/``world_size`` are given. ``device="cuda"``
    (or "cuda:N") makes ``x`` a CUDA tensor: a GPU feature cache holds the
    highest-degree ``gpu_cache_fraction`` of the rows, and misses come
    straight into device memory where UCX moves CUDA memory, else staged
    through pinned host memory (needs a CUDA-enabled PyTorch).

    ``x_dtype``: ``torch.float32`` (default), or ``torch.float16`` /
    ``torch.bfloat16`` to keep ``x`` at half the bytes (rows stored in that
    type, ``fanout-partition --feature-dtype``, come out exactly as stored;
    others are rounded to nearest even). ``data_plane`` and
    ``local_sampling`` (default: the cluster's) choose the path as on
    ``Cluster`` (docs/DATA_PLANE.md, "Choosing a path").

    Temporal sampling (a dataset partitioned with ``--edge-times``):
    ``input_time`` gives each seed a time; a seed's subgraph holds only edges
    not later than it (``temporal_strategy`` "uniform" among them, or "last":
    the most recent), one disjoint tree per seed (``batch.batch``).

    ``sampler``: "neighbor" (default: each node draws its fanout
    independently) or "labor" (LABOR-0: the same expected fanout per node,
    but the nodes of a hop share their draws, so fewer distinct nodes and
    feature rows per batch; batches carry ``edge_weight``; homogeneous,
    not temporal, no ``replace``), or "pinsage" (PinSAGE hops: a node's
    neighbors in hop h are the ``num_neighbors[h]`` nodes its random walks
    visit most, ``num_walks`` walks of ``walk_length`` steps restarting with
    ``restart_prob``, counting every ``visit_stride``-th step; ``top_k``, when
    given, is every hop's count instead; ``edge_weight`` their normalised
    visit counts, ``e_id`` -1). docs/SAMPLERS.md has the definitions.

    Heterogeneous datasets (``cluster.node_types`` not empty), as PyG:
    ``num_neighbors`` a dict {(src, rel, dst) or rel: [fanout per hop]}
    (edge types left out are not sampled; a list applies to every edge
    type), ``input_nodes`` a (node_type, ids / mask / split name / None)
    tuple or global ids; batches are HeteroBatch.
    """

    def __init__(self, cluster, input_nodes, num_neighbors=(15, 10, 5), batch_size=1024, *, shuffle=True,
                 replace=False, weighted=False, num_workers=2, prefetch=4, seed=0, data_plane="auto",
                 features=True, labels=True, edge_ids=True, original_ids=False, drop_last=False, rank=None,
                 world_size=None, device="cpu", gpu_cache_fraction=0.1, input_time=None, temporal_strategy="uniform",
                 sampler="neighbor", num_walks=10, walk_length=4, restart_prob=0.5, visit_stride=1, top_k=None,
                 local_sampling=None, x_dtype=torch.float32, _subgraph=False, _link=None):
        if not isinstance(cluster, Cluster):
            raise InvalidArgument("%s needs a fanout.Cluster, not %s" % (type(self).__name__, type(cluster).__name__))
        _check_data_plane(data_plane)
        _check_local_sampling(local_sampling, allow_none=True)
        session_mode = None  # the loader's sessions reach the servers this way, on the same cluster
        if data_plane != "auto" and data_plane != cluster.data_plane:
            if data_plane == "ucx" and not cluster._c.ucx_available:
                cluster = cluster.with_data_plane("ucx")  # this cluster has no UCX: connect one that does
            else:
                session_mode = data_plane
        for name, v in (("batch_size", batch_size), ("num_workers", num_workers), ("prefetch", prefetch)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidArgument("%s must be an integer, not %r" % (name, v))
            if v < 1:
                raise InvalidArgument("%s must be >= 1, not %d" % (name, v))
        type_fanouts = None
        if isinstance(num_neighbors, dict):  # heterogeneous: PyG's {edge_type: [fanout per hop]}
            type_fanouts, hops = _type_fanouts(cluster, num_neighbors)
            num_neighbors = []  # the hops come from the per-type lists (C++'s HeteroHopFanouts)
        elif isinstance(num_neighbors, int):
            raise InvalidArgument("num_neighbors must be a list of fanouts per hop, e.g. [15, 10, 5], not %r"
                                  % (num_neighbors,))
        elif cluster.is_hetero() and _link is None:
            # PyG: one list for every edge type.
            type_fanouts = [list(num_neighbors)] * len(cluster.edge_types)
        if type_fanouts is None and isinstance(input_nodes, tuple):
            raise InvalidArgument("input_nodes as (node_type, ids) needs a heterogeneous dataset")
        self.cluster = cluster
        self.hetero = type_fanouts is not None
        self._link_edge_type = _link.pop("edge_type", None) if _link is not None else None
        if _link is None and isinstance(input_nodes, tuple) and len(input_nodes) == 2:
            self.input_nodes = _typed_ids(input_nodes, cluster)
        else:
            self.input_nodes = None if _link is not None else _ids(input_nodes, cluster)
        empty = torch.empty(0, dtype=torch.long)
        ids = _ids_buffer(empty if _link is not None else self.input_nodes)
        options = dict(num_neighbors=list(num_neighbors), batch_size=batch_size, shuffle=bool(shuffle),
                       replace=bool(replace), weighted=bool(weighted), num_workers=num_workers, prefetch=prefetch,
                       seed=int(seed), features=bool(features), labels=bool(labels), edge_ids=bool(edge_ids),
                       original_ids=bool(original_ids), drop_last=bool(drop_last),
                       rank=None if rank is None else int(rank),
                       world_size=None if world_size is None else int(world_size), device=str(device),
                       gpu_cache_fraction=float(gpu_cache_fraction), subgraph=bool(_subgraph),
                       input_time=_times(input_time), temporal_strategy=str(temporal_strategy),
                       type_fanouts=type_fanouts, link_edge_type=self._link_edge_type, sampler=str(sampler))
        if top_k is not None:
            if sampler != "pinsage":
                raise InvalidArgument("top_k is for sampler='pinsage' (each hop's most visited nodes), not %r"
                                      % (sampler,))
            if isinstance(top_k, bool) or not isinstance(top_k, int):
                raise InvalidArgument("top_k must be an integer, not %r" % (top_k,))
            options["num_neighbors"] = [top_k] * len(options["num_neighbors"])
        if sampler == "pinsage":
            options.update(num_walks=num_walks, walk_length=walk_length, restart_prob=float(restart_prob),
                           visit_stride=visit_stride)
        if session_mode is not None:
            options["data_plane"] = session_mode
        x_dtypes = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
                    "float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}
        if x_dtype not in x_dtypes:
            raise InvalidArgument("x_dtype must be torch.float32, torch.float16 or torch.bfloat16, not %r"
                                  % (x_dtype,))
        if x_dtypes[x_dtype] != "float32":
            options["x_dtype"] = x_dtypes[x_dtype]
        if local_sampling is not None and local_sampling != cluster.local_sampling:
            options["local_sampling"] = local_sampling
        link = None
        if _link is not None:
            link = {k: _link[k] for k in ("src", "dst", "label")}
            options.update(neg_mode=_link["mode"], neg_amount=float(_link["amount"]), neg_strict=bool(_link["strict"]))
        self._loader = _core.NodeLoader(cluster._c, ids, options, link)
        self.batch_size = batch_size
        self._next_epoch = 0

    def __len__(self):
        return len(self._loader)

    @property
    def rank(self):
        return self._loader.rank

    @property
    def world_size(self):
        return self._loader.world_size

    def set_epoch(self, epoch):
        """The epoch the next iteration walks (default: 0, then the next one each time)."""
        self._next_epoch = _check_epoch(epoch)

    def epoch_seeds(self, epoch):
        """This rank's seeds of an epoch, in batch order (an int64 tensor; a LinkLoader: positions of
        seed edges)."""
        return _tensor(self._loader.epoch_seeds(_check_epoch(epoch)))

    def __iter__(self):
        self._loader.set_epoch(self._next_epoch)
        self._next_epoch += 1
        while True:
            d = self._loader.next()
            if d is None:
                return
            b = Batch(d)
            yield HeteroBatch(b, self.cluster, self._link_edge_type, d.get("hetero")) if self.hetero else b

    def stats(self):
        """Counters since the loader was made: batches, sampled edges, bytes by path, waits,
        retries and failovers, per server replica ("servers": as Cluster.health()), and each
        partition's path as this loader's workers use it ("paths": as Cluster.paths(), sessions =
        workers)."""
        return self._loader.stats()

    def close(self):
        """Stops the background workers now (they may wait on a server up to the call deadline; other
        Python threads run meanwhile). The loader is unusable afterwards; closing twice is harmless."""
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SubgraphLoader(NodeLoader):
    """As GraphLearn-for-PyTorch's SubGraphLoader: the nodes are sampled as
    NodeLoader samples them (same ``num_neighbors``, seeds first, same
    ``n_id``), and ``edge_index`` holds every edge among them instead of the
    sampled ones: for each node of ``n_id`` in order, its stored edges whose
    other end is in ``n_id`` (row = that end, col = the node); ``edge_id``
    their ids. ``num_sampled_edges`` has one entry. Distributed equals local,
    as for NodeLoader. Options as NodeLoader's.
    """

    def __init__(self, cluster, input_nodes, num_neighbors=(15, 10, 5), batch_size=1024, **options):
        if "_subgraph" in options:
            raise InvalidArgument("SubgraphLoader: unknown option _subgraph")
        super().__init__(cluster, input_nodes, num_neighbors, batch_size, _subgraph=True, **options)


class NegativeSampling:
    """Negative sampling for LinkLoader, as PyG's NegativeSampling: ``mode``
    "binary" (ceil(amount * P) random pairs, labelled 0 beside the P
    positives) or "triplet" (``amount`` random destinations per positive
    edge, an integer). ``strict`` (Fanout's default): a negative is never an
    existing edge of the stored graph (checked on the servers); False keeps
    PyG's unchecked draws."""

    __slots__ = ("mode", "amount", "strict")

    def __init__(self, mode, amount=1, strict=True):
        if mode not in ("binary", "triplet"):
            raise InvalidArgument("negative sampling mode must be 'binary' or 'triplet', not %r" % (mode,))
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount > 0:
            raise InvalidArgument("negative sampling amount must be a number > 0, not %r" % (amount,))
        if mode == "triplet" and int(amount) != amount:
            raise InvalidArgument("triplet negative sampling needs an integer amount, not %r" % (amount,))
        self.mode, self.amount, self.strict = mode, amount, bool(strict)

    @classmethod
    def cast(cls, value):
        """None, a mode name, a dict of the arguments, or an object with mode/amount (PyG's class)."""
        if value is None or isinstance(value, NegativeSampling):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, dict):
            unknown = set(value) - {"mode", "amount", "strict"}
            if unknown or "mode" not in value:
                raise InvalidArgument("neg_sampling dict takes mode, amount and strict, not %r" % (value,))
            return cls(**value)
        mode = getattr(value, "mode", None)
        if mode is not None:  # PyG's NegativeSampling (mode is an enum with .value)
            return cls(getattr(mode, "value", mode), getattr(value, "amount", 1))
        raise InvalidArgument("neg_sampling must be None, 'binary', 'triplet', a dict or a NegativeSampling, not %r"
                              % (value,))

    def __repr__(self):
        return "fanout.NegativeSampling(%r, amount=%r, strict=%r)" % (self.mode, self.amount, self.strict)


class LinkLoader(NodeLoader):
    """Mini-batches for link prediction, as PyG's LinkNeighborLoader.

    ``edge_label_index``: the seed edges, int64 [2, P] global ids (row 0
    sources, row 1 destinations); ``edge_label``: optional [P] class per
    edge. ``neg_sampling``: None, "binary", "triplet", a dict or a
    NegativeSampling (strict by default: negatives are never existing
    edges). Each batch samples around its seed nodes - the distinct
    endpoints of its positive and negative edges, ascending - exactly as
    NodeLoader would, and adds ``input_id``, ``edge_label_index`` /
    ``edge_label`` (binary: positives first, labels 1 / 0, or the given
    classes shifted up by one where they start at 0, negatives 0) or
    ``src_index`` / ``dst_pos_index`` / ``dst_neg_index`` (triplet; [P,
    amount], [P] for amount 1). Negatives are a pure function of ``seed``,
    the epoch and the batch: distributed equals local. ``edge_label_time``
    (one time per seed edge) makes it temporal, as PyG: every endpoint is
    its own seed at its edge's time (negatives at their positive's), so
    edge_label_index is [arange, P + M + arange]. Other options as
    NodeLoader's.

    Heterogeneous datasets: ``edge_label_index=(edge_type, ids)`` (global
    ids of that type's ends) and ``num_neighbors`` a dict per edge type, as
    PyG; negatives draw sources among the source type's nodes and
    destinations among the destination type's, strict against edges of that
    type. Batches are HeteroBatch with the link fields on the edge type.
    """

    def __init__(self, cluster, edge_label_index, edge_label=None, num_neighbors=(15, 10, 5), batch_size=1024, *,
                 neg_sampling=None, edge_label_time=None, **options):
        for bad in ("_subgraph", "_link", "input_nodes", "input_time"):
            if bad in options:
                raise InvalidArgument("LinkLoader: unknown option %s" % bad)
        if not isinstance(cluster, Cluster):
            raise InvalidArgument("LinkLoader needs a fanout.Cluster, not %s" % type(cluster).__name__)
        edge_type = None
        if isinstance(edge_label_index, tuple) and len(edge_label_index) == 2:  # PyG: (edge_type, [2, P])
            edge_type = cluster.edge_type_index(edge_label_index[0])
            edge_label_index = edge_label_index[1]
        if not isinstance(edge_label_index, torch.Tensor):
            try:
                edge_label_index = torch.as_tensor(edge_label_index)
            except (TypeError, ValueError, RuntimeError) as e:
                raise InvalidArgument("edge_label_index must be a [2, P] tensor of node ids: %s" % e)
        if edge_label_index.dim() != 2 or edge_label_index.size(0) != 2:
            raise InvalidArgument("edge_label_index must have shape [2, P], not %s" % list(edge_label_index.shape))
        if edge_label_index.is_floating_point() or edge_label_index.dtype == torch.bool:
            raise InvalidArgument("edge_label_index must hold integer ids, not %s" % edge_label_index.dtype)
        edge_label_index = edge_label_index.to(torch.long)
        label = None
        if edge_label is not None:
            edge_label = torch.as_tensor(edge_label)
            if edge_label.is_floating_point():
                raise InvalidArgument("edge_label must hold integer classes, not %s" % edge_label.dtype)
            label = _ids_buffer(edge_label.flatten())
        neg = NegativeSampling.cast(neg_sampling)
        if cluster.is_hetero() and edge_type is None and isinstance(num_neighbors, dict):
            raise InvalidArgument("on a heterogeneous dataset, edge_label_index must be (edge_type, [2, P] ids)")
        link = {"src": _ids_buffer(edge_label_index[0]), "dst": _ids_buffer(edge_label_index[1]), "label": label,
                "mode": "none" if neg is None else neg.mode, "amount": 1.0 if neg is None else float(neg.amount),
                "strict": True if neg is None else neg.strict, "edge_type": edge_type}
        self.edge_label_index = edge_label_index
        self.edge_label = edge_label
        self.neg_sampling = neg
        super().__init__(cluster, None, num_neighbors, batch_size, _link=link, input_time=edge_label_time, **options)


class WalkBatch:
    """Random walks of a batch of seeds (Cluster.random_walks, RandomWalkLoader).

    ``seeds`` int64 [n]; ``walks`` int64 [n * num_walks, walk_length + 1]
    (row i * num_walks + j is walk j of seed i; -1 past a dead end);
    ``steps`` the steps taken. With ``top_k``: ``top_ptr`` int64 [n + 1] and
    ``top_nodes`` / ``top_counts``: seed i's most visited nodes are
    ``top_nodes[top_ptr[i]:top_ptr[i + 1]]`` (PinSAGE neighborhoods); None
    otherwise. ``epoch`` and ``index`` of the batch (a loader's), else 0.
    """

    __slots__ = ("seeds", "walks", "steps", "top_ptr", "top_nodes", "top_counts", "epoch", "index")

    def __init__(self, d, seeds, num_walks, epoch=0, index=0):
        self.seeds = seeds
        self.walks = _tensor(d["walks"])
        self.steps = d["steps"]
        self.top_ptr = _tensor(d.get("top_offsets"))
        self.top_nodes = _tensor(d.get("top_nodes"))
        self.top_counts = _tensor(d.get("top_counts"))
        self.epoch = epoch
        self.index = index

    def neighborhood_index(self):
        """The PinSAGE neighborhoods as PyG-style (edge_index [2, K] global ids: row 0 the visited
        node, row 1 its seed, edge_weight [K] float visit counts)."""
        if self.top_ptr is None:
            raise InvalidArgument("no neighborhoods: ask for top_k > 0")
        counts = self.top_ptr[1:] - self.top_ptr[:-1]
        dst = torch.repeat_interleave(self.seeds, counts)
        return torch.stack([self.top_nodes, dst]), self.top_counts.to(torch.float32)

    def __repr__(self):
        return "fanout.WalkBatch(seeds=%d, walks=%s, steps=%d)" % (len(self.seeds), list(self.walks.shape), self.steps)


class RandomWalkLoader:
    """Random walks from ``input_nodes`` in batches of ``batch_size`` seeds, for node2vec /
    DeepWalk training and PinSAGE neighborhoods: ``for batch in loader`` walks one epoch
    (reshuffled each epoch when ``shuffle``), yielding WalkBatch. Options as Cluster.random_walks.
    Batch b of epoch e uses request seed batch_request_seed(seed, e, b), as NodeLoader's: a run
    is reproducible, and the same through servers as in process."""

    def __init__(self, cluster, input_nodes, walk_length=5, batch_size=1024, *, num_walks=1, p=1.0, q=1.0,
                 restart_prob=0.0, weighted=False, top_k=0, visit_stride=1, shuffle=True, seed=0, drop_last=False,
                 max_trials=100):
        if not isinstance(cluster, Cluster):
            raise InvalidArgument("RandomWalkLoader needs a fanout.Cluster, not %s" % type(cluster).__name__)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgument("batch_size must be an integer >= 1, not %r" % (batch_size,))
        self.cluster = cluster
        self.input_nodes = _ids(input_nodes, cluster)
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self._options = dict(walk_length=walk_length, num_walks=num_walks, p=p, q=q, restart_prob=restart_prob,
                             weighted=weighted, top_k=top_k, visit_stride=visit_stride, max_trials=max_trials)
        # The options checked once, here, by the same code the walks use (no walk taken).
        cluster.random_walks(self.input_nodes[:0], **self._options)
        self._next_epoch = 0

    def __len__(self):
        n = len(self.input_nodes)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def set_epoch(self, epoch):
        """The epoch the next iteration walks (default: 0, then the next one each time)."""
        self._next_epoch = _check_epoch(epoch)

    def __iter__(self):
        epoch = self._next_epoch
        self._next_epoch += 1
        ids = self.input_nodes
        if self.shuffle:
            g = torch.Generator().manual_seed(_core.batch_request_seed(self.seed, epoch, 1 << 62) & ((1 << 63) - 1))
            ids = ids[torch.randperm(len(ids), generator=g)]
        for b in range(len(self)):
            chunk = ids[b * self.batch_size:(b + 1) * self.batch_size]
            request_seed = _core.batch_request_seed(self.seed, epoch, b)
            d = self.cluster._c.random_walks(_ids_buffer(chunk), self._options, request_seed)
            yield WalkBatch(d, chunk, self._options["num_walks"], epoch, b)


def stats(address, timeout_s=10.0):
    """A server's admin ``/stats`` (JSON) as a dict; ``address`` is its admin "host:port"."""
    url = address if address.startswith("http") else "http://%s/stats" % address
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return json.loads(r.read().decode())
    except urllib.error.URLError as e:
        raise Unavailable("admin endpoint %s: %s" % (address, e.reason))
    except ValueError as e:
        raise Corruption("admin endpoint %s: /stats is not JSON: %s" % (address, e))


def partition(input, output, *, format, parts, method="metis", force=False, quiet=True, **options):
    """Runs fanout-partition (same options, as keyword arguments: feature_dtype="float16",
    undirected=True, rmat_scale=18, ...). Raises InvalidArgument with its message on failure."""
    args = [find_binary("fanout-partition"), "--format", format, "--parts", str(parts), "--method", method,
            "--output", str(output)]
    if input is not None:
        args += ["--input", str(input)]
    if force:
        args.append("--force")
    if quiet:
        args.append("--quiet")
    for k, v in options.items():
        flag = "--" + k.replace("_", "-")
        if v is True:
            args.append(flag)
        elif v is False or v is None:
            continue
        else:
            args += [flag, str(v)]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise InvalidArgument("fanout-partition failed (exit %d): %s" % (r.returncode, (r.stderr or r.stdout).strip()))
    return str(output)
