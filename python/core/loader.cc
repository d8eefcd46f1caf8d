#include "python/core/loader.h"

#include "sampler/negative.h"
#include "sampler/temporal.h"

namespace fanout::python {

// "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N.
namespace {

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

}  // namespace

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
    if (cache::CudaDeviceCount() <= 0)
      Raise(Status::NotSupported("device='" + device +
                                 "' needs a CUDA device and a Fanout built with CUDA; " +
                                 (cache::CudaBuilt() ? std::string("this machine has no device")
                                                     : std::string("this build has no CUDA"))));
    if (!(gpu_cache_fraction > 0 && gpu_cache_fraction <= 1))
      Raise(Status::InvalidArgument("gpu_cache_fraction must be in (0, 1], got " +
                                    std::to_string(gpu_cache_fraction)));
    Check(MakeGpuCache(cluster, cuda_device, gpu_cache_fraction, &o.gpu_cache));
  }
  return o;
}

client::LinkSeeds ParseLinkSeeds(const py::dict& d) {
  client::LinkSeeds seeds;
  seeds.src = Int64List(d["src"], "edge_label_index[0]");
  seeds.dst = Int64List(d["dst"], "edge_label_index[1]");
  if (d.contains("label") && !d["label"].is_none())
    seeds.label = Int64List(d["label"], "edge_label");
  return seeds;
}

}  // namespace fanout::python
