// fanout._core: the C++ client (Cluster, NodeLoader) for Python, over
// pybind11. Tensors leave as DLPack capsules (no copy; the capsule's deleter
// owns the ATen tensor), turned into torch tensors by fanout/__init__.py with
// torch.utils.dlpack.from_dlpack, so the extension needs no libtorch_python
// and works with the torch of the interpreter it was built for. Errors are
// fanout.errors exceptions named after the Status code. The GIL is released
// while waiting on servers.
#include <ATen/Context.h>
#include <ATen/DLConvertor.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "cache/gpu_feature_cache.h"
#include "client/cluster.h"
#include "client/loader.h"
#include "common/id_range.h"
#include "sampler/hetero.h"
#include "sampler/temporal.h"

namespace py = pybind11;

namespace fanout::python {
namespace {

// Raises the fanout.errors exception for a failed Status (the classes are
// named after Status::CodeName).
[[noreturn]] void Raise(const Status& st) {
  py::object cls =
      py::module_::import("fanout.errors").attr(st.ok() ? "Internal" : Status::CodeName(st.code()));
  PyErr_SetString(cls.ptr(), st.message().c_str());
  throw py::error_already_set();
}

void Check(const Status& st) {
  if (!st.ok()) Raise(st);
}

// Tensors handed to Python and not yet freed (tests check that a batch's
// memory goes when the batch does).
std::atomic<int64_t> g_live{0};
void (*g_aten_deleter)(DLManagedTensor*) = nullptr;
void CountedDeleter(DLManagedTensor* m) {
  --g_live;
  g_aten_deleter(m);
}

// An ATen tensor as a "dltensor" capsule; the tensor lives until the
// consumer's deleter runs (or the capsule dies unconsumed).
py::object ToCapsule(const at::Tensor& t) {
  if (!t.defined()) return py::none();
  DLManagedTensor* m = at::toDLPack(t);
  g_aten_deleter = m->deleter;  // ATen's one deleter
  m->deleter = CountedDeleter;
  ++g_live;
  return py::capsule(m, "dltensor", [](PyObject* cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {  // never consumed
      auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      if (mt != nullptr && mt->deleter != nullptr) mt->deleter(mt);
    }
  });
}

py::object Int64Capsule(std::vector<int64_t> v) {
  auto* owned = new std::vector<int64_t>(std::move(v));
  at::Tensor t = at::from_blob(
      owned->data(), {static_cast<int64_t>(owned->size())}, [owned](void*) { delete owned; },
      at::TensorOptions().dtype(at::kLong));
  return ToCapsule(t);
}

std::vector<int64_t> Int64List(const py::handle& seq, const char* what) {
  std::vector<int64_t> out;
  try {
    out = seq.cast<std::vector<int64_t>>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(what) + " must be a sequence of integers");
  }
  return out;
}

// Per-replica health and counters as a list of dicts.
py::list HealthList(const std::vector<client::ReplicaHealth>& all) {
  py::list out;
  for (const client::ReplicaHealth& h : all) {
    py::dict d;
    d["partition"] = h.partition;
    d["address"] = h.address;
    d["healthy"] = h.healthy;
    d["checks"] = h.checks;
    d["checks_failed"] = h.checks_failed;
    d["failures"] = h.failures;
    d["failovers_to"] = h.failovers_to;
    d["last_error"] = h.last_error;
    out.append(d);
  }
  return out;
}

class PyCluster {
 public:
  PyCluster(client::ClusterSpec spec, rpc::RpcOptions options)
      : spec_(std::move(spec)), options_(options) {
    Status st;
    {
      py::gil_scoped_release release;
      st = client::Cluster::Connect(spec_, options_, &cluster_);
    }
    Check(st);
  }

  static std::unique_ptr<PyCluster> FromPartitions(const py::list& partitions,
                                                   const std::string& data_plane,
                                                   int connect_timeout_ms, int call_timeout_ms,
                                                   const std::string& local_sampling,
                                                   int health_check_ms) {
    client::ClusterSpec spec;
    for (const py::handle& p : partitions) {
      if (py::isinstance<py::str>(p)) {
        spec.replicas.push_back({p.cast<std::string>()});
      } else {
        try {
          spec.replicas.push_back(p.cast<std::vector<std::string>>());
        } catch (const py::cast_error&) {
          throw py::type_error(
              "each partition must be an address 'host:port' or a list of replica addresses");
        }
      }
    }
    if (spec.replicas.empty()) Raise(Status::InvalidArgument("Cluster: no partitions given"));
    return std::make_unique<PyCluster>(
        std::move(spec),
        Options(data_plane, connect_timeout_ms, call_timeout_ms, local_sampling, health_check_ms));
  }

  static std::unique_ptr<PyCluster> FromFile(const std::string& path, const std::string& data_plane,
                                             int connect_timeout_ms, int call_timeout_ms,
                                             const std::string& local_sampling,
                                             int health_check_ms) {
    client::ClusterSpec spec;
    Check(client::ReadClusterFile(path, &spec));
    rpc::RpcOptions o =
        Options(data_plane, connect_timeout_ms, call_timeout_ms, local_sampling, health_check_ms);
    if (local_sampling != "auto") spec.has_local_sampling = false;  // an explicit argument wins
    if (data_plane != "auto") {  // an explicit argument wins over the file
      spec.has_data_plane = false;
    }
    return std::make_unique<PyCluster>(std::move(spec), o);
  }

  static rpc::RpcOptions Options(const std::string& data_plane, int connect_timeout_ms,
                                 int call_timeout_ms, const std::string& local_sampling,
                                 int health_check_ms) {
    rpc::RpcOptions o;
    if (local_sampling != "auto" && local_sampling != "off")
      Raise(Status::InvalidArgument("local_sampling must be \"auto\" or \"off\", not '" +
                                    local_sampling + "'"));
    o.local_sampling = local_sampling == "auto";
    Check(rpc::ParseDataPlaneMode(data_plane, &o.data_plane));
    if (connect_timeout_ms <= 0) Raise(Status::InvalidArgument("connect_timeout_ms must be > 0"));
    if (call_timeout_ms <= 0) Raise(Status::InvalidArgument("call_timeout_ms must be > 0"));
    o.connect_timeout_ms = connect_timeout_ms;
    o.call_timeout_ms = call_timeout_ms;
    if (health_check_ms < 0)
      Raise(Status::InvalidArgument("health_check_ms must be >= 0 (0 = no health checks)"));
    o.health_check_ms = health_check_ms;
    return o;
  }

  // The same servers with another data-plane choice.
  std::unique_ptr<PyCluster> WithDataPlane(const std::string& data_plane) const {
    rpc::RpcOptions o = options_;
    Check(rpc::ParseDataPlaneMode(data_plane, &o.data_plane));
    client::ClusterSpec spec = spec_;
    spec.has_data_plane = false;
    return std::make_unique<PyCluster>(std::move(spec), o);
  }

  py::object SplitNodes(const std::string& name) {
    int split = name == "train" ? 1 : name == "val" ? 2 : name == "test" ? 3 : 0;
    if (split == 0)
      Raise(Status::InvalidArgument("unknown split '" + name + "' (use 'train', 'val' or 'test')"));
    std::vector<int64_t> ids;
    Status st;
    {
      py::gil_scoped_release release;
      std::unique_ptr<client::Session> s;
      st = cluster_->NewSession(&s);
      if (st.ok()) st = s->SplitNodes(split, &ids);
    }
    Check(st);
    return Int64Capsule(std::move(ids));
  }

  std::vector<std::string> Addresses() const {
    std::vector<std::string> out;
    for (int p = 0; p < cluster_->num_parts(); ++p) out.push_back(cluster_->address(p));
    return out;
  }

  py::list Health() const { return HealthList(cluster_->Health()); }

  // Heterogeneous datasets (empty lists for homogeneous ones).
  std::vector<std::string> NodeTypes() const {
    const sampler::HeteroSchema* h = cluster_->hetero();
    return h ? h->node_types : std::vector<std::string>{};
  }
  py::list EdgeTypes() const {
    py::list out;
    if (const sampler::HeteroSchema* h = cluster_->hetero())
      for (const sampler::EdgeType& t : h->edge_types)
        out.append(py::make_tuple(h->node_types[t.src], t.rel, h->node_types[t.dst]));
    return out;
  }
  std::vector<int64_t> NodeTypeFeatureDims() const {
    const sampler::HeteroSchema* h = cluster_->hetero();
    return h ? h->feature_dims : std::vector<int64_t>{};
  }
  // Every node of a type, ascending global ids.
  py::object NodesOfType(const std::string& name) const {
    const sampler::HeteroSchema* h = cluster_->hetero();
    if (h == nullptr) Raise(Status::InvalidArgument("the dataset has no node types"));
    const int t = h->FindNodeType(name);
    if (t < 0) Raise(Status::InvalidArgument("node type '" + name + "' is not in the dataset"));
    std::vector<int64_t> ids;
    const sampler::NodeRanges ranges =
        h->NodesOfType(t);  // (a temporary's ranges() would dangle in the loop)
    for (const auto& [b, e] : ranges.ranges())
      for (int64_t v = b; v < e; ++v) ids.push_back(v);
    return Int64Capsule(std::move(ids));
  }
  // The node type (index into node_types) of each id.
  py::object NodeTypeOf(const py::object& ids_obj) const {
    const sampler::HeteroSchema* h = cluster_->hetero();
    if (h == nullptr) Raise(Status::InvalidArgument("the dataset has no node types"));
    std::vector<int64_t> ids = Int64List(ids_obj, "ids");
    Check(CheckIdsInRange(ids, 0, cluster_->num_nodes()));
    for (int64_t& v : ids) v = h->NodeTypeOf(v);
    return Int64Capsule(std::move(ids));
  }
  // HeteroSchema::FindEdgeType: the index of "src,rel,dst" or an unambiguous "rel".
  int EdgeTypeIndex(const std::string& name) const {
    const sampler::HeteroSchema* h = cluster_->hetero();
    if (h == nullptr)
      Raise(Status::InvalidArgument("the dataset has no edge types (it is not heterogeneous)"));
    int e = -1;
    Check(h->FindEdgeType(name, &e));
    return e;
  }
  // The dataset's own ids of global ids (per type in heterogeneous datasets).
  py::object OriginalIds(const py::object& ids_obj) const {
    std::vector<int64_t> ids = Int64List(ids_obj, "ids"), out(ids.size());
    Status st;
    {
      py::gil_scoped_release release;
      std::unique_ptr<client::Session> s;
      st = cluster_->NewSession(&s);
      if (st.ok()) st = s->OriginalIds(ids, out.data());
    }
    Check(st);
    return Int64Capsule(std::move(out));
  }

  // Feature rows (float32 [n, feature_dim]) of `ids`, through this cluster's
  // call session (fanout.pyg's FeatureStore).
  py::object Features(const py::object& ids_obj) {
    std::vector<int64_t> ids = Int64List(ids_obj, "ids");
    Check(CheckIdsInRange(ids, 0, cluster_->num_nodes()));
    const int64_t d = cluster_->feature_dim();
    auto* owned = new std::vector<float>(ids.size() * static_cast<size_t>(d));
    Status st = WithSession([&](client::Session* s) { return s->Features(ids, owned->data()); });
    if (!st.ok()) {
      delete owned;
      Raise(st);
    }
    at::Tensor t = at::from_blob(
        owned->data(), {static_cast<int64_t>(ids.size()), d}, [owned](void*) { delete owned; },
        at::TensorOptions().dtype(at::kFloat));
    return ToCapsule(t);
  }
  // Labels (int64, -1 = unknown) of `ids`.
  py::object Labels(const py::object& ids_obj) {
    std::vector<int64_t> ids = Int64List(ids_obj, "ids"), out(ids.size());
    Check(CheckIdsInRange(ids, 0, cluster_->num_nodes()));
    Check(WithSession([&](client::Session* s) { return s->Labels(ids, out.data()); }));
    return Int64Capsule(std::move(out));
  }
  // Multi-hop neighbor sampling of `seeds` (Session::Sample, request seed
  // `seed`): (n_id, row, col, e_id or None, num_sampled_nodes,
  // num_sampled_edges), rows/cols local into n_id (row = the sampled
  // neighbor, col = the node it was drawn for), seeds first.
  py::tuple Sample(const py::object& seeds_obj, const std::vector<int64_t>& fanouts, uint64_t seed,
                   bool replace, bool edge_ids) {
    std::vector<int64_t> seeds = Int64List(seeds_obj, "seeds");
    Check(CheckIdsInRange(seeds, 0, cluster_->num_nodes()));
    if (fanouts.empty()) Raise(Status::InvalidArgument("num_neighbors must name at least one hop"));
    sampler::MultiHopOptions mo;
    mo.fanouts = fanouts;
    mo.sampling.replace = replace;
    mo.sampling.with_edge_ids = edge_ids;
    sampler::SampledSubgraph sg;
    Check(WithSession([&](client::Session* s) { return s->Sample(seeds, seed, mo, &sg); }));
    auto vec = [](const PodVector<int64_t>& v) { return std::vector<int64_t>(v.begin(), v.end()); };
    return py::make_tuple(Int64Capsule(vec(sg.n_id)), Int64Capsule(vec(sg.row)),
                          Int64Capsule(vec(sg.col)),
                          edge_ids ? Int64Capsule(vec(sg.edge_id)) : py::none(),
                          sg.num_sampled_nodes, sg.num_sampled_edges);
  }

  const std::shared_ptr<client::Cluster>& get() const { return cluster_; }

  // In a process forked from the one that connected: the cluster's threads
  // did not come along and its UCX state belongs to the parent, so it must
  // be neither used nor destroyed here (its destructor would join a thread
  // this process does not have). It is leaked, and this object is not to be
  // used afterwards (fanout.Cluster._forget_after_fork; fanout.pyg connects
  // again in the child).
  void ForgetAfterFork() {
    new std::shared_ptr<client::Cluster>(std::move(cluster_));
    new std::unique_ptr<client::Session>(std::move(session_));
  }

 private:
  // Runs fn on this cluster's one call session (made on first use), without
  // the GIL; calls from several threads take turns.
  template <typename Fn>
  Status WithSession(Fn&& fn) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(session_mu_);
    if (!session_) FANOUT_RETURN_IF_ERROR(cluster_->NewSession(&session_));
    return fn(session_.get());
  }

  client::ClusterSpec spec_;
  rpc::RpcOptions options_;
  std::shared_ptr<client::Cluster> cluster_;
  std::mutex session_mu_;
  std::unique_ptr<client::Session> session_;  // GUARDED_BY(session_mu_)
};

// A GPU feature cache holding the highest-degree nodes' rows (a fraction of
// the graph) on `device`.
Status MakeGpuCache(const PyCluster& cluster, int device, double fraction,
                    std::shared_ptr<cache::GpuFeatureCache>* out) {
  py::gil_scoped_release release;
  const std::shared_ptr<client::Cluster>& c = cluster.get();
  std::unique_ptr<client::Session> s;
  FANOUT_RETURN_IF_ERROR(c->NewSession(&s));
  const int64_t n = c->num_nodes(), d = c->feature_dim();
  std::vector<int64_t> all(n), deg(n);
  std::iota(all.begin(), all.end(), 0);
  FANOUT_RETURN_IF_ERROR(s->Degrees(all, deg.data()));
  cache::CacheOptions co;
  co.num_nodes = n;
  co.feature_dim = d;
  co.capacity_rows = std::max<int64_t>(1, static_cast<int64_t>(fraction * static_cast<double>(n)));
  std::partial_sort(
      all.begin(), all.begin() + co.capacity_rows, all.end(),
      [&](int64_t a, int64_t b) { return deg[a] > deg[b] || (deg[a] == deg[b] && a < b); });
  std::unique_ptr<cache::GpuFeatureCache> gpu;
  FANOUT_RETURN_IF_ERROR(cache::GpuFeatureCache::Create(co, device, &gpu));
  std::vector<int64_t> hot(all.begin(), all.begin() + co.capacity_rows);
  std::vector<float> rows(hot.size() * static_cast<size_t>(d));
  FANOUT_RETURN_IF_ERROR(s->Features(hot, rows.data()));
  FANOUT_RETURN_IF_ERROR(gpu->Insert(hot, rows.data(), nullptr));
  *out = std::move(gpu);
  return Status::OK();
}

class PyLoader {
 public:
  PyLoader(const PyCluster& cluster, const py::object& input_nodes, const py::object& num_neighbors,
           int64_t batch_size, bool shuffle, bool replace, bool weighted, int num_workers,
           int prefetch, uint64_t seed, bool features, bool labels, bool edge_ids,
           bool original_ids, bool drop_last, int rank, int world_size, const std::string& device,
           double gpu_cache_fraction, bool subgraph, const py::object& link,
           const py::object& input_time, const std::string& temporal_strategy,
           const py::object& type_fanouts, int link_edge_type) {
    client::LoaderOptions o;
    o.subgraph = subgraph;
    o.link_edge_type = link_edge_type;
    if (!type_fanouts.is_none())
      for (const py::handle& f : type_fanouts)
        o.edge_type_fanouts.push_back(Int64List(f, "num_neighbors"));
    if (!input_time.is_none()) o.input_time = Int64List(input_time, "input_time");
    Check(sampler::ParseTemporalStrategy(temporal_strategy, &o.temporal_strategy));
    int cuda_device = -1;
    if (device.rfind("cuda", 0) == 0) {
      cuda_device = 0;
      if (device.size() > 4) {
        if (device[4] != ':' || device.size() == 5 ||
            device.find_first_not_of("0123456789", 5) != std::string::npos)
          Raise(
              Status::InvalidArgument("device '" + device + "' is not 'cpu', 'cuda' or 'cuda:N'"));
        cuda_device = std::stoi(device.substr(5));
      }
    } else if (device != "cpu") {
      Raise(Status::InvalidArgument("device '" + device + "' is not 'cpu', 'cuda' or 'cuda:N'"));
    }
    if (cuda_device >= 0) {
      if (!features)
        Raise(Status::InvalidArgument("device='" + device + "' needs features=True (it places x)"));
      if (!at::hasCUDA())
        Raise(Status::NotSupported("device='" + device +
                                   "' needs a CUDA-enabled PyTorch/LibTorch; the one this "
                                   "package was built with has no CUDA (Debian's is CPU-only)"));
      if (!(gpu_cache_fraction > 0 && gpu_cache_fraction <= 1))
        Raise(Status::InvalidArgument("gpu_cache_fraction must be in (0, 1], got " +
                                      std::to_string(gpu_cache_fraction)));
      Check(MakeGpuCache(cluster, cuda_device, gpu_cache_fraction, &o.gpu_cache));
    }
    o.fanouts = Int64List(num_neighbors, "num_neighbors");
    o.batch_size = batch_size;
    o.shuffle = shuffle;
    o.replace = replace;
    o.weighted = weighted;
    o.num_workers = num_workers;
    o.prefetch = prefetch;
    o.seed = seed;
    o.features = features;
    o.labels = labels;
    o.edge_ids = edge_ids;
    o.original_ids = original_ids;
    o.drop_last = drop_last;
    o.rank = rank;
    o.world_size = world_size;
    if (o.fanouts.empty())
      Raise(Status::InvalidArgument("num_neighbors must name at least one hop"));
    try {
      if (link.is_none()) {
        std::vector<int64_t> seeds = Int64List(input_nodes, "input_nodes");
        loader_ =
            std::make_unique<client::NodeLoader>(cluster.get(), std::move(seeds), std::move(o));
      } else {
        // A LinkLoader: link = {"src", "dst", "label" (or None), "mode", "amount", "strict"}.
        py::dict d = link.cast<py::dict>();
        client::LinkSeeds seeds;
        seeds.src = Int64List(d["src"], "edge_label_index[0]");
        seeds.dst = Int64List(d["dst"], "edge_label_index[1]");
        if (!d["label"].is_none()) seeds.label = Int64List(d["label"], "edge_label");
        Check(sampler::ParseNegativeMode(d["mode"].cast<std::string>(), &o.negative.mode));
        o.negative.amount = d["amount"].cast<double>();
        o.negative.strict = d["strict"].cast<bool>();
        loader_ =
            std::make_unique<client::LinkLoader>(cluster.get(), std::move(seeds), std::move(o));
      }
    } catch (const std::invalid_argument& e) {
      Raise(Status::InvalidArgument(e.what()));
    }
  }

  // The next batch as a dict of capsules and lists, or None at the end of
  // the epoch (the next call starts the following one).
  py::object Next() {
    client::MiniBatch b;
    bool more = false;
    try {
      py::gil_scoped_release release;
      more = loader_->Next(&b);
    } catch (const client::LoaderError& e) {
      Raise(e.status());
    } catch (const std::exception& e) {
      Raise(Status::Internal(e.what()));
    }
    if (!more) return py::none();
    py::dict d;
    d["x_data_ptr"] = b.x.defined() ? reinterpret_cast<intptr_t>(b.x.data_ptr()) : 0;
    d["n_id"] = ToCapsule(b.n_id);
    d["x"] = ToCapsule(b.x);
    d["y"] = ToCapsule(b.y);
    d["edge_index"] = ToCapsule(b.edge_index);
    d["e_id"] = ToCapsule(b.edge_id);
    d["original_id"] = ToCapsule(b.original_id);
    d["input_id"] = ToCapsule(b.input_id);
    d["batch"] = ToCapsule(b.batch);
    d["seed_time"] = ToCapsule(b.seed_time);
    d["node_type"] = ToCapsule(b.node_type);
    d["edge_type"] = ToCapsule(b.edge_type);
    d["edge_label_index"] = ToCapsule(b.edge_label_index);
    d["edge_label"] = ToCapsule(b.edge_label);
    d["src_index"] = ToCapsule(b.src_index);
    d["dst_pos_index"] = ToCapsule(b.dst_pos_index);
    d["dst_neg_index"] = ToCapsule(b.dst_neg_index);
    d["num_sampled_nodes"] = b.num_sampled_nodes;
    d["num_sampled_edges"] = b.num_sampled_edges;
    d["batch_size"] = b.batch_size;
    d["epoch"] = b.epoch;
    d["index"] = b.index;
    return std::move(d);
  }

  void SetEpoch(int64_t e) {
    if (e < 0) Raise(Status::InvalidArgument("epoch must be >= 0, got " + std::to_string(e)));
    try {
      py::gil_scoped_release release;
      loader_->SetEpoch(e);
    } catch (const client::LoaderError& e) {
      Raise(e.status());
    }
  }

  py::object EpochSeeds(int64_t e) { return Int64Capsule(loader_->EpochSeeds(e)); }

  // Benchmarks: takes batches in C++ (no Python per batch) for `seconds`,
  // epoch after epoch; returns how many.
  int64_t RunFor(double seconds) {
    int64_t n = 0;
    try {
      py::gil_scoped_release release;
      client::MiniBatch b;
      auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      while (std::chrono::steady_clock::now() < end)
        if (loader_->Next(&b)) ++n;
    } catch (const client::LoaderError& e) {
      Raise(e.status());
    }
    return n;
  }

  py::dict Stats() const {
    client::LoaderStats s = loader_->stats();
    py::dict d;
    d["batches"] = s.batches;
    d["sampled_edges"] = s.sampled_edges;
    d["sampled_nodes"] = s.sampled_nodes;
    d["feature_bytes"] = s.feature_bytes;
    d["seconds"] = s.seconds;
    d["network_wait_s"] = s.network_wait_s;
    d["consumer_wait_s"] = s.consumer_wait_s;
    d["thrift_bytes"] = s.thrift_bytes;
    d["ucx_bytes"] = s.ucx_bytes;
    d["health_abandons"] = s.health_abandons;
    d["local_bytes"] = s.local_bytes;
    d["local_edges"] = s.local_edges;
    d["local_rows"] = s.local_rows;
    d["staged_bytes"] = s.staged_bytes;
    d["fallbacks"] = s.fallbacks;
    d["retries"] = s.retries;
    d["failovers"] = s.failovers;
    d["servers"] = HealthList(s.servers);
    d["batches_per_s"] = s.batches_per_s();
    return d;
  }

  int64_t Len() const { return loader_->num_batches(); }
  int Rank() const { return loader_->rank(); }
  int WorldSize() const { return loader_->world_size(); }

 private:
  std::unique_ptr<client::NodeLoader> loader_;
};

}  // namespace
}  // namespace fanout::python

PYBIND11_MODULE(_core, m) {
  using namespace fanout::python;  // NOLINT
  m.doc() = "Fanout's C++ client (Cluster, NodeLoader); use the fanout package, not this module.";
  m.def(
      "live_tensors", [] { return g_live.load(); }, "Tensors handed to Python and not yet freed");
  py::class_<PyCluster>(m, "Cluster")
      .def_static("from_partitions", &PyCluster::FromPartitions, py::arg("partitions"),
                  py::arg("data_plane"), py::arg("connect_timeout_ms"), py::arg("call_timeout_ms"),
                  py::arg("local_sampling") = "auto", py::arg("health_check_ms") = 1000)
      .def_static("from_file", &PyCluster::FromFile, py::arg("path"), py::arg("data_plane"),
                  py::arg("connect_timeout_ms"), py::arg("call_timeout_ms"),
                  py::arg("local_sampling") = "auto", py::arg("health_check_ms") = 1000)
      .def_property_readonly("local_partitions",
                             [](const PyCluster& c) {
                               std::vector<bool> out;
                               for (int p = 0; p < c.get()->num_parts(); ++p)
                                 out.push_back(c.get()->local(p) != nullptr);
                               return out;
                             })
      .def("with_data_plane", &PyCluster::WithDataPlane)
      .def_property_readonly("num_nodes", [](const PyCluster& c) { return c.get()->num_nodes(); })
      .def_property_readonly("feature_dim",
                             [](const PyCluster& c) { return c.get()->feature_dim(); })
      .def_property_readonly("num_classes",
                             [](const PyCluster& c) { return c.get()->num_classes(); })
      .def_property_readonly("num_partitions",
                             [](const PyCluster& c) { return c.get()->num_parts(); })
      .def_property_readonly("addresses", &PyCluster::Addresses)
      .def_property_readonly(
          "data_plane",
          [](const PyCluster& c) {
            return std::string(fanout::rpc::DataPlaneModeName(c.get()->data_plane()));
          })
      .def_property_readonly("description",
                             [](const PyCluster& c) { return c.get()->description(); })
      .def("split_nodes", &PyCluster::SplitNodes)
      .def("health", &PyCluster::Health)
      .def_property_readonly("node_types", &PyCluster::NodeTypes)
      .def_property_readonly("edge_types", &PyCluster::EdgeTypes)
      .def_property_readonly("node_type_feature_dims", &PyCluster::NodeTypeFeatureDims)
      .def("nodes_of_type", &PyCluster::NodesOfType)
      .def("node_type_of", &PyCluster::NodeTypeOf)
      .def("original_ids", &PyCluster::OriginalIds)
      .def("edge_type_index", &PyCluster::EdgeTypeIndex)
      .def("forget_after_fork", &PyCluster::ForgetAfterFork)
      .def("features", &PyCluster::Features, py::arg("ids"))
      .def("labels", &PyCluster::Labels, py::arg("ids"))
      .def("sample", &PyCluster::Sample, py::arg("seeds"), py::arg("fanouts"), py::arg("seed"),
           py::arg("replace") = false, py::arg("edge_ids") = true);
  py::class_<PyLoader>(m, "NodeLoader")
      .def(py::init<const PyCluster&, const py::object&, const py::object&, int64_t, bool, bool,
                    bool, int, int, uint64_t, bool, bool, bool, bool, bool, int, int,
                    const std::string&, double, bool, const py::object&, const py::object&,
                    const std::string&, const py::object&, int>(),
           py::arg("cluster"), py::arg("input_nodes"), py::arg("num_neighbors"),
           py::arg("batch_size"), py::arg("shuffle"), py::arg("replace"), py::arg("weighted"),
           py::arg("num_workers"), py::arg("prefetch"), py::arg("seed"), py::arg("features"),
           py::arg("labels"), py::arg("edge_ids"), py::arg("original_ids"), py::arg("drop_last"),
           py::arg("rank"), py::arg("world_size"), py::arg("device"), py::arg("gpu_cache_fraction"),
           py::arg("subgraph") = false, py::arg("link") = py::none(),
           py::arg("input_time") = py::none(), py::arg("temporal_strategy") = "uniform",
           py::arg("type_fanouts") = py::none(), py::arg("link_edge_type") = -1)
      .def("next", &PyLoader::Next)
      .def("set_epoch", &PyLoader::SetEpoch)
      .def("epoch_seeds", &PyLoader::EpochSeeds)
      .def("run_for", &PyLoader::RunFor)
      .def("stats", &PyLoader::Stats)
      .def("__len__", &PyLoader::Len)
      .def_property_readonly("rank", &PyLoader::Rank)
      .def_property_readonly("world_size", &PyLoader::WorldSize);
}
