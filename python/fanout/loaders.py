"""The loaders: NodeLoader (PyG's NeighborLoader), SubgraphLoader, LinkLoader (LinkNeighborLoader) with
NegativeSampling, and RandomWalkLoader with WalkBatch."""
import time

import torch

from ._common import (_check_data_plane, _check_epoch, _check_local_sampling, _core, _ids, _ids_buffer,  # noqa: F401
                      _tensor, _times, _type_fanouts, _typed_ids)
from .batches import Batch, HeteroBatch, WalkBatch
from .cluster import Cluster
from .errors import InvalidArgument, NotSupported


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
    visit counts, ``e_id`` -1), or "ppr" (one hop: each seed's
    ``num_neighbors[0]`` (or ``top_k``) nodes of highest approximate
    personalized PageRank, forward push with teleport ``ppr_alpha`` and
    threshold ``ppr_eps``; ``edge_weight`` their scores, ``e_id`` -1).
    docs/SAMPLERS.md has the definitions.

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
                 ppr_alpha=0.15, ppr_eps=5e-6, ppr_type_budgets=None,
                 local_sampling=None, x_dtype=torch.float32, snapshot="latest", _subgraph=False, _link=None):
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
        elif cluster.is_hetero() and _link is None and sampler != "ppr":
            # PyG: one list for every edge type.
            type_fanouts = [list(num_neighbors)] * len(cluster.edge_types)
        if type_fanouts is None and isinstance(input_nodes, tuple) and not cluster.is_hetero():
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
        # Live partitions: "latest" (each batch at each partition's newest version, one per batch),
        # or one version per partition (the C++ parser checks).
        options["snapshot"] = snapshot if isinstance(snapshot, str) or snapshot is None else [int(v) for v in snapshot]
        if top_k is not None:  # every hop's count with sampler="pinsage" (the C++ parser checks)
            options["top_k"] = top_k
        if sampler == "ppr":
            options.update(ppr_alpha=float(ppr_alpha), ppr_eps=float(ppr_eps))
            if ppr_type_budgets is not None:
                options["ppr_type_budgets"] = cluster._type_budgets(ppr_type_budgets)
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
            options.update(neg_mode=_link["mode"], neg_amount=float(_link["amount"]), neg_strict=bool(_link["strict"]),
                           neg_temporal=_link.get("temporal", "none"))
        self._loader = _core.NodeLoader(cluster._c, ids, options, link)
        self.batch_size = batch_size
        self._next_epoch = 0
        self._python = [0.0, 0.0, 0]  # wall s, CPU s, batches: capsules to tensors and Batch objects

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
            wall, cpu = time.perf_counter(), time.thread_time()
            b = Batch(d)
            b = HeteroBatch(b, self.cluster, self._link_edge_type, d.get("hetero")) if self.hetero else b
            t = self._python
            t[0] += time.perf_counter() - wall
            t[1] += time.thread_time() - cpu
            t[2] += 1
            yield b

    def stats(self):
        """Counters since the loader was made: batches, sampled edges, bytes by path, waits,
        retries and failovers, per server replica ("servers": as Cluster.health()), each
        partition's path as this loader's workers use it ("paths": as Cluster.paths(), sessions =
        workers), and "stages": where the time went, each stage's wall and CPU seconds and calls
        (the workers' route, local_sample, sample_transfer, merge, local_features,
        feature_transfer, feature_decode, labels and build, summed over workers; produce, each
        batch whole; handoff, arrays to DLPack capsules, and python, capsules to tensors and Batch
        objects, on the iterating thread)."""
        s = self._loader.stats()
        s["stages"]["python"] = {"wall_s": self._python[0], "cpu_s": self._python[1], "calls": self._python[2]}
        return s

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
    PyG's unchecked draws. ``temporal`` (with ``edge_label_time``; TGB's
    evaluation negatives): "active" draws each negative's destination among
    the destinations first seen (in a seed edge) before its positive's time,
    "historical" among those its positive's source linked to before then
    (not the positive's own; an active draw where there is none); a negative
    keeps its positive's source and time. Default "none" (docs/SAMPLERS.md)."""

    __slots__ = ("mode", "amount", "strict", "temporal")

    def __init__(self, mode, amount=1, strict=True, temporal="none"):
        if mode not in ("binary", "triplet"):
            raise InvalidArgument("negative sampling mode must be 'binary' or 'triplet', not %r" % (mode,))
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount > 0:
            raise InvalidArgument("negative sampling amount must be a number > 0, not %r" % (amount,))
        if mode == "triplet" and int(amount) != amount:
            raise InvalidArgument("triplet negative sampling needs an integer amount, not %r" % (amount,))
        if temporal not in ("none", "active", "historical"):
            raise InvalidArgument("temporal negatives must be 'none', 'active' or 'historical', not %r"
                                  % (temporal,))
        self.mode, self.amount, self.strict, self.temporal = mode, amount, bool(strict), temporal

    @classmethod
    def cast(cls, value):
        """None, a mode name, a dict of the arguments, or an object with mode/amount (PyG's class)."""
        if value is None or isinstance(value, NegativeSampling):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, dict):
            unknown = set(value) - {"mode", "amount", "strict", "temporal"}
            if unknown or "mode" not in value:
                raise InvalidArgument("neg_sampling dict takes mode, amount, strict and temporal, not %r"
                                      % (value,))
            return cls(**value)
        mode = getattr(value, "mode", None)
        if mode is not None:  # PyG's NegativeSampling (mode is an enum with .value)
            return cls(getattr(mode, "value", mode), getattr(value, "amount", 1))
        raise InvalidArgument("neg_sampling must be None, 'binary', 'triplet', a dict or a NegativeSampling, not %r"
                              % (value,))

    def __repr__(self):
        return "fanout.NegativeSampling(%r, amount=%r, strict=%r, temporal=%r)" % (self.mode, self.amount,
                                                                                  self.strict, self.temporal)


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
                "strict": True if neg is None else neg.strict,
                "temporal": "none" if neg is None else neg.temporal, "edge_type": edge_type}
        self.edge_label_index = edge_label_index
        self.edge_label = edge_label
        self.neg_sampling = neg
        super().__init__(cluster, None, num_neighbors, batch_size, _link=link, input_time=edge_label_time, **options)


class RandomWalkLoader:
    """Random walks from ``input_nodes`` in batches of ``batch_size`` seeds, for node2vec /
    DeepWalk training and PinSAGE neighborhoods: ``for batch in loader`` walks one epoch
    (reshuffled each epoch when ``shuffle``), yielding WalkBatch. Options as Cluster.random_walks.
    Batch b of epoch e uses request seed batch_request_seed(seed, e, b), as NodeLoader's: a run
    is reproducible, and the same through servers as in process."""

    def __init__(self, cluster, input_nodes, walk_length=5, batch_size=1024, *, num_walks=1, p=1.0, q=1.0,
                 restart_prob=0.0, weighted=False, top_k=0, visit_stride=1, shuffle=True, seed=0, drop_last=False,
                 max_trials=100, metapath=None):
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
        cluster.random_walks(self.input_nodes[:0], metapath=metapath, **self._options)
        if metapath is not None:  # as indices, the form the core takes
            self._options["metapath"] = [cluster.edge_type_index(e) for e in metapath]
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
