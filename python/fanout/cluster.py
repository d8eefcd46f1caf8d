"""fanout.Cluster: the servers of one dataset, as a training or serving client sees them."""
import torch

from ._common import (_DATA_PLANES, _check_data_plane, _check_local_sampling, _core, _have_pyg,  # noqa: F401
                      _ids, _ids_buffer, _tensor)
from .batches import Batch, WalkBatch
from .errors import InvalidArgument, NotSupported


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
        _check_local_sampling(local_sampling)
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

    def original_names(self, ids):
        """The dataset's own names of global ids, where its ids were strings (tables with "id_type": "string",
        LINQS's alphanumeric ids): a list of str, "" for a node of an integer-id type. NotFound where the dataset
        keeps no names (its ids are integers: original_ids)."""
        return self._c.original_names(_ids_buffer(_ids(ids, self)))

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
                        edge_ids=False, deadline_ms=None, workers=4, pyg=True, sampler="neighbor",
                        ppr_alpha=0.15, ppr_eps=5e-6):
        """One online query: the k-hop subgraph of ``seeds`` (a handful: 1 to 4096 global ids) with
        ``num_neighbors`` per hop and the nodes' features, ready for a model's forward pass: a PyG ``Data``
        (``x``, ``edge_index``, ``n_id``, ``batch_size``; ``y``, ``e_id`` where asked) when PyG is installed and
        ``pyg``, else a ``fanout.Batch``. One round trip per hop (each to every partition at once) and one for
        the features; partitions whose server shares this host cost none. The same seeds and ``seed`` give the
        batch a NodeLoader with these options builds. ``deadline_ms``: DeadlineExceeded once it has passed
        (the query goes on in the background, bounded by the cluster's ``call_timeout_ms``: give a serving
        cluster one near the deadline). ``workers``: queries in flight at once from this cluster (threads
        calling at the same time; set by the first call). Served ahead of training work where the servers
        give this client's tenant class ``online`` (docs/TENANTS.md). ``sampler="ppr"``: each seed's
        ``num_neighbors[0]`` nodes of highest approximate personalized PageRank instead (``ppr_alpha``,
        ``ppr_eps``; edge weights their scores; the pushes run on the servers), as NodeLoader's."""
        if sampler not in ("neighbor", "ppr"):
            raise InvalidArgument("sampler must be 'neighbor' or 'ppr', not %r" % (sampler,))
        ids = torch.as_tensor(seeds).flatten()
        if isinstance(num_neighbors, int) or not list(num_neighbors):
            raise InvalidArgument("num_neighbors must be a list of fanouts per hop, e.g. [10, 10]")
        if self.is_hetero():
            raise NotSupported("sample_subgraph of heterogeneous datasets: use fanout.pyg.NeighborSampler")
        if deadline_ms is not None and deadline_ms <= 0:
            raise InvalidArgument("deadline_ms must be positive (or None), not %r" % (deadline_ms,))
        batch = Batch(self._c.query(_ids_buffer(ids), [int(f) for f in num_neighbors], bool(features),
                                    bool(labels), bool(edge_ids), int(deadline_ms or 0), int(seed),
                                    int(workers), sampler == "ppr", float(ppr_alpha), float(ppr_eps)))
        return batch.to_pyg() if pyg and _have_pyg() else batch

    def random_walks(self, seeds, walk_length=5, *, num_walks=1, p=1.0, q=1.0, restart_prob=0.0, weighted=False,
                     top_k=0, visit_stride=1, seed=0, max_trials=100, metapath=None):
        """Random walks from ``seeds`` through the servers (client/walks.h; docs/SAMPLERS.md), as a
        WalkBatch: ``walks`` int64 [len(seeds) * num_walks, walk_length + 1] (walk j of seed i is
        row i * num_walks + j; column 0 the seed; -1 past a dead end). ``p``/``q``: node2vec's return
        and in-out parameters; ``restart_prob``: jump back to the start before a step;
        ``weighted``: steps by edge weight; ``top_k`` > 0: each seed's most visited nodes
        (PinSAGE neighborhoods) in ``top_nodes``/``top_counts``, counting the nodes at every
        ``visit_stride``-th step (2 on a user-item graph: items only; restarts then happen only
        before odd steps). ``metapath``: a list of edge types (("src", "rel", "dst") or "rel"), one
        per step, repeated: step t moves only along edges of type metapath[(t - 1) % len] in the
        node's stored row (metapath2vec; stored direction: with "in" storage a step along
        (s, r, d) goes from a d node to an s node, so MovieLens' ["rev_rates", "rates"] walks user,
        movie, user, ...). Every step is a pure function of
        (walk, step, ``seed``): the same walks in process and through any number of servers."""
        ids = _ids(seeds, self)
        options = dict(walk_length=walk_length, num_walks=num_walks, p=float(p), q=float(q),
                       restart_prob=float(restart_prob), weighted=weighted, top_k=top_k,
                       visit_stride=visit_stride, max_trials=max_trials)
        if metapath is not None:
            if isinstance(metapath, (str, tuple)):
                raise InvalidArgument("metapath must be a list of edge types, not %r" % (metapath,))
            options["metapath"] = [self.edge_type_index(e) for e in metapath]
        d = self._c.random_walks(_ids_buffer(ids), options, int(seed))
        return WalkBatch(d, ids, num_walks)

    def ppr(self, seeds, top_k=32, *, alpha=0.15, eps=5e-6, max_rounds=1000, type_budgets=None):
        """Approximate personalized PageRank neighborhoods of ``seeds`` by forward push (client/ppr.h;
        docs/SAMPLERS.md): ``(ptr, nodes, scores)`` with seed i's ``top_k`` nodes of highest score (itself
        left out; by score, then id) at ``nodes[ptr[i]:ptr[i + 1]]`` and float32 ``scores`` within
        ``eps * degree`` of exact PPR with teleport ``alpha``. Each push round sends the pushing nodes'
        residuals (all seeds together) to the servers that own them, which push on their rows and send back
        the mass for each neighbor; the same lists through any number of servers and in process. As a
        batch for a model: sample_subgraph(..., sampler="ppr"); for training, NodeLoader(..., sampler="ppr").
        ``type_budgets`` ({node_type: n}, heterogeneous datasets): at most n nodes of each type in a seed's
        list (types left out: none)."""
        ids = _ids(seeds, self)
        budgets = self._type_budgets(type_budgets)
        for name, v in (("top_k", top_k), ("max_rounds", max_rounds)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidArgument("%s must be an integer, not %r" % (name, v))
        d = self._c.ppr(_ids_buffer(ids), top_k, float(alpha), float(eps), max_rounds, budgets)
        return _tensor(d["offsets"]), _tensor(d["nodes"]), _tensor(d["scores"])

    def _type_budgets(self, budgets):
        """{node_type: n} as one budget per node type (0 for types left out); [] for None."""
        if budgets is None:
            return []
        if not isinstance(budgets, dict):
            raise InvalidArgument("type_budgets must be a dict {node_type: count}, not %r" % (budgets,))
        if not self.node_types:
            raise InvalidArgument("type_budgets need a heterogeneous dataset (this one has no node types)")
        unknown = [t for t in budgets if t not in self.node_types]
        if unknown:
            raise InvalidArgument("type_budgets name %s, not node types of the dataset %s" % (unknown, self.node_types))
        return [int(budgets.get(t, 0)) for t in self.node_types]

    def update(self, *, add_edges=None, remove_edges=None, edge_times=None, edge_types=None, labels=None,
               features=None, undirected=False):
        """Graph updates to live partitions (servers run with ``--live-dir``; docs/DESIGN.md, "Live
        updates"). ``add_edges`` / ``remove_edges``: int64 [2, E] (row 0 sources, row 1
        destinations, in the graph's terms: each edge is stored where the dataset's direction
        keeps it, both ways with ``undirected``); ``edge_times`` / ``edge_types``: one per added edge;
        ``labels``: {node: label} or (nodes, labels); ``features``: (nodes, float32 [n, feature_dim]).
        Each partition's part is one atomic batch, durable before this returns (across partitions
        not yet atomic). Returns the version each partition is readable at (-1: untouched); a
        loader's batches name the versions they read (``Batch.versions``)."""
        u = {}

        def pair(name, v):
            t = torch.as_tensor(v, dtype=torch.long)
            if t.dim() != 2 or t.shape[0] != 2:
                raise InvalidArgument("%s must be [2, E] (sources, destinations), not %s" % (name, tuple(t.shape)))
            return _ids_buffer(t[0].contiguous()), _ids_buffer(t[1].contiguous())

        if add_edges is not None:
            u["add_src"], u["add_dst"] = pair("add_edges", add_edges)
            if edge_times is not None:
                u["add_time"] = _ids_buffer(torch.as_tensor(edge_times, dtype=torch.long).contiguous())
            if edge_types is not None:
                u["add_type"] = _ids_buffer(torch.as_tensor(edge_types, dtype=torch.long).contiguous())
        if remove_edges is not None:
            u["remove_src"], u["remove_dst"] = pair("remove_edges", remove_edges)
        if labels is not None:
            nodes, values = (list(labels.keys()), list(labels.values())) if isinstance(labels, dict) else labels
            u["label_nodes"] = _ids_buffer(torch.as_tensor(nodes, dtype=torch.long).contiguous())
            u["labels"] = _ids_buffer(torch.as_tensor(values, dtype=torch.long).contiguous())
        if features is not None:
            nodes, rows = features
            rows = torch.as_tensor(rows, dtype=torch.float32).contiguous()
            u["feature_nodes"] = _ids_buffer(torch.as_tensor(nodes, dtype=torch.long).contiguous())
            u["feature_rows"] = rows.numpy().tobytes()
        return list(self._c.update(u, bool(undirected)))

    def compact(self, partitions=None):
        """Folds each live partition's delta into a new base now, as ``fanout-ctl compact`` does
        (servers also compact in the background past ``--live-compact-ratio`` or
        ``--live-compact-mib``; docs/DESIGN.md, "Live updates"). ``partitions``: the ones to compact
        (default: all). Needs a tenant with write permission. Returns one dict per partition:
        ``compacted`` True with ``version`` (the version the new base holds), ``edges`` and
        ``seconds``; or ``compacted`` False with the ``reason`` where there was nothing to fold
        (the base holds the newest version already: ``version`` is the base's) or the generation
        before the last compaction is still kept for older reads. Other refusals raise."""
        if partitions is None:
            partitions = range(self.num_partitions)
        out = []
        for p in partitions:
            p = int(p)
            if not 0 <= p < self.num_partitions:
                raise InvalidArgument("partition %d of %d" % (p, self.num_partitions))
            out.append(self._c.compact(p))
        return out

    def __repr__(self):
        return "fanout.Cluster(%s)" % self._c.description
