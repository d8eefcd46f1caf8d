// libFuzzer target: the cluster file parser (JSON: partitions, replicas,
// data_plane, tls, auth_token_file).
#include <cstdint>
#include <string>

#include "client/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fanout::client::ClusterSpec spec;
  (void)fanout::client::ParseClusterJson(std::string(reinterpret_cast<const char*>(data), size),
                                         "fuzz.json", &spec);
  return 0;
}
