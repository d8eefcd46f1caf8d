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
import os
import subprocess
import sys
import urllib.error
import urllib.request

from . import _build_info


def _built_for(e, what):
    """An ImportError that says which interpreter this package was built for, and which one runs it."""
    here = "%s (Python %d.%d)" % (sys.executable, *sys.version_info[:2])
    return ImportError("fanout: cannot import %s (%s). This fanout package was built for Python %s (%s); it is "
                       "running under %s. Install the fanout wheel built for this Python (pip install .), or run "
                       "the one you have with that interpreter." % (what, e, _build_info.PYTHON_VERSION,
                                                                    _build_info.PYTHON, here))


try:
    import torch  # noqa: F401 (any version from 1.13: the core hands tensors over as DLPack)
except ImportError as _e:
    raise ImportError("fanout needs PyTorch (any version from 1.13; the compiled core does not link it): "
                      "pip install torch, or apt-get install python3-torch (%s)" % _e) from _e

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
from .tables import partition_pyg, partition_tables, write_pyg_tables

__all__ = [
    "Cluster", "NodeLoader", "SubgraphLoader", "LinkLoader", "RandomWalkLoader", "WalkBatch", "NegativeSampling",
    "Batch", "LocalCluster", "partition", "partition_tables", "partition_pyg", "write_pyg_tables", "stats", "Error", "InvalidArgument",
    "NotFound", "Corruption", "IOError", "NotSupported", "Unavailable", "DeadlineExceeded",
    "ResourceExhausted", "Aborted", "Unauthenticated", "Internal",
]

from ._common import (_check_data_plane, _check_local_sampling, _have_pyg, _ids, _ids_buffer,  # noqa: F401,E402
                      _tensor, _times, _type_fanouts, _typed_ids)
from .batches import Batch, HeteroBatch, TypeStore  # noqa: E402
from .cluster import Cluster  # noqa: E402
from .loaders import LinkLoader, NegativeSampling, NodeLoader, RandomWalkLoader, SubgraphLoader, WalkBatch  # noqa: E402


def stats(address, timeout_s=10.0, token=None):
    """A server's admin ``/stats`` (JSON) as a dict; ``address`` is its admin "host:port". ``token``: the
    server's admin credential (``--admin-token-file``, else its ``--auth-token-file`` token), where it has one."""
    url = address if address.startswith("http") else "http://%s/stats" % address
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        if e.code == 401:
            raise Unauthenticated("admin endpoint %s: %s" % (address, e.read().decode(errors="replace").strip()))
        raise Unavailable("admin endpoint %s: HTTP %d" % (address, e.code))
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
    # Parquet tables are decoded by pyarrow in a Python child of the tool: this interpreter's, unless
    # FANOUT_PYTHON names another.
    env = dict(os.environ)
    env.setdefault("FANOUT_PYTHON", sys.executable)
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        raise InvalidArgument("fanout-partition failed (exit %d): %s" % (r.returncode, (r.stderr or r.stdout).strip()))
    return str(output)
