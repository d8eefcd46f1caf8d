#include "rpc/data_plane.h"

namespace fanout::rpc {

const char* DataMethodName(DataMethod m) {
  switch (m) {
    case DataMethod::kPing: return "ping";
    case DataMethod::kFeatures: return "lookup_features";
    case DataMethod::kLabels: return "lookup_labels";
    case DataMethod::kSample: return "sample_neighbors";
  }
  return "unknown";
}

}  // namespace fanout::rpc
