"""What the fanout modules share: torch and the compiled core, ids on their way to C++, and the
DLPack capsules C++ hands back turned into tensors (torch.utils.dlpack: no copy, any torch version)."""
import torch
from torch.utils.dlpack import from_dlpack as _from_dlpack

from . import _core  # noqa: F401 (re-exported to the other modules)
from .errors import InvalidArgument, NotSupported  # noqa: F401

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
