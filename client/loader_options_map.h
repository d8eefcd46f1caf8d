// LoaderOptions from named values: the one parser of a loader's options, for
// the Python binding (which converts its keyword arguments and forwards) and
// for C++ users who read options from a config (names as PyG's and the
// Python loaders': num_neighbors, batch_size, sampler, top_k, ...).
// Every mistake is InvalidArgument naming the option and what it must be.
#ifndef FANOUT_CLIENT_LOADER_OPTIONS_MAP_H_
#define FANOUT_CLIENT_LOADER_OPTIONS_MAP_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "client/batch_loader.h"
#include "common/status.h"

namespace fanout::client {

// One option's value, as a config or a Python call gives it.
struct OptionValue {
  enum class Kind { kNone, kBool, kInt, kDouble, kString, kIntList, kIntLists };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<int64_t> list;
  std::vector<std::vector<int64_t>> lists;

  static OptionValue None() { return {}; }
  static OptionValue Bool(bool v);
  static OptionValue Int(int64_t v);
  static OptionValue Double(double v);
  static OptionValue String(std::string v);
  static OptionValue IntList(std::vector<int64_t> v);
  static OptionValue IntLists(std::vector<std::vector<int64_t>> v);
};

// Applies `options` over `*out` (its other fields kept). Keys:
//   shuffle replace weighted features labels edge_ids original_ids drop_last
//   subgraph neg_strict                              True / False
//   batch_size num_workers prefetch seed             integers
//   rank world_size link_edge_type                   integer or None (-1)
//   num_neighbors input_time                         integer lists (input_time: None = not
//   temporal) type_fanouts                                     one integer list per edge type, or
//   None sampler                                          "neighbor", "labor" or "pinsage"
//   num_walks walk_length visit_stride               integers (PinSAGE)
//   restart_prob neg_amount                          numbers
//   top_k                                            integer or None: every hop's count with
//   "pinsage" x_dtype temporal_strategy neg_mode               names (float32 / float16 / bfloat16;
//   uniform
//                                                    / last; binary / triplet)
// Unknown keys are refused by name. num_neighbors (or type_fanouts) must name
// at least one hop.
Status LoaderOptionsFromMap(const std::map<std::string, OptionValue>& options, LoaderOptions* out);

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_LOADER_OPTIONS_MAP_H_
