// fanout._core's NodeLoader: a client::BatchLoader (a LinkBatchLoader for
// link seeds) built from the Python package's keyword options, yielding
// batches as dicts of capsules.
#ifndef FANOUT_PYTHON_CORE_LOADER_H_
#define FANOUT_PYTHON_CORE_LOADER_H_

#include <chrono>
#include <memory>

#include "client/detail/stage_timer.h"
#include "python/core/cluster.h"

namespace fanout::python {

// client::LoaderOptions from keyword arguments, each checked by name and
// type (fanout/__init__.py passes them by name: no positional order to get
// wrong). Unknown names are refused.
client::LoaderOptions ParseLoaderOptions(const PyCluster& cluster, const py::dict& kw);
// A LinkLoader's seed edges: {"src", "dst", "label" (or None)}.
client::LinkSeeds ParseLinkSeeds(const py::dict& d);

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
      loader_ = std::make_unique<client::BatchLoader>(source, std::move(seeds), std::move(o));
    } else {
      loader_ = std::make_unique<client::LinkBatchLoader>(
          source, ParseLinkSeeds(link.cast<py::dict>()), std::move(o));
    }
  }

  ~PyLoader() { Close(); }

  // Stops the workers (they may be waiting on servers, up to the call
  // deadline) without holding the GIL, so other Python threads run.
  void Close() {
    if (!loader_) return;
    std::unique_ptr<client::BatchLoader> l = std::move(loader_);
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      l.reset();
    } else {
      l.reset();
    }
  }

  client::BatchLoader& loader() {
    if (!loader_) Raise(Status::InvalidArgument("the loader is closed"));
    return *loader_;
  }
  const client::BatchLoader& loader() const {
    if (!loader_) Raise(Status::InvalidArgument("the loader is closed"));
    return *loader_;
  }

  // The next batch as a dict of capsules and lists, or None at the end of
  // the epoch (the next call starts the following one).
  py::object Next() {
    client::Batch b;
    bool more = false;
    client::BatchLoader& l = loader();
    try {
      py::gil_scoped_release release;
      more = l.Next(&b);
    } catch (const client::LoaderError& e) {
      Raise(e.status());
    } catch (const std::exception& e) {
      Raise(Status::Internal(e.what()));
    }
    if (!more) return py::none();
    client::detail::StageTimer handoff(&handoff_);
    py::dict d = BatchDict(b);
    if (b.node_type.defined() && schema_ != nullptr) d["hetero"] = SplitDict(b, *schema_);
    return std::move(d);
  }

  void SetEpoch(int64_t e) {
    if (e < 0) Raise(Status::InvalidArgument("epoch must be >= 0, got " + std::to_string(e)));
    client::BatchLoader& l = loader();
    py::gil_scoped_release release;
    l.SetEpoch(e);  // a LoaderError reaches Python through the translator
  }

  py::object EpochSeeds(int64_t e) { return Int64Capsule(loader().EpochSeeds(e)); }

  // Benchmarks: takes batches in C++ (no Python per batch) for `seconds`,
  // epoch after epoch; returns how many.
  int64_t RunFor(double seconds) {
    int64_t n = 0;
    client::BatchLoader& l = loader();
    py::gil_scoped_release release;
    client::Batch b;
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
    d["data_faults"] = s.data_faults;
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
    d["buffer_reuses"] = s.buffer_reuses;
    d["buffer_allocations"] = s.buffer_allocations;
    // Where the time went (docs/BENCHMARKS.md "Where a distributed batch's
    // time goes"): the workers' session stages, `build` (the rest of each
    // batch's production: its arrays), and `handoff` (a batch's arrays to
    // DLPack capsules, on the consumer's thread).
    py::dict stages;
    auto put = [&](const char* name, const client::StageTime& t) {
      py::dict e;
      e["wall_s"] = t.wall_s;
      e["cpu_s"] = t.cpu_s;
      e["calls"] = t.calls;
      stages[name] = e;
    };
    client::StageTime build = s.produce;
    for (int i = 0; i < client::kNumStages; ++i) {
      put(client::StageName(static_cast<client::Stage>(i)), s.stages[i]);
      build.wall_s -= s.stages[i].wall_s;
      build.cpu_s -= s.stages[i].cpu_s;
    }
    put("build", build);
    put("produce", s.produce);
    put("handoff", handoff_);
    d["stages"] = stages;
    return d;
  }

  int64_t Len() const { return loader().num_batches(); }
  int Rank() const { return loader().rank(); }
  int WorldSize() const { return loader().world_size(); }

 private:
  std::unique_ptr<client::BatchLoader> loader_;
  const sampler::HeteroSchema* schema_ = nullptr;  // heterogeneous datasets: split batches by it
  client::StageTime handoff_;  // Next()'s arrays to capsules, on the consumer's thread
};

}  // namespace fanout::python

#endif  // FANOUT_PYTHON_CORE_LOADER_H_
