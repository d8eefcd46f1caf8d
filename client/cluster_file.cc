// Cluster files (JSON: partitions and their replicas, data plane, TLS, auth
// token) and the auth-token file.
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "client/cluster.h"

namespace fanout::client {

Status ParseClusterJson(const std::string& text, const std::string& origin, ClusterSpec* out) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("partitions") || !j["partitions"].is_array())
    return Status::InvalidArgument(
        origin +
        ": expected {\"partitions\": [{\"partition\": 0, \"replicas\": [\"host:port\"]}, ...]}");
  ClusterSpec spec;
  for (const auto& e : j["partitions"]) {
    if (!e.is_object() || !e.contains("partition") || !e["partition"].is_number_integer() ||
        !e.contains("replicas") || !e["replicas"].is_array() || e["replicas"].empty())
      return Status::InvalidArgument(
          origin +
          ": each partition entry needs \"partition\" (an integer) and a non-empty "
          "\"replicas\" list, got " +
          e.dump());
    int p = e["partition"].get<int>();
    if (p < 0 || p > 100000)
      return Status::InvalidArgument(origin + ": partition " + std::to_string(p) +
                                     " is out of range");
    if (static_cast<int>(spec.replicas.size()) <= p) spec.replicas.resize(p + 1);
    if (!spec.replicas[p].empty())
      return Status::InvalidArgument(origin + ": partition " + std::to_string(p) +
                                     " is listed twice");
    for (const auto& r : e["replicas"]) {
      if (!r.is_string())
        return Status::InvalidArgument(origin + ": replica " + r.dump() +
                                       " is not a \"host:port\" string");
      std::string host;
      int port;
      FANOUT_RETURN_IF_ERROR(
          rpc::ParseAddress(r.get<std::string>(), &host, &port).WithContext(origin));
      spec.replicas[p].push_back(r.get<std::string>());
    }
  }
  if (j.contains("data_plane")) {
    if (!j["data_plane"].is_string())
      return Status::InvalidArgument(origin +
                                     ": \"data_plane\" must be \"auto\", \"ucx\" or \"tcp\", got " +
                                     j["data_plane"].dump());
    FANOUT_RETURN_IF_ERROR(
        rpc::ParseDataPlaneMode(j["data_plane"].get<std::string>(), &spec.data_plane)
            .WithContext(origin));
    spec.has_data_plane = true;
  }
  if (j.contains("local_sampling")) {
    const auto& v = j["local_sampling"];
    if (!v.is_string() || (v.get<std::string>() != "auto" && v.get<std::string>() != "off"))
      return Status::InvalidArgument(
          origin + ": \"local_sampling\" must be \"auto\" or \"off\", got " + v.dump());
    spec.has_local_sampling = true;
    spec.local_sampling = v.get<std::string>() == "auto";
  }
  if (j.contains("tls")) {
    const auto& t = j["tls"];
    auto path = [&](const char* key, std::string* out) -> Status {
      if (!t.contains(key)) return Status::OK();
      if (!t[key].is_string() || t[key].get<std::string>().empty())
        return Status::InvalidArgument(origin + ": \"tls\".\"" + key +
                                       "\" must be a file path, got " + t[key].dump());
      *out = t[key].get<std::string>();
      return Status::OK();
    };
    if (!t.is_object() || !t.contains("ca"))
      return Status::InvalidArgument(
          origin +
          ": \"tls\" must be {\"ca\": FILE, \"cert\": FILE, \"key\": FILE} "
          "(cert and key only for servers that require client certificates), got " +
          t.dump());
    FANOUT_RETURN_IF_ERROR(path("ca", &spec.tls.ca));
    FANOUT_RETURN_IF_ERROR(path("cert", &spec.tls.cert));
    FANOUT_RETURN_IF_ERROR(path("key", &spec.tls.key));
    if (spec.tls.cert.empty() != spec.tls.key.empty())
      return Status::InvalidArgument(origin +
                                     ": \"tls\" needs both \"cert\" and \"key\", or neither");
  }
  if (j.contains("auth_token_file")) {
    if (!j["auth_token_file"].is_string() || j["auth_token_file"].get<std::string>().empty())
      return Status::InvalidArgument(origin + ": \"auth_token_file\" must be a file path, got " +
                                     j["auth_token_file"].dump());
    spec.auth_token_file = j["auth_token_file"].get<std::string>();
  }
  if (spec.replicas.empty()) return Status::InvalidArgument(origin + ": no partitions");
  for (size_t p = 0; p < spec.replicas.size(); ++p)
    if (spec.replicas[p].empty())
      return Status::InvalidArgument(
          origin + ": partition " + std::to_string(p) + " is missing (partitions 0.." +
          std::to_string(spec.replicas.size() - 1) + " must all be listed)");
  *out = std::move(spec);
  return Status::OK();
}

Status ReadClusterFile(const std::string& path, ClusterSpec* out) {
  std::ifstream f(path);
  if (!f) return Status::NotFound(path + ": cannot open the cluster file");
  std::stringstream ss;
  ss << f.rdbuf();
  FANOUT_RETURN_IF_ERROR(ParseClusterJson(ss.str(), path, out));
  // Files it names are relative to its folder.
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  for (std::string* p : {&out->tls.ca, &out->tls.cert, &out->tls.key, &out->auth_token_file})
    if (!p->empty() && std::filesystem::path(*p).is_relative()) *p = (base / *p).string();
  return Status::OK();
}

}  // namespace fanout::client
