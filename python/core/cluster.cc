#include "python/core/cluster.h"

#include <numeric>

#include "client/ppr.h"
#include "client/walks.h"
#include "python/core/loader.h"

namespace fanout::python {

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
  client::Batch b;
  const client::Source& source = *cluster.get();
  Check(cluster.WithSession([&](client::Session* s) {
    return client::SampleBatch(source, s, seeds, request_seed, o, &b);
  }));
  return BatchDict(b);
}

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
    } else if (key == "metapath") {  // edge type indices (the Python side resolves names)
      for (int64_t e : Int64List(v, "metapath"))
        o.metapath.push_back(static_cast<int32_t>(std::clamp<int64_t>(e, -1, INT32_MAX)));
    } else {
      Raise(Status::InvalidArgument("unknown walk option '" + key + "'"));
    }
  }
  Check(client::CheckWalkOptions(o));
  Check(client::CheckMetapath(cluster.get()->hetero(), o));
  std::vector<int64_t> seeds = Int64List(seeds_obj, "seeds");
  client::WalkResult r;
  Check(cluster.WithSession(
      [&](client::Session* s) { return client::RandomWalks(*s, seeds, request_seed, o, &r); }));
  const int64_t rows = static_cast<int64_t>(seeds.size()) * o.num_walks;
  client::Array walks = client::Array::Empty(client::DType::kInt64, {rows, o.walk_length + 1});
  std::copy(r.walks.begin(), r.walks.end(), walks.ptr<int64_t>());
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

std::vector<int64_t> UpdateOf(PyCluster& cluster, const py::dict& u, bool undirected) {
  client::GraphUpdates g;
  auto list = [&](const char* key) {
    return u.contains(key) && !u[key].is_none() ? Int64List(u[key], key) : std::vector<int64_t>();
  };
  auto edges = [&](const char* src_key, const char* dst_key, const char* time_key,
                   const char* type_key, std::vector<live::EdgeUpdate>* out, int32_t type0) {
    const std::vector<int64_t> src = list(src_key), dst = list(dst_key), t = list(time_key),
                               ty = list(type_key);
    if (src.size() != dst.size() || (!t.empty() && t.size() != src.size()) ||
        (!ty.empty() && ty.size() != src.size()))
      Raise(Status::InvalidArgument(std::string(src_key) + ", " + dst_key +
                                    " and their times / types differ in length"));
    for (size_t i = 0; i < src.size(); ++i) {
      live::EdgeUpdate e;
      e.src = src[i];
      e.dst = dst[i];
      e.time = t.empty() ? 0 : t[i];
      e.type = ty.empty() ? type0 : static_cast<int32_t>(ty[i]);
      out->push_back(e);
    }
  };
  edges("add_src", "add_dst", "add_time", "add_type", &g.add_edges, 0);
  edges("remove_src", "remove_dst", "", "remove_type", &g.remove_edges, -1);
  g.label_nodes = list("label_nodes");
  g.labels = list("labels");
  g.feature_nodes = list("feature_nodes");
  if (u.contains("feature_rows") && !u["feature_rows"].is_none()) {
    g.feature_bytes = u["feature_rows"].cast<std::string>();
    g.row_bytes = g.feature_nodes.empty()
                      ? 0
                      : static_cast<int64_t>(g.feature_bytes.size() / g.feature_nodes.size());
  }
  client::UpdateWriter* w = nullptr;
  std::vector<int64_t> versions;
  Status st;
  {
    py::gil_scoped_release release;
    st = cluster.Writer(&w);
    if (st.ok()) st = w->Apply(g, undirected, &versions);
  }
  Check(st);
  return versions;
}

py::dict CompactOf(PyCluster& cluster, int partition) {
  client::UpdateWriter* w = nullptr;
  int64_t version = 0, edges = 0;
  double seconds = 0;
  bool up_to_date = false;
  Status st;
  {
    py::gil_scoped_release release;
    st = cluster.Writer(&w);
    if (st.ok()) st = w->Compact(partition, &version, &edges, &seconds, &up_to_date);
  }
  py::dict d;
  d["partition"] = partition;
  if (st.code() == Status::Code::kAborted) {
    d["compacted"] = false;
    d["reason"] = st.message();
    return d;
  }
  Check(st);
  if (up_to_date) {
    d["compacted"] = false;
    d["version"] = version;
    d["reason"] = "nothing to fold: the base already holds version " + std::to_string(version) +
                  ", the newest";
    return d;
  }
  d["compacted"] = true;
  d["version"] = version;
  d["edges"] = edges;
  d["seconds"] = seconds;
  return d;
}

py::dict PprOf(PyCluster& cluster, const py::object& seeds_obj, int64_t top_k, double alpha,
               double eps, int64_t max_rounds, const std::vector<int64_t>& type_budgets) {
  client::PprOptions o;
  o.type_budgets = type_budgets;
  o.top_k = top_k;
  o.alpha = alpha;
  o.eps = eps;
  o.max_rounds = max_rounds;
  Check(client::CheckPprOptions(o, cluster.get()->hetero()));
  std::vector<int64_t> seeds = Int64List(seeds_obj, "seeds");
  client::PprResult r;
  Check(cluster.WithSession([&](client::Session* s) {
    return client::PersonalizedPageRank(*s, seeds, o, &r, cluster.get()->hetero());
  }));
  client::Array scores =
      client::Array::Empty(client::DType::kFloat32, {static_cast<int64_t>(r.scores.size())});
  std::copy(r.scores.begin(), r.scores.end(), scores.ptr<float>());
  py::dict d;
  d["offsets"] = Int64Capsule(std::move(r.offsets));
  d["nodes"] = Int64Capsule(std::move(r.nodes));
  d["scores"] = ToCapsule(scores);
  d["pushes"] = r.pushes;
  d["rounds"] = r.rounds;
  d["entries_sent"] = r.entries_sent;
  d["converged"] = r.converged;
  return d;
}

}  // namespace fanout::python
