// fanout._core's Cluster: a client::Cluster with the calls the Python
// package makes on it (lookups, splits, types, online queries), each without
// the GIL while it waits on servers.
#ifndef FANOUT_PYTHON_CORE_CLUSTER_H_
#define FANOUT_PYTHON_CORE_CLUSTER_H_

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache/gpu_feature_cache.h"
#include "client/cluster.h"
#include "client/online.h"
#include "client/update_writer.h"
#include "common/id_range.h"
#include "common/thread_pool.h"
#include "python/core/common.h"

namespace fanout::python {

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

  // The dataset's names of ids (string ids; "" for integer-id types).
  py::list OriginalNames(const py::object& ids_obj) const {
    std::vector<int64_t> ids = Int64List(ids_obj, "ids");
    std::vector<std::string> names;
    Status st;
    {
      py::gil_scoped_release release;
      st = cluster_->OriginalNames(ArrayView<const int64_t>(ids), &names);
    }
    Check(st);
    py::list out;
    for (const std::string& n : names) out.append(py::str(n));
    return out;
  }

  // Feature rows (float32 [n, feature_dim]) of `ids`, through this cluster's
  // call session (fanout.pyg's FeatureStore).
  py::object Features(const py::object& ids_obj) {
    std::vector<int64_t> ids = NodeIds(ids_obj);
    client::Array out = client::Array::Empty(
        client::DType::kFloat32, {static_cast<int64_t>(ids.size()), cluster_->feature_dim()});
    Check(GatherFeatures(ids, out.ptr<float>()));
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
    client::Array out =
        client::Array::Empty(client::DType::kInt64, {static_cast<int64_t>(ids.size())});
    int64_t* labels = out.ptr<int64_t>();
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
                 bool labels, bool edge_ids, int deadline_ms, uint64_t request_seed, int workers,
                 bool ppr, double ppr_alpha, double ppr_eps) {
    client::QueryOptions o;
    o.ppr = ppr;
    o.ppr_options.alpha = ppr_alpha;
    o.ppr_options.eps = ppr_eps;
    o.num_neighbors = num_neighbors;
    o.features = features;
    o.labels = labels;
    o.edge_ids = edge_ids;
    o.deadline_ms = deadline_ms;
    o.request_seed = request_seed;
    std::vector<int64_t> ids = Int64List(seeds, "seeds");
    client::Batch b;
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

 public:
  // The cluster's update writer (connected on first use; live partitions).
  Status Writer(client::UpdateWriter** out) {
    std::lock_guard<std::mutex> lock(writer_mu_);
    if (!writer_) FANOUT_RETURN_IF_ERROR(client::UpdateWriter::Connect(spec_, options_, &writer_));
    *out = writer_.get();
    return Status::OK();
  }

 private:
  client::ClusterSpec spec_;
  rpc::RpcOptions options_;
  std::shared_ptr<client::Cluster> cluster_;
  std::mutex writer_mu_;
  std::unique_ptr<client::UpdateWriter> writer_;  // GUARDED_BY(writer_mu_)
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
                    std::shared_ptr<cache::GpuFeatureCache>* out);

// One batch for seeds the caller chose (client::SampleBatch through the
// cluster's call session): fanout.pyg's sampler. `link`: None, or the seed
// edges as ParseLinkSeeds takes them.
py::dict SampleBatchOf(PyCluster& cluster, const py::dict& options, const py::object& nodes,
                       const py::object& link, const py::object& times, uint64_t request_seed);

// Random walks from `seeds` (client::RandomWalks through the cluster's call
// session). options: walk_length, num_walks, p, q, restart_prob, weighted,
// top_k, max_trials, each checked by name. Returns {"walks": int64
// [n * num_walks, walk_length + 1], "steps": int, and with top_k > 0
// "top_offsets", "top_nodes", "top_counts"}.
py::dict RandomWalksOf(PyCluster& cluster, const py::object& seeds_obj, const py::dict& options,
                       uint64_t request_seed);

// Personalized PageRank top-k lists of `seeds` (client::PersonalizedPageRank,
// on one of the cluster's sessions). Returns {"offsets", "nodes": int64,
// "scores": float32, "pushes", "rounds", "entries_sent", "converged"}.
py::dict PprOf(PyCluster& cluster, const py::object& seeds_obj, int64_t top_k, double alpha,
               double eps, int64_t max_rounds, const std::vector<int64_t>& type_budgets);

// Graph updates to the cluster's live partitions (client::UpdateWriter):
// `updates` holds add_src/add_dst (+ add_time, add_type), remove_src/
// remove_dst (+ remove_type), label_nodes/labels, feature_nodes and
// feature_rows (bytes, one row each in the dataset's dtype). Returns each
// partition's version after it (-1: untouched).
std::vector<int64_t> UpdateOf(PyCluster& cluster, const py::dict& updates, bool undirected);
// Cluster.compact's one partition: {partition, compacted, version, edges,
// seconds}, or {partition, compacted: False, reason} where there was nothing
// to fold or the generation before the last is still kept; other refusals
// raise.
py::dict CompactOf(PyCluster& cluster, int partition);

}  // namespace fanout::python

#endif  // FANOUT_PYTHON_CORE_CLUSTER_H_
