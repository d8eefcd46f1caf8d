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
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "cache/gpu_feature_cache.h"
#include "client/cluster.h"
#include "client/loader.h"
#include "client/online.h"
#include "client/walks.h"
#include "common/id_range.h"
#include "common/random.h"
#include "common/thread_pool.h"
#include "common/version.h"
#include "sampler/hetero.h"
#include "sampler/temporal.h"

namespace py = pybind11;

namespace fanout::python {
namespace {

// A failed Status on its way to Python: the one exception translator
// (registered in the module) raises the fanout.errors class named after its
// code, so every binding - constructors and iteration included - raises the
// same classes.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status st) : st_(std::move(st)) {}
  const char* what() const noexcept override { return st_.message().c_str(); }
  const Status& status() const { return st_; }

 private:
  Status st_;
};

[[noreturn]] void Raise(const Status& st) {
  throw StatusError(st.ok() ? Status::Internal("an error without a message") : st);
}

void Check(const Status& st) {
  if (!st.ok()) Raise(st);
}

// Sets the Python error for `st` (GIL held: called by the translator).
void SetPythonError(const Status& st) {
  py::object cls = py::module_::import("fanout.errors").attr(Status::CodeName(st.code()));
  PyErr_SetString(cls.ptr(), st.message().c_str());
}

void TranslateErrors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const StatusError& e) {
    SetPythonError(e.status());
  } catch (const client::LoaderError& e) {
    SetPythonError(e.status());
  } catch (const std::invalid_argument& e) {
    SetPythonError(Status::InvalidArgument(e.what()));
  }
}

// Tensors handed to Python and not yet freed (tests check that a batch's
// memory goes when the batch does).
std::atomic<int64_t> g_live{0};

// What a capsule hands over: ATen's DLPack tensor, wrapped so that its
// consumer's delete is counted (each capsule keeps its own inner deleter:
// nothing global is written per tensor).
struct CountedTensor {
  DLManagedTensor outer;
  DLManagedTensor* inner;
};
void DeleteCounted(DLManagedTensor* m) {
  auto* c = static_cast<CountedTensor*>(m->manager_ctx);
  --g_live;
  if (c->inner->deleter != nullptr) c->inner->deleter(c->inner);
  delete c;
}

// An ATen tensor as a "dltensor" capsule; the tensor lives until the
// consumer's deleter runs (or the capsule dies unconsumed).
py::object ToCapsule(const at::Tensor& t) {
  if (!t.defined()) return py::none();
  auto* c = new CountedTensor;
  c->inner = at::toDLPack(t);
  c->outer.dl_tensor = c->inner->dl_tensor;
  c->outer.manager_ctx = c;
  c->outer.deleter = DeleteCounted;
  ++g_live;
  return py::capsule(&c->outer, "dltensor", [](PyObject* cap) {
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

// Integer ids from Python: a 1-D int64 buffer (a numpy array, or a CPU
// tensor's .numpy(): one memcpy, no Python int per id) or a sequence of ints.
std::vector<int64_t> Int64List(const py::handle& obj, const char* what) {
  if (PyObject_CheckBuffer(obj.ptr()) && !py::isinstance<py::str>(obj) &&
      !py::isinstance<py::bytes>(obj)) {
    py::buffer_info info = py::reinterpret_borrow<py::buffer>(obj).request();
    if (info.ndim != 1)
      Raise(Status::InvalidArgument(std::string(what) + " must be one-dimensional, not " +
                                    std::to_string(info.ndim) + "-dimensional"));
    if (info.itemsize != 8 || (info.format != "l" && info.format != "q"))
      Raise(Status::InvalidArgument(std::string(what) + " must hold int64 ids (buffer format '" +
                                    info.format + "')"));
    std::vector<int64_t> out(static_cast<size_t>(info.shape[0]));
    const char* base = static_cast<const char*>(info.ptr);
    if (info.strides[0] == 8) {
      if (!out.empty()) std::memcpy(out.data(), base, out.size() * 8);
    } else {
      for (size_t i = 0; i < out.size(); ++i)
        std::memcpy(&out[i], base + static_cast<ptrdiff_t>(i) * info.strides[0], 8);
    }
    return out;
  }
  try {
    return obj.cast<std::vector<int64_t>>();
  } catch (const py::cast_error&) {
    Raise(Status::InvalidArgument(std::string(what) + " must be a sequence of integers"));
  }
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

// Per partition and replica in use: its path (client::PartitionPath) as dicts.
py::list PathList(const std::vector<client::PartitionPath>& all) {
  py::list out;
  for (const client::PartitionPath& p : all) {
    py::dict d;
    d["partition"] = p.partition;
    d["replica"] = p.replica;
    d["path"] = p.path;
    d["sampling"] = p.sampling;
    d["sessions"] = p.sessions;
    out.append(d);
  }
  return out;
}

py::dict BatchDict(const client::MiniBatch& b);  // below

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
                                                   int health_check_ms,
                                                   const std::string& auth_token) {
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
    rpc::RpcOptions o =
        Options(data_plane, connect_timeout_ms, call_timeout_ms, local_sampling, health_check_ms);
    o.auth_token = auth_token;
    return std::make_unique<PyCluster>(std::move(spec), o);
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
  py::list Paths() const { return PathList(cluster_->Paths()); }

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
    std::vector<int64_t> ids = NodeIds(ids_obj);
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
    std::vector<int64_t> ids = NodeIds(ids_obj);
    at::Tensor out =
        at::empty({static_cast<int64_t>(ids.size()), cluster_->feature_dim()}, at::kFloat);
    Check(GatherFeatures(ids, out.data_ptr<float>()));
    return ToCapsule(out);
  }
  // Feature rows of `ids` written into `out`, a writable C-contiguous float32
  // buffer of [len(ids), feature_dim] (e.g. a shared-memory tensor's
  // .numpy(): fanout.pyg's feature store in a DataLoader worker, so the rows
  // reach the trainer without a copy).
  void FeaturesInto(const py::object& ids_obj, const py::object& out_obj) {
    std::vector<int64_t> ids = NodeIds(ids_obj);
    const int64_t d = cluster_->feature_dim();
    py::buffer_info out = py::reinterpret_borrow<py::buffer>(out_obj).request(/*writable=*/true);
    const bool shape_ok =
        out.ndim == 2 && out.shape[0] == static_cast<py::ssize_t>(ids.size()) && out.shape[1] == d;
    if (out.format != "f" || out.itemsize != 4 || !shape_ok ||
        (ids.size() > 0 && d > 0 && (out.strides[1] != 4 || out.strides[0] != 4 * d)))
      Raise(Status::InvalidArgument("features_into: out must be a C-contiguous float32 [" +
                                    std::to_string(ids.size()) + ", " + std::to_string(d) +
                                    "] buffer"));
    Check(GatherFeatures(ids, static_cast<float*>(out.ptr)));
  }
  // Labels (int64, -1 = unknown) of `ids`.
  py::object Labels(const py::object& ids_obj) {
    std::vector<int64_t> ids = NodeIds(ids_obj);
    at::Tensor out = at::empty({static_cast<int64_t>(ids.size())}, at::kLong);
    int64_t* labels = out.data_ptr<int64_t>();
    Check(WithSessionsSplit(ids.size(), [&](client::Session* s, size_t b, size_t e) {
      return s->Labels(ArrayView<const int64_t>(ids.data() + b, e - b), labels + b);
    }));
    return ToCapsule(out);
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
    new std::vector<std::unique_ptr<client::Session>>(std::move(sessions_));
    new std::unique_ptr<ThreadPool>(std::move(pool_));  // its threads are the parent's
  }

  // Node ids from Python, checked against the graph.
  std::vector<int64_t> NodeIds(const py::object& ids_obj) const {
    std::vector<int64_t> ids = Int64List(ids_obj, "ids");
    Check(CheckIdsInRange(ids, 0, cluster_->num_nodes()));
    return ids;
  }
  // The feature rows of checked ids into rows[len(ids) * feature_dim], large
  // gathers split over the call sessions (WithSessionsSplit).
  Status GatherFeatures(const std::vector<int64_t>& ids, float* rows) {
    const size_t d = static_cast<size_t>(cluster_->feature_dim());
    return WithSessionsSplit(ids.size(), [&](client::Session* s, size_t b, size_t e) {
      return s->Features(ArrayView<const int64_t>(ids.data() + b, e - b), rows + b * d);
    });
  }

  // Runs fn on this cluster's first call session (made on first use),
  // without the GIL; calls from several threads take turns.
  template <typename Fn>
  Status WithSession(Fn&& fn) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(session_mu_);
    FANOUT_RETURN_IF_ERROR(EnsureSessions(1));
    return fn(sessions_[0].get());
  }

  // One online query (client::OnlineSampler, made on first use with
  // `workers` workers): the batch as BatchDict gives it.
  py::dict Query(const py::object& seeds, const std::vector<int64_t>& num_neighbors, bool features,
                 bool labels, bool edge_ids, int deadline_ms, uint64_t request_seed, int workers) {
    client::QueryOptions o;
    o.num_neighbors = num_neighbors;
    o.features = features;
    o.labels = labels;
    o.edge_ids = edge_ids;
    o.deadline_ms = deadline_ms;
    o.request_seed = request_seed;
    std::vector<int64_t> ids = Int64List(seeds, "seeds");
    client::MiniBatch b;
    Status st;
    {
      py::gil_scoped_release release;
      {
        std::lock_guard<std::mutex> lock(online_mu_);
        if (!online_) st = client::OnlineSampler::Create(cluster_, workers, &online_);
      }
      if (st.ok()) st = online_->Query(ids, o, &b);
    }
    Check(st);
    return BatchDict(b);
  }

  // Runs fn(session, begin, end) over [0, n): a large n in contiguous
  // chunks, one per core (at most kMaxSplit), on as many call sessions at
  // once, as the loaders' worker threads use every core; the first error
  // wins. Without the GIL; calls from several threads take turns.
  template <typename Fn>
  Status WithSessionsSplit(size_t n, Fn&& fn) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(session_mu_);
    const size_t cores = std::max(1u, std::thread::hardware_concurrency());
    const size_t k = n >= kSplitMin ? std::min(kMaxSplit, cores) : 1;
    FANOUT_RETURN_IF_ERROR(EnsureSessions(k));
    std::vector<Status> status(k);
    std::vector<std::thread> threads;
    for (size_t i = 1; i < k; ++i)
      threads.emplace_back(
          [&, i] { status[i] = fn(sessions_[i].get(), n * i / k, n * (i + 1) / k); });
    status[0] = fn(sessions_[0].get(), 0, n / k);
    for (std::thread& t : threads) t.join();
    for (Status& st : status)
      if (!st.ok()) return st;
    return Status::OK();
  }

 private:
  static constexpr size_t kSplitMin = 8192;  // ids below this: one session
  static constexpr size_t kMaxSplit = 4;

  Status EnsureSessions(size_t k) {  // REQUIRES: session_mu_ held
    while (sessions_.size() < k) {
      std::unique_ptr<client::Session> s;
      FANOUT_RETURN_IF_ERROR(cluster_->NewSession(&s));
      if (sessions_.empty()) {
        // The first session samples alone (sample_batch, one call at a time):
        // its large local hops use every core, as a server's do.
        const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        if (cores > 1 && !pool_) pool_ = std::make_unique<ThreadPool>(std::min(cores, 8) - 1);
        s->UseThreadPool(pool_.get());
      }
      sessions_.push_back(std::move(s));
    }
    return Status::OK();
  }

  client::ClusterSpec spec_;
  rpc::RpcOptions options_;
  std::shared_ptr<client::Cluster> cluster_;
  std::mutex online_mu_;
  std::unique_ptr<client::OnlineSampler> online_;  // GUARDED_BY(online_mu_) (made once)
  std::mutex session_mu_;
  std::unique_ptr<ThreadPool>
      pool_;  // GUARDED_BY(session_mu_); outlives sessions_ (declared first)
  std::vector<std::unique_ptr<client::Session>> sessions_;  // GUARDED_BY(session_mu_)
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

// A batch as a dict of capsules and lists (fanout/__init__.py's Batch).
py::dict BatchDict(const client::MiniBatch& b) {
  py::dict d;
  d["n_id"] = ToCapsule(b.n_id);
  d["x"] = ToCapsule(b.x);
  d["y"] = ToCapsule(b.y);
  d["edge_index"] = ToCapsule(b.edge_index);
  d["e_id"] = ToCapsule(b.edge_id);
  d["edge_weight"] = ToCapsule(b.edge_weight);
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
  return d;
}

// A heterogeneous batch split by type (client::SplitByType, the one split):
// per node type lists n_id, x, y, index, original_id, batch_size; per edge
// type edge_index, e_id; and type_index (fanout/__init__.py's HeteroBatch).
py::dict SplitDict(const client::MiniBatch& b, const sampler::HeteroSchema& schema) {
  client::HeteroBatch h = client::SplitByType(b, schema);
  auto caps = [](const std::vector<at::Tensor>& v) {
    py::list out;
    for (const at::Tensor& t : v) out.append(ToCapsule(t));
    return out;
  };
  py::dict d;
  d["n_id"] = caps(h.n_id);
  d["x"] = caps(h.x);
  d["y"] = caps(h.y);
  d["index"] = caps(h.index);
  d["original_id"] = caps(h.original_id);
  d["batch_size"] = h.batch_size;
  d["edge_index"] = caps(h.edge_index);
  d["e_id"] = caps(h.edge_id);
  d["type_index"] = ToCapsule(h.type_index);
  return d;
}

// "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N.
int ParseDevice(const std::string& device) {
  if (device == "cpu") return -1;
  if (device.rfind("cuda", 0) == 0) {
    if (device.size() == 4) return 0;
    if (device[4] == ':' && device.size() > 5 &&
        device.find_first_not_of("0123456789", 5) == std::string::npos)
      return std::stoi(device.substr(5));
  }
  Raise(Status::InvalidArgument("device '" + device + "' is not 'cpu', 'cuda' or 'cuda:N'"));
}

// client::LoaderOptions from keyword arguments, each checked by name and
// type (fanout/__init__.py passes them by name: no positional order to get
// wrong). Unknown names are refused.
client::LoaderOptions ParseLoaderOptions(const PyCluster& cluster, const py::dict& kw) {
  client::LoaderOptions o;
  std::string device = "cpu";
  double gpu_cache_fraction = 0.1;
  // The options that are True or False.
  const std::pair<const char*, bool*> flags[] = {
      {"shuffle", &o.shuffle},           {"replace", &o.replace},     {"weighted", &o.weighted},
      {"features", &o.features},         {"labels", &o.labels},       {"edge_ids", &o.edge_ids},
      {"original_ids", &o.original_ids}, {"drop_last", &o.drop_last}, {"subgraph", &o.subgraph},
      {"neg_strict", &o.negative.strict}};
  // sampler="neighbor" (default) or "labor".
  for (const auto& [key_obj, v] : kw) {
    const std::string key = py::str(key_obj);
    auto as_bool = [&]() {
      if (!py::isinstance<py::bool_>(v))
        Raise(Status::InvalidArgument("loader option " + key + " must be True or False"));
      return v.cast<bool>();
    };
    auto as_int = [&]() -> int64_t {
      if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
        Raise(Status::InvalidArgument("loader option " + key + " must be an integer"));
      return v.cast<int64_t>();
    };
    auto flag = std::find_if(std::begin(flags), std::end(flags),
                             [&](const auto& f) { return key == f.first; });
    if (flag != std::end(flags)) {
      *flag->second = as_bool();
    } else if (key == "num_neighbors") {
      o.fanouts = Int64List(v, "num_neighbors");
    } else if (key == "batch_size") {
      o.batch_size = as_int();
    } else if (key == "num_workers") {
      o.num_workers = static_cast<int>(as_int());
    } else if (key == "prefetch") {
      o.prefetch = static_cast<int>(as_int());
    } else if (key == "seed") {
      o.seed = static_cast<uint64_t>(as_int());
    } else if (key == "rank") {
      o.rank = v.is_none() ? -1 : static_cast<int>(as_int());
    } else if (key == "world_size") {
      o.world_size = v.is_none() ? -1 : static_cast<int>(as_int());
    } else if (key == "device") {
      device = py::str(v);
    } else if (key == "x_dtype") {
      Check(ParseFeatureDType(py::str(v), &o.x_dtype));
    } else if (key == "gpu_cache_fraction") {
      gpu_cache_fraction = v.cast<double>();
    } else if (key == "input_time") {
      if (!v.is_none()) o.input_time = Int64List(v, "input_time");
    } else if (key == "sampler") {
      const std::string name = py::str(v);
      if (name != "neighbor" && name != "labor" && name != "pinsage")
        Raise(Status::InvalidArgument("sampler '" + name +
                                      "' is not 'neighbor', 'labor' or 'pinsage' (random walks: "
                                      "fanout.RandomWalkLoader)"));
      o.labor = name == "labor";
      o.pinsage = name == "pinsage";
    } else if (key == "num_walks") {
      o.walk.num_walks = as_int();
    } else if (key == "walk_length") {
      o.walk.walk_length = as_int();
    } else if (key == "visit_stride") {
      o.walk.visit_stride = as_int();
    } else if (key == "restart_prob") {
      o.walk.restart_prob = v.cast<double>();
    } else if (key == "temporal_strategy") {
      Check(sampler::ParseTemporalStrategy(py::str(v), &o.temporal_strategy));
    } else if (key == "type_fanouts") {
      if (!v.is_none())
        for (const py::handle& f : v) o.edge_type_fanouts.push_back(Int64List(f, "num_neighbors"));
    } else if (key == "link_edge_type") {
      o.link_edge_type = v.is_none() ? -1 : static_cast<int>(as_int());
    } else if (key == "neg_mode") {
      Check(sampler::ParseNegativeMode(py::str(v), &o.negative.mode));
    } else if (key == "neg_amount") {
      o.negative.amount = v.cast<double>();
    } else {
      Raise(Status::InvalidArgument("unknown loader option '" + key + "'"));
    }
  }
  if (o.fanouts.empty() && o.edge_type_fanouts.empty())  // typed: hops from the per-type lists
    Raise(Status::InvalidArgument("num_neighbors must name at least one hop"));
  const int cuda_device = ParseDevice(device);
  if (cuda_device >= 0) {
    if (!o.features)
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
  return o;
}

// A LinkLoader's seed edges: {"src", "dst", "label" (or None)}.
client::LinkSeeds ParseLinkSeeds(const py::dict& d) {
  client::LinkSeeds seeds;
  seeds.src = Int64List(d["src"], "edge_label_index[0]");
  seeds.dst = Int64List(d["dst"], "edge_label_index[1]");
  if (d.contains("label") && !d["label"].is_none())
    seeds.label = Int64List(d["label"], "edge_label");
  return seeds;
}

// One batch for seeds the caller chose (client::SampleBatch through the
// cluster's call session): fanout.pyg's sampler. `link`: None, or the seed
// edges as ParseLinkSeeds takes them.
py::dict SampleBatchOf(PyCluster& cluster, const py::dict& options, const py::object& nodes,
                       const py::object& link, const py::object& times, uint64_t request_seed) {
  client::LoaderOptions o = ParseLoaderOptions(cluster, options);
  client::BatchSeeds seeds;
  if (link.is_none()) {
    seeds.nodes = Int64List(nodes, "seeds");
  } else {
    seeds.links = std::make_shared<const client::LinkSeeds>(ParseLinkSeeds(link.cast<py::dict>()));
  }
  if (!times.is_none()) seeds.times = Int64List(times, "seed times");
  client::MiniBatch b;
  const client::Source& source = *cluster.get();
  Check(cluster.WithSession([&](client::Session* s) {
    return client::SampleBatch(source, s, seeds, request_seed, o, &b);
  }));
  return BatchDict(b);
}

// Random walks from `seeds` (client::RandomWalks through the cluster's call
// session). options: walk_length, num_walks, p, q, restart_prob, weighted,
// top_k, max_trials, each checked by name. Returns {"walks": int64
// [n * num_walks, walk_length + 1], "steps": int, and with top_k > 0
// "top_offsets", "top_nodes", "top_counts"}.
py::dict RandomWalksOf(PyCluster& cluster, const py::object& seeds_obj, const py::dict& options,
                       uint64_t request_seed) {
  client::WalkOptions o;
  for (const auto& [key_obj, v] : options) {
    const std::string key = py::str(key_obj);
    auto as_int = [&]() -> int64_t {
      if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
        Raise(Status::InvalidArgument("walk option " + key + " must be an integer"));
      return v.cast<int64_t>();
    };
    auto as_float = [&]() -> double {
      if (py::isinstance<py::bool_>(v) ||
          !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)))
        Raise(Status::InvalidArgument("walk option " + key + " must be a number"));
      return v.cast<double>();
    };
    if (key == "walk_length") {
      o.walk_length = as_int();
    } else if (key == "num_walks") {
      o.num_walks = as_int();
    } else if (key == "top_k") {
      o.top_k = as_int();
    } else if (key == "visit_stride") {
      o.visit_stride = as_int();
    } else if (key == "max_trials") {
      o.max_trials = static_cast<int>(std::clamp<int64_t>(as_int(), -1, 1 << 20));
    } else if (key == "p") {
      o.p = as_float();
    } else if (key == "q") {
      o.q = as_float();
    } else if (key == "restart_prob") {
      o.restart_prob = as_float();
    } else if (key == "weighted") {
      if (!py::isinstance<py::bool_>(v))
        Raise(Status::InvalidArgument("walk option weighted must be True or False"));
      o.weighted = v.cast<bool>();
    } else {
      Raise(Status::InvalidArgument("unknown walk option '" + key + "'"));
    }
  }
  Check(client::CheckWalkOptions(o));
  std::vector<int64_t> seeds = Int64List(seeds_obj, "seeds");
  client::WalkResult r;
  Check(cluster.WithSession(
      [&](client::Session* s) { return client::RandomWalks(*s, seeds, request_seed, o, &r); }));
  const int64_t rows = static_cast<int64_t>(seeds.size()) * o.num_walks;
  at::Tensor walks = at::empty({rows, o.walk_length + 1}, at::kLong);
  std::copy(r.walks.begin(), r.walks.end(), walks.data_ptr<int64_t>());
  py::dict d;
  d["walks"] = ToCapsule(walks);
  d["steps"] = r.steps;
  if (o.top_k > 0) {
    d["top_offsets"] = Int64Capsule(std::move(r.offsets));
    d["top_nodes"] = Int64Capsule(std::move(r.nodes));
    d["top_counts"] = Int64Capsule(std::move(r.counts));
  }
  return d;
}

class PyLoader {
 public:
  // options: ParseLoaderOptions' names; link: None (a NodeLoader over
  // input_nodes) or ParseLinkSeeds' dict (a LinkLoader).
  // options may also name "data_plane" and "local_sampling": the loader's
  // sessions reach the servers that way, on this same cluster
  // (Cluster::WithSessionMode).
  PyLoader(const PyCluster& cluster, const py::object& input_nodes, const py::dict& options,
           const py::object& link) {
    py::dict rest = options.attr("copy")();
    client::SessionMode mode;
    if (rest.contains("data_plane")) {
      Check(rpc::ParseDataPlaneMode(py::str(rest["data_plane"]), &mode.data_plane));
      PyDict_DelItemString(rest.ptr(), "data_plane");
    }
    if (rest.contains("local_sampling")) {
      const std::string v = py::str(rest["local_sampling"]);
      if (v != "auto" && v != "off")
        Raise(Status::InvalidArgument("local_sampling must be \"auto\" or \"off\", not \"" + v +
                                      "\""));
      mode.local_sampling = v == "auto" ? 1 : 0;
      PyDict_DelItemString(rest.ptr(), "local_sampling");
    }
    client::LoaderOptions o = ParseLoaderOptions(cluster, rest);
    schema_ = cluster.get()->hetero();  // the cluster lives as long as the loader (its source)
    std::shared_ptr<client::Source> source = cluster.get()->WithSessionMode(mode);
    if (link.is_none()) {
      std::vector<int64_t> seeds = Int64List(input_nodes, "input_nodes");
      loader_ = std::make_unique<client::NodeLoader>(source, std::move(seeds), std::move(o));
    } else {
      loader_ = std::make_unique<client::LinkLoader>(source, ParseLinkSeeds(link.cast<py::dict>()),
                                                     std::move(o));
    }
  }

  ~PyLoader() { Close(); }

  // Stops the workers (they may be waiting on servers, up to the call
  // deadline) without holding the GIL, so other Python threads run.
  void Close() {
    if (!loader_) return;
    std::unique_ptr<client::NodeLoader> l = std::move(loader_);
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      l.reset();
    } else {
      l.reset();
    }
  }

  client::NodeLoader& loader() {
    if (!loader_) Raise(Status::InvalidArgument("the loader is closed"));
    return *loader_;
  }
  const client::NodeLoader& loader() const {
    if (!loader_) Raise(Status::InvalidArgument("the loader is closed"));
    return *loader_;
  }

  // The next batch as a dict of capsules and lists, or None at the end of
  // the epoch (the next call starts the following one).
  py::object Next() {
    client::MiniBatch b;
    bool more = false;
    client::NodeLoader& l = loader();
    try {
      py::gil_scoped_release release;
      more = l.Next(&b);
    } catch (const client::LoaderError& e) {
      Raise(e.status());
    } catch (const std::exception& e) {
      Raise(Status::Internal(e.what()));
    }
    if (!more) return py::none();
    py::dict d = BatchDict(b);
    if (b.node_type.defined() && schema_ != nullptr) d["hetero"] = SplitDict(b, *schema_);
    return std::move(d);
  }

  void SetEpoch(int64_t e) {
    if (e < 0) Raise(Status::InvalidArgument("epoch must be >= 0, got " + std::to_string(e)));
    client::NodeLoader& l = loader();
    py::gil_scoped_release release;
    l.SetEpoch(e);  // a LoaderError reaches Python through the translator
  }

  py::object EpochSeeds(int64_t e) { return Int64Capsule(loader().EpochSeeds(e)); }

  // Benchmarks: takes batches in C++ (no Python per batch) for `seconds`,
  // epoch after epoch; returns how many.
  int64_t RunFor(double seconds) {
    int64_t n = 0;
    client::NodeLoader& l = loader();
    py::gil_scoped_release release;
    client::MiniBatch b;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end)
      if (l.Next(&b)) ++n;
    return n;
  }

  py::dict Stats() const {
    client::LoaderStats s = loader().stats();
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
    d["paths"] = PathList(s.paths);
    d["batches_per_s"] = s.batches_per_s();
    return d;
  }

  int64_t Len() const { return loader().num_batches(); }
  int Rank() const { return loader().rank(); }
  int WorldSize() const { return loader().world_size(); }

 private:
  std::unique_ptr<client::NodeLoader> loader_;
  const sampler::HeteroSchema* schema_ = nullptr;  // heterogeneous datasets: split batches by it
};

}  // namespace
}  // namespace fanout::python

PYBIND11_MODULE(_core, m) {
  using namespace fanout::python;  // NOLINT
  m.doc() = "Fanout's C++ client (Cluster, NodeLoader); use the fanout package, not this module.";
  py::register_exception_translator(&TranslateErrors);
  m.def(
      "live_tensors", [] { return g_live.load(); }, "Tensors handed to Python and not yet freed");
  m.def(
      "capsule_data_ptr",
      [](const py::capsule& cap) {
        if (!PyCapsule_IsValid(cap.ptr(), "dltensor"))
          Raise(fanout::Status::InvalidArgument("not an unconsumed dltensor capsule"));
        auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
        return reinterpret_cast<intptr_t>(static_cast<char*>(m->dl_tensor.data) +
                                          m->dl_tensor.byte_offset);
      },
      "The address of an unconsumed capsule's tensor data (tests of zero-copy)");
  m.def(
      "batch_request_seed",
      [](uint64_t seed, uint64_t epoch, uint64_t batch) {
        return fanout::NodeKey(seed, epoch, batch);
      },
      py::arg("seed"), py::arg("epoch"), py::arg("batch"),
      "The request seed NodeLoader/LinkLoader use for batch `batch` of epoch `epoch` (world size "
      "1)");
  m.attr("__version__") = fanout::VersionString();
  m.attr("release") = std::string(fanout::Release());
  m.attr("build_commit") = std::string(fanout::BuildCommit());
  py::class_<PyCluster>(m, "Cluster")
      .def_static("from_partitions", &PyCluster::FromPartitions, py::arg("partitions"),
                  py::arg("data_plane"), py::arg("connect_timeout_ms"), py::arg("call_timeout_ms"),
                  py::arg("local_sampling") = "auto", py::arg("health_check_ms") = 1000,
                  py::arg("auth_token") = "")
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
            return std::string(fanout::rpc::DataPlaneModeName(c.get()->requested_data_plane()));
          })
      .def_property_readonly("ucx_available",
                             [](const PyCluster& c) {
                               return c.get()->data_plane() != fanout::rpc::DataPlaneMode::kTcp;
                             })
      .def_property_readonly("local_sampling",
                             [](const PyCluster& c) { return c.get()->local_sampling(); })
      .def("paths", &PyCluster::Paths)
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
      .def("features_into", &PyCluster::FeaturesInto, py::arg("ids"), py::arg("out"))
      .def("labels", &PyCluster::Labels, py::arg("ids"))
      .def("query", &PyCluster::Query, py::arg("seeds"), py::arg("num_neighbors"),
           py::arg("features"), py::arg("labels"), py::arg("edge_ids"), py::arg("deadline_ms"),
           py::arg("request_seed"), py::arg("workers"))
      .def("sample_batch", &SampleBatchOf, py::arg("options"), py::arg("nodes"), py::arg("link"),
           py::arg("times"), py::arg("request_seed"))
      .def("random_walks", &RandomWalksOf, py::arg("seeds"), py::arg("options"),
           py::arg("request_seed"));
  py::class_<PyLoader>(m, "NodeLoader")
      .def(py::init<const PyCluster&, const py::object&, const py::dict&, const py::object&>(),
           py::arg("cluster"), py::arg("input_nodes"), py::arg("options"),
           py::arg("link") = py::none())
      .def("close", &PyLoader::Close)
      .def("next", &PyLoader::Next)
      .def("set_epoch", &PyLoader::SetEpoch)
      .def("epoch_seeds", &PyLoader::EpochSeeds)
      .def("run_for", &PyLoader::RunFor)
      .def("stats", &PyLoader::Stats)
      .def("__len__", &PyLoader::Len)
      .def_property_readonly("rank", &PyLoader::Rank)
      .def_property_readonly("world_size", &PyLoader::WorldSize);
}
