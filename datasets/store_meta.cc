#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "datasets/partition_store.h"

namespace fanout::datasets {

std::string DatasetMeta::ToJson() const {
  nlohmann::json j;
  j["format"] = "fanout-partitioned-graph";
  j["format_version"] = format_version;
  j["dataset_id"] = dataset_id;
  j["name"] = name;
  j["source_format"] = source_format;
  j["source_path"] = source_path;
  j["num_nodes"] = num_nodes;
  j["num_edges"] = num_edges;
  j["num_parts"] = num_parts;
  j["partition_offsets"] = offsets;
  j["feature_dim"] = feature_dim;
  j["feature_dtype"] = FeatureDTypeName(feature_dtype);
  j["feature_scale"] = feature_scale;
  if (!feature_scales.empty()) j["feature_scales"] = feature_scales;
  if (!feature_files.empty()) {
    nlohmann::json ff = nlohmann::json::array();
    for (const FeatureFileEntry& f : feature_files)
      ff.push_back({{"file", f.file}, {"bytes", f.bytes}});
    j["feature_files"] = ff;
  }
  j["num_classes"] = num_classes;
  j["class_names"] = class_names;
  j["direction"] = direction;
  j["has_labels"] = has_labels;
  j["has_split"] = has_split;
  j["has_original_names"] = has_names;
  if (has_heat) j["has_heat"] = true;
  if (has_edge_times)
    j["has_edge_times"] = true;  // absent in stores without (older readers ignore it)
  if (has_edge_weights) j["has_edge_weights"] = true;  // as has_edge_times
  if (!hetero.empty()) {  // absent in homogeneous stores (older readers ignore these)
    j["node_types"] = hetero.node_types;
    nlohmann::json et = nlohmann::json::array();
    for (const sampler::EdgeType& t : hetero.edge_types)
      et.push_back({hetero.node_types[t.src], t.rel, hetero.node_types[t.dst]});
    j["edge_types"] = et;
    j["node_type_bounds"] = hetero.type_bounds;
    j["node_type_feature_dims"] = hetero.feature_dims;
  }
  j["chunk_nodes"] = chunk_nodes;
  j["method"] = method;
  j["options"] = nlohmann::json::parse(options_json.empty() ? "{}" : options_json);
  nlohmann::json parts = nlohmann::json::array();
  for (int p = 0; p < num_parts && p < static_cast<int>(stats.nodes.size()); ++p)
    parts.push_back({{"part", p}, {"nodes", stats.nodes[p]}, {"edges", stats.edges[p]}});
  j["partitions"] = parts;
  j["cut_edges"] = stats.cut_edges;
  j["edge_cut_fraction"] = stats.edge_cut_fraction;
  j["node_balance"] = stats.node_balance;
  j["edge_balance"] = stats.edge_balance;
  return j.dump(2) + "\n";
}

Status DatasetMeta::FromJson(const std::string& text, const std::string& path, DatasetMeta* out) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": not valid JSON (truncated or damaged?): " + e.what());
  }
  try {
    if (j.value("format", "") != "fanout-partitioned-graph")
      return Status::InvalidArgument(path + ": not a Fanout partitioned dataset (format is '" +
                                     j.value("format", "") + "')");
    DatasetMeta m;
    m.format_version = j.at("format_version").get<int>();
    if (m.format_version < 1 || m.format_version > kStoreFormatVersion)
      return Status::InvalidArgument(path + ": format version " + std::to_string(m.format_version) +
                                     ", this build reads versions 1 to " +
                                     std::to_string(kStoreFormatVersion) +
                                     " (re-run fanout-partition, or use a newer Fanout)");
    m.dataset_id = j.at("dataset_id").get<std::string>();
    m.name = j.value("name", "");
    m.source_format = j.value("source_format", "");
    m.source_path = j.value("source_path", "");
    m.num_nodes = j.at("num_nodes").get<int64_t>();
    m.num_edges = j.at("num_edges").get<int64_t>();
    m.num_parts = j.at("num_parts").get<int>();
    m.offsets = j.at("partition_offsets").get<std::vector<int64_t>>();
    m.feature_dim = j.at("feature_dim").get<int64_t>();
    FANOUT_RETURN_IF_ERROR(
        ParseFeatureDType(j.at("feature_dtype").get<std::string>(), &m.feature_dtype));
    m.feature_scale = j.value("feature_scale", 1.0);
    if (j.contains("feature_scales"))
      m.feature_scales = j.at("feature_scales").get<std::vector<double>>();
    if (j.contains("feature_files"))
      for (const auto& f : j.at("feature_files"))
        m.feature_files.push_back({f.at("file").get<std::string>(), f.at("bytes").get<int64_t>()});
    m.num_classes = j.at("num_classes").get<int64_t>();
    m.class_names = j.value("class_names", std::vector<std::string>{});
    m.direction = j.at("direction").get<std::string>();
    m.has_labels = j.at("has_labels").get<bool>();
    m.has_split = j.at("has_split").get<bool>();
    m.has_names = j.value("has_original_names", false);
    m.has_edge_times = j.value("has_edge_times", false);
    m.has_edge_weights = j.value("has_edge_weights", false);
    m.has_heat = j.value("has_heat", false);
    m.chunk_nodes = j.at("chunk_nodes").get<int64_t>();
    m.method = j.value("method", "");
    m.options_json = j.contains("options") ? j["options"].dump() : "{}";
    if (j.contains("partitions")) {
      for (const auto& p : j["partitions"]) {
        m.stats.nodes.push_back(p.at("nodes").get<int64_t>());
        m.stats.edges.push_back(p.at("edges").get<int64_t>());
      }
    }
    m.stats.cut_edges = j.value("cut_edges", int64_t{0});
    m.stats.edge_cut_fraction = j.value("edge_cut_fraction", 0.0);
    m.stats.node_balance = j.value("node_balance", 0.0);
    m.stats.edge_balance = j.value("edge_balance", 0.0);
    // Consistency.
    if (m.num_parts < 1 || static_cast<int>(m.offsets.size()) != m.num_parts + 1 ||
        m.offsets.front() != 0 || m.offsets.back() != m.num_nodes)
      return Status::Corruption(
          path + ": partition_offsets do not tile [0, num_nodes) in num_parts ranges");
    for (int p = 0; p < m.num_parts; ++p)
      if (m.offsets[p + 1] < m.offsets[p])
        return Status::Corruption(path + ": partition_offsets decrease at part " +
                                  std::to_string(p));
    if (m.direction != "in" && m.direction != "out")
      return Status::Corruption(path + ": direction '" + m.direction +
                                "' is neither 'in' nor 'out'");
    if (m.chunk_nodes < 1) return Status::Corruption(path + ": chunk_nodes must be positive");
    if (m.feature_dim < 0) return Status::Corruption(path + ": feature_dim is negative");
    if (m.feature_dtype == FeatureDType::kInt8) {
      if (m.feature_scales.empty())
        m.feature_scales.assign(static_cast<size_t>(m.feature_dim), m.feature_scale);
      if (static_cast<int64_t>(m.feature_scales.size()) != m.feature_dim)
        return Status::Corruption(path + ": feature_scales has " +
                                  std::to_string(m.feature_scales.size()) + " entries for " +
                                  std::to_string(m.feature_dim) + " feature columns");
      for (double s : m.feature_scales)
        if (!(s > 0) || !std::isfinite(s))
          return Status::Corruption(path + ": an int8 feature scale is not a positive number");
    } else {
      m.feature_scales.clear();
    }
    if (!m.feature_files.empty()) {
      if (static_cast<int>(m.feature_files.size()) != m.num_parts)
        return Status::Corruption(path + ": feature_files names " +
                                  std::to_string(m.feature_files.size()) + " files for " +
                                  std::to_string(m.num_parts) + " partitions");
      for (const FeatureFileEntry& f : m.feature_files)
        if (f.file.empty() || f.file.find('/') != std::string::npos || f.file[0] == '.' ||
            f.bytes < 0)
          return Status::Corruption(path + ": feature file entry '" + f.file +
                                    "' is not a file name in the dataset folder");
    }
    if (j.contains("node_types")) {
      sampler::HeteroSchema& h = m.hetero;
      h.node_types = j.at("node_types").get<std::vector<std::string>>();
      for (const auto& t : j.at("edge_types")) {
        const auto names = t.get<std::vector<std::string>>();
        if (names.size() != 3)
          return Status::Corruption(path + ": an edge type is not [src, rel, dst]: " + t.dump());
        sampler::EdgeType e{m.hetero.FindNodeType(names[0]), names[1],
                            m.hetero.FindNodeType(names[2])};
        if (e.src < 0 || e.dst < 0)
          return Status::Corruption(path + ": edge type " + t.dump() +
                                    " names a node type not in node_types");
        h.edge_types.push_back(e);
      }
      h.type_bounds = j.at("node_type_bounds").get<std::vector<int64_t>>();
      h.feature_dims = j.at("node_type_feature_dims").get<std::vector<int64_t>>();
      h.incoming = m.direction == "in";
      Status st = h.Check(m.num_parts, m.num_nodes, m.feature_dim);
      if (!st.ok()) return Status::Corruption(path + ": " + st.message());
      const size_t T = h.node_types.size();
      for (int p = 0; p < m.num_parts; ++p)
        if (h.type_bounds[p * T] != m.offsets[p])
          return Status::Corruption(path + ": node_type_bounds do not start partition " +
                                    std::to_string(p) + " at " + std::to_string(m.offsets[p]));
    }
    *out = std::move(m);
    return Status::OK();
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": missing or mistyped field: " + e.what());
  }
}

}  // namespace fanout::datasets
