"""Batches as the loaders yield them: fanout.Batch (PyG's names), its heterogeneous split HeteroBatch and
their conversion to PyG's Data and HeteroData; WalkBatch (random walks)."""
import torch

from ._common import _tensor
from .errors import InvalidArgument, NotSupported


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
                 "num_sampled_edges", "input_id", "epoch", "index", "versions") + _LINK

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
        # Live partitions: the version each partition was read at (-1: not read, or static).
        self.versions = list(d.get("versions", ()))

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
    Temporal batches (``input_time`` / ``edge_label_time``): each node
    type's ``batch`` names the tree (seed position) of each of its nodes, and
    ``seed_time`` (on the batch) each tree's time, as PyG's disjoint
    temporal HeteroData.
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
        n_id, x, y, index, orig, tree = (split[k] for k in ("n_id", "x", "y", "index", "original_id", "batch"))
        self._nodes = {name: TypeStore(n_id=t(n_id[i]), index=t(index[i]), x=t(x[i]), y=t(y[i]),
                                       original_id=t(orig[i]), batch=t(tree[i]),
                                       batch_size=int(split["batch_size"][i]))
                       for i, name in enumerate(self.node_types)}
        self._edges = {key: TypeStore(edge_index=t(split["edge_index"][e]), e_id=t(split["e_id"][e]))
                       for e, key in enumerate(self.edge_types)}
        type_index = t(split["type_index"])
        self.type_index = type_index
        self.batch_size = batch.batch_size
        self.epoch, self.index = batch.epoch, batch.index
        self.input_id = batch.input_id
        self.seed_time = batch.seed_time
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
        if self.seed_time is not None:
            data.seed_time = self.seed_time
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
