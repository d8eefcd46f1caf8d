#include "client/loader_options_map.h"

#include <utility>

#include "sampler/negative.h"
#include "sampler/temporal.h"

namespace fanout::client {

OptionValue OptionValue::Bool(bool v) {
  OptionValue o;
  o.kind = Kind::kBool;
  o.b = v;
  return o;
}
OptionValue OptionValue::Int(int64_t v) {
  OptionValue o;
  o.kind = Kind::kInt;
  o.i = v;
  return o;
}
OptionValue OptionValue::Double(double v) {
  OptionValue o;
  o.kind = Kind::kDouble;
  o.d = v;
  return o;
}
OptionValue OptionValue::String(std::string v) {
  OptionValue o;
  o.kind = Kind::kString;
  o.s = std::move(v);
  return o;
}
OptionValue OptionValue::IntList(std::vector<int64_t> v) {
  OptionValue o;
  o.kind = Kind::kIntList;
  o.list = std::move(v);
  return o;
}
OptionValue OptionValue::IntLists(std::vector<std::vector<int64_t>> v) {
  OptionValue o;
  o.kind = Kind::kIntLists;
  o.lists = std::move(v);
  return o;
}

namespace {

using Kind = OptionValue::Kind;

Status Bad(const std::string& key, const char* what) {
  return Status::InvalidArgument("loader option " + key + " must be " + what);
}

// The typed readers: each names the option when its value is of another kind.
struct Reader {
  const std::string& key;
  const OptionValue& v;
  Status Bool(bool* out) const {
    if (v.kind != Kind::kBool) return Bad(key, "True or False");
    *out = v.b;
    return Status::OK();
  }
  template <typename T>
  Status Int(T* out) const {
    if (v.kind != Kind::kInt) return Bad(key, "an integer");
    *out = static_cast<T>(v.i);
    return Status::OK();
  }
  // An integer, or None for `none`.
  template <typename T>
  Status IntOrNone(T* out, T none) const {
    if (v.kind == Kind::kNone) {
      *out = none;
      return Status::OK();
    }
    return Int(out);
  }
  Status Number(double* out) const {
    if (v.kind == Kind::kDouble)
      *out = v.d;
    else if (v.kind == Kind::kInt)
      *out = static_cast<double>(v.i);
    else
      return Bad(key, "a number");
    return Status::OK();
  }
  Status String(std::string* out) const {
    if (v.kind != Kind::kString) return Bad(key, "a string");
    *out = v.s;
    return Status::OK();
  }
  Status List(std::vector<int64_t>* out) const {
    if (v.kind != Kind::kIntList) return Bad(key, "a sequence of integers");
    *out = v.list;
    return Status::OK();
  }
};

}  // namespace

Status LoaderOptionsFromMap(const std::map<std::string, OptionValue>& options, LoaderOptions* o) {
  const std::pair<const char*, bool*> flags[] = {
      {"shuffle", &o->shuffle},           {"replace", &o->replace},     {"weighted", &o->weighted},
      {"features", &o->features},         {"labels", &o->labels},       {"edge_ids", &o->edge_ids},
      {"original_ids", &o->original_ids}, {"drop_last", &o->drop_last}, {"subgraph", &o->subgraph},
      {"neg_strict", &o->negative.strict}};
  int64_t top_k = -1;  // -1: not given
  for (const auto& [key, v] : options) {
    const Reader r{key, v};
    bool* flag = nullptr;
    for (const auto& f : flags)
      if (key == f.first) flag = f.second;
    Status st;
    std::string name;
    if (flag != nullptr) {
      st = r.Bool(flag);
    } else if (key == "num_neighbors") {
      st = r.List(&o->fanouts);
    } else if (key == "batch_size") {
      st = r.Int(&o->batch_size);
    } else if (key == "num_workers") {
      st = r.Int(&o->num_workers);
    } else if (key == "prefetch") {
      st = r.Int(&o->prefetch);
    } else if (key == "seed") {
      st = r.Int(&o->seed);
    } else if (key == "rank") {
      st = r.IntOrNone(&o->rank, -1);
    } else if (key == "world_size") {
      st = r.IntOrNone(&o->world_size, -1);
    } else if (key == "link_edge_type") {
      st = r.IntOrNone(&o->link_edge_type, -1);
    } else if (key == "input_time") {
      if (v.kind == Kind::kNone)
        o->input_time.clear();
      else
        st = r.List(&o->input_time);
    } else if (key == "type_fanouts") {
      if (v.kind == Kind::kNone)
        o->edge_type_fanouts.clear();
      else if (v.kind == Kind::kIntLists)
        o->edge_type_fanouts = v.lists;
      else
        st = Bad(key, "one sequence of integers per edge type");
    } else if (key == "sampler") {
      st = r.String(&name);
      if (st.ok() && name != "neighbor" && name != "labor" && name != "pinsage" && name != "ppr")
        st = Status::InvalidArgument("sampler '" + name +
                                     "' is not 'neighbor', 'labor', 'pinsage' or 'ppr' (random "
                                     "walks: fanout.RandomWalkLoader)");
      o->labor = name == "labor";
      o->pinsage = name == "pinsage";
      o->ppr = name == "ppr";
    } else if (key == "ppr_alpha") {
      st = r.Number(&o->ppr_options.alpha);
    } else if (key == "ppr_eps") {
      st = r.Number(&o->ppr_options.eps);
    } else if (key == "ppr_type_budgets") {
      st = v.kind == Kind::kNone ? Status::OK() : r.List(&o->ppr_options.type_budgets);
    } else if (key == "num_walks") {
      st = r.Int(&o->walk.num_walks);
    } else if (key == "walk_length") {
      st = r.Int(&o->walk.walk_length);
    } else if (key == "visit_stride") {
      st = r.Int(&o->walk.visit_stride);
    } else if (key == "restart_prob") {
      st = r.Number(&o->walk.restart_prob);
    } else if (key == "top_k") {
      st = r.IntOrNone(&top_k, int64_t{-1});
      if (st.ok() && v.kind != Kind::kNone && top_k < 1)
        st = Status::InvalidArgument("top_k must be at least 1, got " + std::to_string(top_k));
    } else if (key == "x_dtype") {
      st = r.String(&name);
      if (st.ok()) st = ParseFeatureDType(name, &o->x_dtype);
      if (st.ok() && o->x_dtype == FeatureDType::kInt8)
        st = Status::InvalidArgument("x_dtype must be float32, float16 or bfloat16, not int8");
    } else if (key == "temporal_strategy") {
      st = r.String(&name);
      if (st.ok()) st = sampler::ParseTemporalStrategy(name, &o->temporal_strategy);
    } else if (key == "neg_mode") {
      st = r.String(&name);
      if (st.ok()) st = sampler::ParseNegativeMode(name, &o->negative.mode);
    } else if (key == "snapshot") {
      // "latest" / None, or one version per partition.
      const bool latest = v.kind == Kind::kNone || (v.kind == Kind::kString && v.s == "latest");
      o->snapshot_epoch = v.kind == Kind::kString && v.s == "epoch";
      o->snapshot = v.kind == Kind::kIntList ? v.list : std::vector<int64_t>();
      if (!latest && !o->snapshot_epoch && v.kind != Kind::kIntList)
        st = Bad(key, "\"latest\", \"epoch\" or one version per partition");
    } else if (key == "neg_temporal") {
      st = r.String(&name);
      if (st.ok()) st = sampler::ParseTemporalNegatives(name, &o->negative.temporal);
    } else if (key == "neg_amount") {
      st = r.Number(&o->negative.amount);
    } else {
      st = Status::InvalidArgument("unknown loader option '" + key + "'");
    }
    FANOUT_RETURN_IF_ERROR(st);
  }
  if (top_k > 0) {
    // PinSAGE: every hop keeps its top_k most visited nodes.
    if (!o->pinsage && !o->ppr)
      return Status::InvalidArgument(
          "top_k is for sampler='pinsage' (each hop's most visited nodes) or sampler='ppr'");
    o->fanouts.assign(o->fanouts.size(), top_k);
  }
  if (o->fanouts.empty() && o->edge_type_fanouts.empty())  // typed: hops from the per-type lists
    return Status::InvalidArgument("num_neighbors must name at least one hop");
  return Status::OK();
}

}  // namespace fanout::client
