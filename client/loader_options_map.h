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
//  - True / False: shuffle, replace, weighted, features, labels, edge_ids,
//    original_ids, drop_last, subgraph, neg_strict;
//  - integers: batch_size, num_workers, prefetch, seed, num_walks,
//    walk_length, visit_stride (PinSAGE); rank, world_size, link_edge_type
//    (or None: -1); top_k (or None; every hop's count with sampler "pinsage");
//  - numbers: restart_prob, neg_amount;
//  - integer lists: num_neighbors, input_time (None: not temporal), snapshot
//    (one version per partition; "latest" or None: each batch at the newest;
//    "epoch": each epoch at the newest when it starts);
//    type_fanouts: one integer list per edge type, or None;
//  - names: sampler ("neighbor", "labor", "pinsage"), x_dtype (float32,
//    float16, bfloat16), temporal_strategy (uniform, last), neg_mode (binary,
//    triplet).
// Unknown keys are refused by name. num_neighbors (or type_fanouts) must name
// at least one hop.
Status LoaderOptionsFromMap(const std::map<std::string, OptionValue>& options, LoaderOptions* out);

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_LOADER_OPTIONS_MAP_H_
