#include "python/core/loader.h"

#include <map>

#include "client/loader_options_map.h"

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

// A keyword argument as the C++ parser's value: sequences (lists, tuples,
// tensors, arrays) become integer lists; type_fanouts a list of them.
client::OptionValue ToOptionValue(const std::string& key, const py::handle& v) {
  using client::OptionValue;
  if (v.is_none()) return OptionValue::None();
  if (py::isinstance<py::bool_>(v)) return OptionValue::Bool(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return OptionValue::Int(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return OptionValue::Double(v.cast<double>());
  if (py::isinstance<py::str>(v)) return OptionValue::String(py::str(v));
  const std::string what = key == "type_fanouts" ? "num_neighbors" : key;
  if (key == "type_fanouts") {
    std::vector<std::vector<int64_t>> lists;
    for (const py::handle& f : v) lists.push_back(Int64List(f, what.c_str()));
    return OptionValue::IntLists(std::move(lists));
  }
  return OptionValue::IntList(Int64List(v, what.c_str()));
}

}  // namespace

client::LoaderOptions ParseLoaderOptions(const PyCluster& cluster, const py::dict& kw) {
  client::LoaderOptions o;
  std::string device = "cpu";
  double gpu_cache_fraction = 0.1;
  // The binding's own (they need the cluster); the rest is the C++ parser's.
  std::map<std::string, client::OptionValue> options;
  for (const auto& [key_obj, v] : kw) {
    const std::string key = py::str(key_obj);
    if (key == "device") {
      device = py::str(v);
    } else if (key == "gpu_cache_fraction") {
      gpu_cache_fraction = v.cast<double>();
    } else {
      options[key] = ToOptionValue(key, v);
    }
  }
  Check(client::LoaderOptionsFromMap(options, &o));
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
