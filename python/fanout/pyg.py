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

Each DataLoader worker process connects on its own (UCX state does not survive a fork): the objects
keep the cluster's recipe and reconnect the first time they are used in a new process.

Supported now: homogeneous datasets, node sampling (``sample_from_nodes``), features ``x`` and labels
``y``. Link sampling (``sample_from_edges``), heterogeneous and temporal sampling through this sampler
are refused by name (Fanout's own ``LinkLoader`` and heterogeneous / temporal ``NodeLoader`` have them).
"""
import os
import warnings

try:
    import torch_geometric  # noqa: F401
    from torch_geometric.data import EdgeAttr, TensorAttr
    from torch_geometric.data import FeatureStore as _PygFeatureStore
    from torch_geometric.data import GraphStore as _PygGraphStore
    from torch_geometric.sampler import BaseSampler, SamplerOutput
except ImportError as e:  # pragma: no cover - exercised where PyG is absent
    raise ImportError("fanout.pyg needs PyTorch Geometric (the torch-geometric package: "
                      "pip install torch-geometric), which does not import here: %s" % e) from e

import torch

from . import Cluster, InvalidArgument, NotSupported, _tensor


class _PerProcess:
    """A fanout.Cluster usable in this process: the one given where it was made, a reconnected one in
    a process forked from there (DataLoader workers)."""

    def __init__(self, cluster):
        if not isinstance(cluster, Cluster):
            raise InvalidArgument("fanout.pyg needs a fanout.Cluster (got %s)" % type(cluster).__name__)
        if cluster.is_hetero():
            raise NotSupported("fanout.pyg supports homogeneous datasets for now; this one has node types "
                               "%s (use fanout.NodeLoader with per-type num_neighbors)" % cluster.node_types)
        self._cluster = cluster
        self._pid = os.getpid()
        self.num_nodes = cluster.num_nodes
        self.feature_dim = cluster.feature_dim

    def get(self):
        if os.getpid() != self._pid:
            self._cluster._forget_after_fork()
            self._cluster = self._cluster.reconnect()
            self._pid = os.getpid()
        return self._cluster

    def __getstate__(self):  # spawned workers: the recipe travels, the connections do not
        return {"recipe": self._cluster._recipe, "num_nodes": self.num_nodes, "feature_dim": self.feature_dim}

    def __setstate__(self, state):
        self._cluster = Cluster._from_recipe(state["recipe"])
        self._pid = os.getpid()
        self.num_nodes, self.feature_dim = state["num_nodes"], state["feature_dim"]


def _index(index, n):
    """A TensorAttr index as an int64 tensor of global ids (None: every node)."""
    if index is None:
        return torch.arange(n, dtype=torch.long)
    if isinstance(index, slice):
        return torch.arange(n, dtype=torch.long)[index]
    if isinstance(index, int):
        return torch.tensor([index], dtype=torch.long)
    t = torch.as_tensor(index)
    if t.dtype == torch.bool:
        return t.nonzero().flatten()
    return t.to(torch.long).flatten()


class FeatureStore(_PygFeatureStore):
    """The cluster's node features (``x``, float32) and labels (``y``, int64; -1 unknown) as a read-only
    PyG FeatureStore; rows are fetched from the servers (or read from co-located exports) for any index."""

    _ATTRS = ("x", "y")

    def __init__(self, cluster):
        super().__init__()
        self._remote = _PerProcess(cluster)

    def _get_tensor(self, attr):
        if attr.attr_name not in self._ATTRS:
            return None
        if attr.group_name is not None:
            raise NotSupported("fanout.pyg.FeatureStore: the dataset is homogeneous; group %r does not exist"
                               % (attr.group_name,))
        ids = _index(attr.index, self._remote.num_nodes)
        c = self._remote.get()
        return _tensor(c._c.features(ids.tolist()) if attr.attr_name == "x" else c._c.labels(ids.tolist()))

    def _multi_get_tensor(self, attrs):
        # One request per attribute and server for all of the call's ids: PyG asks for x and y of
        # the same sampled nodes.
        return [self._get_tensor(a) for a in attrs]

    def _get_tensor_size(self, attr):
        if attr.attr_name == "x":
            return (self._remote.num_nodes, self._remote.feature_dim)
        if attr.attr_name == "y":
            return (self._remote.num_nodes,)
        return None

    def get_all_tensor_attrs(self):
        return [TensorAttr(group_name=None, attr_name=a) for a in self._ATTRS]

    def _put_tensor(self, tensor, attr):
        raise NotSupported("fanout.pyg.FeatureStore is read-only: the servers' partitions are the data "
                           "(repartition with fanout-partition to change them)")

    def _remove_tensor(self, attr):
        raise NotSupported("fanout.pyg.FeatureStore is read-only: the servers' partitions are the data")


class GraphStore(_PygGraphStore):
    """The cluster's topology as a read-only PyG GraphStore: one edge type (``None``) of
    ``num_nodes x num_nodes`` in COO layout. Asking for the whole ``edge_index`` works but copies the
    topology into this process (warned once); sample with ``fanout.pyg.NeighborSampler`` instead."""

    def __init__(self, cluster):
        super().__init__()
        self._remote = _PerProcess(cluster)
        self._warned = False

    def get_all_edge_attrs(self):
        n = self._remote.num_nodes
        return [EdgeAttr(edge_type=None, layout="coo", is_sorted=False, size=(n, n))]

    def _get_edge_index(self, edge_attr):
        if not self._warned:
            warnings.warn("fanout.pyg.GraphStore: the whole edge_index is being copied into this process "
                          "(every edge of every partition); fanout.pyg.NeighborSampler samples on the "
                          "servers without that copy", stacklevel=3)
            self._warned = True
        c = self._remote.get()
        rows, cols = [], []
        n = self._remote.num_nodes
        for begin in range(0, n, 65536):
            seeds = torch.arange(begin, min(n, begin + 65536), dtype=torch.long)
            n_id, row, col, _, _, _ = c._c.sample(seeds.tolist(), [-1], 0, False, False)
            n_id = _tensor(n_id)
            rows.append(n_id[_tensor(row)])  # the neighbor (source) ...
            cols.append(n_id[_tensor(col)])  # ... of the node it is stored with (target)
        return torch.cat(rows), torch.cat(cols)

    def _put_edge_index(self, edge_index, edge_attr):
        raise NotSupported("fanout.pyg.GraphStore is read-only: the servers' partitions are the graph")

    def _remove_edge_index(self, edge_attr):
        raise NotSupported("fanout.pyg.GraphStore is read-only: the servers' partitions are the graph")


class NeighborSampler(BaseSampler):
    """PyG's BaseSampler over Fanout's servers: ``num_neighbors[h]`` neighbors per node at hop h (-1:
    all), without replacement unless ``replace``. A batch's sample is a pure function of its seed ids,
    ``seed`` and the position of its first input (``input_id[0]``): the same batch gives the same
    subgraph in any worker, on any number of servers."""

    def __init__(self, cluster, num_neighbors, *, replace=False, seed=0):
        self._remote = _PerProcess(cluster)
        fanouts = [int(k) for k in num_neighbors]
        if not fanouts or any(k == 0 or k < -1 for k in fanouts):
            raise InvalidArgument("num_neighbors must be a list of hop fanouts > 0 (or -1: every neighbor), "
                                  "got %r" % (list(num_neighbors),))
        self.num_neighbors = fanouts
        self.replace = bool(replace)
        self.seed = int(seed)

    def sample_from_nodes(self, index, **kwargs):
        if index.time is not None:
            raise NotSupported("fanout.pyg.NeighborSampler: temporal sampling (seed times) is not supported "
                               "through PyG's loaders yet; use fanout.NodeLoader(..., seed_time=...)")
        if index.input_type is not None:
            raise NotSupported("fanout.pyg.NeighborSampler: heterogeneous input types are not supported yet")
        seeds = index.node.to(torch.long)
        first = int(index.input_id[0]) if index.input_id is not None and index.input_id.numel() else 0
        request_seed = (self.seed * 1000003 + first) & ((1 << 63) - 1)
        n_id, row, col, e_id, nsn, nse = self._remote.get()._c.sample(seeds.tolist(), self.num_neighbors,
                                                                       request_seed, self.replace, True)
        return SamplerOutput(node=_tensor(n_id), row=_tensor(row), col=_tensor(col), edge=_tensor(e_id),
                             batch=None, num_sampled_nodes=list(nsn), num_sampled_edges=list(nse),
                             metadata=(index.input_id, index.time))

    def sample_from_edges(self, index, neg_sampling=None):
        raise NotSupported("fanout.pyg.NeighborSampler: link sampling through PyG's LinkLoader is not "
                           "supported yet; fanout.LinkLoader samples links (strict negatives) on the servers")

    @property
    def edge_permutation(self):
        return None
