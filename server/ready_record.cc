#include "server/ready_record.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fanout::server {

namespace {
constexpr const char* kKey = "fanout_server_ready";
}  // namespace

std::string EncodeReadyRecord(const ReadyRecord& r) {
  nlohmann::json j = {{"pid", r.pid},
                      {"dataset", r.dataset},
                      {"partition", r.partition},
                      {"num_parts", r.num_parts},
                      {"host", r.host},
                      {"rpc_port", r.rpc_port},
                      {"admin_port", r.admin_port},
                      {"data_port", r.data_port},
                      {"local_socket", r.local_socket},
                      {"version", r.version}};
  return nlohmann::json{{kKey, j}}.dump();
}

bool DecodeReadyRecord(const std::string& line, ReadyRecord* out) {
  const size_t start = line.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || line[start] != '{') return false;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains(kKey) || !j[kKey].is_object()) return false;
  const nlohmann::json& r = j[kKey];
  try {
    ReadyRecord rec;
    rec.pid = r.at("pid").get<int64_t>();
    rec.dataset = r.at("dataset").get<std::string>();
    rec.partition = r.at("partition").get<int>();
    rec.num_parts = r.at("num_parts").get<int>();
    rec.host = r.at("host").get<std::string>();
    rec.rpc_port = r.at("rpc_port").get<int>();
    rec.admin_port = r.at("admin_port").get<int>();
    rec.data_port = r.at("data_port").get<int>();
    rec.local_socket = r.at("local_socket").get<std::string>();
    if (r.contains("version")) rec.version = r.at("version").get<std::string>();
    *out = std::move(rec);
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

Status WriteReadyFile(const std::string& path, const ReadyRecord& r) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << EncodeReadyRecord(r) << "\n";
    if (!f.flush()) return Status::IOError("--ready-file: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::IOError("--ready-file: cannot rename " + tmp + " to " + path);
  }
  return Status::OK();
}

}  // namespace fanout::server
