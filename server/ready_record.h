// The ready record: what fanout-server says once it serves, machine-readable.
// It is one JSON line on stdout, after the human-readable "fanout-server
// ready: ..." line ({"fanout_server_ready": {...}}), and, with --ready-file,
// the same object in that file, written whole (a temporary file renamed into
// place, so a reader never sees half of it). Encoder and decoder live here
// side by side; Python's LocalCluster reads the same fields. The schema is
// documented once, in docs/DEPLOY.md ("The ready record"); a test parses
// that example and compares its keys with what a server writes.
#ifndef FANOUT_SERVER_READY_RECORD_H_
#define FANOUT_SERVER_READY_RECORD_H_

#include <cstdint>
#include <string>

#include "common/status.h"

namespace fanout::server {

struct ReadyRecord {
  int64_t pid = 0;
  std::string dataset;  // the dataset's name (meta.json)
  int partition = 0, num_parts = 0;
  std::string host;          // the address the listeners bound
  int rpc_port = 0;          // Thrift
  int admin_port = 0;        // 0 = no admin endpoint
  int data_port = 0;         // UCX data plane; 0 = off
  std::string local_socket;  // same-host export socket; empty = off
  std::string version;       // the server's Fanout version (common/version.h); "" = before 0.4
  std::string rpc() const { return host + ":" + std::to_string(rpc_port); }
};

// One line of JSON (no newline).
std::string EncodeReadyRecord(const ReadyRecord& r);
// True when `line` is a ready record (surrounding whitespace allowed); fills
// *out. Any other line (UCX warnings, the human-readable line) is false.
bool DecodeReadyRecord(const std::string& line, ReadyRecord* out);
// Writes the record to `path` whole (path.tmp, then rename).
Status WriteReadyFile(const std::string& path, const ReadyRecord& r);

}  // namespace fanout::server

#endif  // FANOUT_SERVER_READY_RECORD_H_
