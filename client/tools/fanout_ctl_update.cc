#include "client/tools/fanout_ctl_update.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "client/update_writer.h"
#include "common/auth_token.h"

namespace fanout::ctl {

namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream s(line);
  while (std::getline(s, cell, ',')) {
    const size_t b = cell.find_first_not_of(" \t\r"), e = cell.find_last_not_of(" \t\r");
    out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  return out;
}

bool ParseInt(const std::string& s, int64_t* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *v = x;
  return true;
}

bool ParseFloat(const std::string& s, float* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtof(s.c_str(), &end);
  return errno == 0 && *end == '\0';
}

}  // namespace

int Update(const UpdateOptions& o, const rpc::RpcOptions& options) {
  client::ClusterSpec spec;
  Status st = client::ReadClusterFile(o.cluster_file, &spec);
  // The command line's credentials, else the cluster file's.
  rpc::RpcOptions ro = options;
  if (st.ok() && ro.tls.ca.empty()) ro.tls = spec.tls;
  if (st.ok() && ro.auth_token.empty() && !spec.auth_token_file.empty())
    st = ReadAuthTokenFile(spec.auth_token_file, 1, &ro.auth_token);
  std::unique_ptr<client::UpdateWriter> w;
  if (st.ok()) st = client::UpdateWriter::Connect(spec, ro, &w);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-ctl update: %s\n", st.ToString().c_str());
    return 1;
  }
  const rpc::RemotePartitionInfo& info = w->info(0);
  const bool float_rows = info.feature_dtype == "float32";
  std::ifstream file;
  std::istream* in = &std::cin;
  if (o.input != "-") {
    file.open(o.input);
    if (!file) {
      std::fprintf(stderr, "fanout-ctl update: cannot open %s\n", o.input.c_str());
      return 1;
    }
    in = &file;
  }
  const std::string name = o.input == "-" ? "stdin" : o.input;
  client::GraphUpdates u;
  int64_t lineno = 0, first_line = 1, ops = 0, batches = 0, total = 0;
  std::vector<int64_t> versions, last(static_cast<size_t>(w->num_parts()), -1);
  const auto t0 = std::chrono::steady_clock::now();
  auto flush = [&]() -> bool {
    if (u.empty()) return true;
    Status s = w->Apply(u, o.undirected, &versions);
    for (size_t p = 0; p < versions.size(); ++p)
      if (versions[p] >= 0) last[p] = versions[p];
    if (!s.ok()) {
      std::fprintf(stderr, "fanout-ctl update: %s lines %lld-%lld: %s\n", name.c_str(),
                   static_cast<long long>(first_line), static_cast<long long>(lineno),
                   s.ToString().c_str());
      return false;
    }
    ++batches;
    total += ops;
    if (!o.quiet) {
      std::string vs;
      for (size_t p = 0; p < versions.size(); ++p)
        if (versions[p] >= 0) vs += " p" + std::to_string(p) + "=" + std::to_string(versions[p]);
      std::fprintf(stderr,
                   "fanout-ctl update: batch %lld (lines %lld-%lld, %lld operations): "
                   "versions%s\n",
                   static_cast<long long>(batches), static_cast<long long>(first_line),
                   static_cast<long long>(lineno), static_cast<long long>(ops), vs.c_str());
    }
    u = client::GraphUpdates();
    ops = 0;
    first_line = lineno + 1;
    return true;
  };
  std::string line;
  while (std::getline(*in, line)) {
    ++lineno;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      if (ops == 0) first_line = lineno + 1;
      continue;
    }
    const std::vector<std::string> f = SplitCsv(line);
    auto bad = [&](const std::string& why) {
      std::fprintf(stderr, "fanout-ctl update: %s line %lld: %s\n", name.c_str(),
                   static_cast<long long>(lineno), why.c_str());
      return 2;
    };
    const std::string& op = f[0];
    if (op == "add" || op == "remove") {
      const size_t most = op == "add" ? 6 : 4;
      if (f.size() < 3 || f.size() > most)
        return bad(op + " takes " +
                   (op == "add" ? "SRC,DST[,TIME[,WEIGHT[,TYPE]]]" : "SRC,DST[,TYPE]"));
      live::EdgeUpdate e;
      int64_t type = op == "add" ? 0 : -1;
      if (!ParseInt(f[1], &e.src) || !ParseInt(f[2], &e.dst))
        return bad("SRC and DST must be integers");
      if (op == "add") {
        if (f.size() > 3 && !ParseInt(f[3], &e.time)) return bad("TIME must be an integer");
        if (f.size() > 4 && !ParseFloat(f[4], &e.weight)) return bad("WEIGHT must be a number");
        if (f.size() > 5 && !ParseInt(f[5], &type)) return bad("TYPE must be an integer");
      } else if (f.size() > 3 && !ParseInt(f[3], &type)) {
        return bad("TYPE must be an integer");
      }
      e.type = static_cast<int32_t>(type);
      (op == "add" ? u.add_edges : u.remove_edges).push_back(e);
    } else if (op == "label") {
      int64_t node = 0, value = 0;
      if (f.size() != 3 || !ParseInt(f[1], &node) || !ParseInt(f[2], &value))
        return bad("label takes NODE,VALUE (integers)");
      u.label_nodes.push_back(node);
      u.labels.push_back(value);
    } else if (op == "features") {
      if (!float_rows)
        return bad("features lines set float32 rows; this dataset's rows are " +
                   info.feature_dtype);
      int64_t node = 0;
      if (f.size() != 3 || !ParseInt(f[1], &node))
        return bad("features takes NODE,V1 V2 ... (the row's values, space-separated)");
      std::istringstream vs(f[2]);
      std::string tok;
      std::vector<float> row;
      float x = 0;
      while (vs >> tok) {
        if (!ParseFloat(tok, &x)) return bad("'" + tok + "' is not a number");
        row.push_back(x);
      }
      if (static_cast<int64_t>(row.size()) != info.feature_dim)
        return bad(std::to_string(row.size()) + " values; this dataset's rows have " +
                   std::to_string(info.feature_dim));
      u.feature_nodes.push_back(node);
      u.row_bytes = info.feature_dim * 4;
      u.feature_bytes.append(reinterpret_cast<const char*>(row.data()), row.size() * 4);
    } else {
      return bad("unknown operation '" + op + "' (add, remove, label, features)");
    }
    if (++ops >= o.batch && !flush()) return 1;
  }
  if (!flush()) return 1;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string vs;
  for (size_t p = 0; p < last.size(); ++p)
    vs += (p ? ", " : "") + std::to_string(p) + ": " + std::to_string(last[p]);
  std::printf("%lld operations in %lld batches from %s in %.2f s (%.0f/s); versions {%s}\n",
              static_cast<long long>(total), static_cast<long long>(batches), name.c_str(), s,
              s > 0 ? static_cast<double>(total) / s : 0.0, vs.c_str());
  return 0;
}

}  // namespace fanout::ctl
