// fanout-ctl's admin-endpoint commands: `stats` and `tenants` read each
// server's /stats (with the admin credential where the server has one) and
// print one table per server.
#include "client/tools/fanout_ctl_admin.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "rpc/local_export.h"
#include "rpc/rpc_client.h"

namespace fanout::ctl {

using fanout::Status;

std::string Human(double v, const char* unit) {
  char buf[32];
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fG%s", v / 1e9, unit);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM%s", v / 1e6, unit);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1fk%s", v / 1e3, unit);
  else
    std::snprintf(buf, sizeof buf, "%.1f%s", v, unit);
  return buf;
}

double Num(const nlohmann::json& j, const char* a, const char* b) {
  if (!j.contains(a) || j[a].is_null() || !j[a].contains(b) || !j[a][b].is_number()) return 0;
  return j[a][b].get<double>();
}

namespace {

// GET /stats of host:port, with the admin credential where `token` is one.
httplib::Result GetStatsReply(const std::string& host, int port, const std::string& token) {
  httplib::Client cli(host, port);
  cli.set_connection_timeout(3);
  cli.set_read_timeout(5);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  return cli.Get("/stats", headers);
}

// GET /stats of an admin address into *j; false (printed) where it fails.
bool GetStats(const std::string& addr, const std::string& token, nlohmann::json* j) {
  std::string host;
  int port = 0;
  Status st = fanout::rpc::ParseAddress(addr, &host, &port);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-ctl: %s\n", st.message().c_str());
    return false;
  }
  auto res = GetStatsReply(host, port, token);
  if (!res || res->status != 200) {
    std::string why = res ? "HTTP " + std::to_string(res->status) : httplib::to_string(res.error());
    if (res && res->status == 401)  // the server says what it needs (a short text line)
      why += ": " + fanout::rpc::PrintableText(res->body.substr(0, res->body.find('\n')), 300) +
             " (fanout-ctl --auth-token-file FILE)";
    std::fprintf(stderr, "fanout-ctl: %s: %s\n", addr.c_str(), why.c_str());
    return false;
  }
  try {
    *j = nlohmann::json::parse(res->body);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fanout-ctl: %s: bad /stats reply: %s\n", addr.c_str(), e.what());
    return false;
  }
  return true;
}

}  // namespace

// fanout-ctl tenants: each server's tenants (its /stats "tenants"): what each
// used, its share of the work beside its weight's, waits and refusals.
int Tenants(const std::vector<std::string>& servers, const std::string& token) {
  int failures = 0;
  for (const std::string& addr : servers) {
    nlohmann::json j;
    if (!GetStats(addr, token, &j)) {
      ++failures;
      continue;
    }
    const nlohmann::json& t = j.value("tenants", nlohmann::json::object());
    std::printf("%s: %s, %lld waiting, %lld running\n", addr.c_str(),
                t.value("scheduling", false) ? "tenants file (fair order)"
                                             : "no tenants file (the default tenant alone)",
                static_cast<long long>(t.value("waiting", 0LL)),
                static_cast<long long>(t.value("running", 0LL)));
    std::printf("  %-16s %-7s %6s %10s %10s %10s %10s %9s %9s %8s %8s %6s %6s %10s\n", "tenant",
                "class", "weight", "requests", "bytes", "edges", "featB", "wait p50", "wait p99",
                "refused", "busy", "share", "w.share", "local B");
    for (const auto& x : t.value("tenants", nlohmann::json::array())) {
      std::printf(
          "  %-16s %-7s %6.2f %10lld %10s %10s %10s %7.2fms %7.2fms %8lld %8lld %6.3f "
          "%6.3f %10s\n",
          x.value("tenant", "?").c_str(), x.value("class", "?").c_str(), x.value("weight", 0.0),
          static_cast<long long>(x.value("requests", 0LL)), Human(x.value("bytes", 0.0)).c_str(),
          Human(x.value("sampled_edges", 0.0)).c_str(),
          Human(x.value("feature_bytes", 0.0)).c_str(), x.value("queue_wait_p50_s", 0.0) * 1e3,
          x.value("queue_wait_p99_s", 0.0) * 1e3,
          static_cast<long long>(x.value("refused_quota", 0LL)),
          static_cast<long long>(x.value("refused_busy", 0LL)), x.value("share", 0.0),
          x.value("weight_share", 0.0),
          Human(x.contains("local") ? x["local"].value("bytes", 0.0) : 0.0).c_str());
    }
  }
  return failures == 0 ? 0 : 1;
}

int Stats(const std::vector<std::string>& servers, const std::string& token) {
  std::printf("%-22s %-9s %-5s %-22s %10s %10s %10s %10s %10s %9s %9s %9s\n", "server", "state",
              "part", "nodes", "edges/1s", "edges/10s", "edges/60s", "featB/10s", "req/10s",
              "p50 ms", "p99 ms", "RSS");
  int failures = 0;
  std::map<std::string, int64_t> away;  // failovers away from each replica, summed over the servers
  for (const std::string& addr : servers) {
    std::string host;
    int port = 0;
    Status st = fanout::rpc::ParseAddress(addr, &host, &port);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-ctl: %s\n", st.message().c_str());
      ++failures;
      continue;
    }
    auto res = GetStatsReply(host, port, token);
    if (!res) {
      std::printf("%-22s %-9s (no answer: %s)\n", addr.c_str(), "down",
                  httplib::to_string(res.error()).c_str());
      ++failures;
      continue;
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(res->body);
    } catch (const std::exception& e) {
      std::printf("%-22s %-9s (bad /stats reply: %s)\n", addr.c_str(), "?", e.what());
      ++failures;
      continue;
    }
    const auto& tp = j.value("throughput", nlohmann::json::object());
    const auto& p = j.value("partition", nlohmann::json::object());
    std::string part = p.empty() ? "-"
                                 : std::to_string(p.value("partition", 0)) + "/" +
                                       std::to_string(p.value("num_parts", 0));
    std::string nodes = p.empty() ? "-"
                                  : "[" + std::to_string(p.value("node_begin", 0LL)) + ", " +
                                        std::to_string(p.value("node_end", 0LL)) + ")";
    double p50 = 0, p99 = 0;
    if (j.contains("latency") && j["latency"].contains("sample_neighbors")) {
      p50 = j["latency"]["sample_neighbors"].value("p50_ms", 0.0);
      p99 = j["latency"]["sample_neighbors"].value("p99_ms", 0.0);
    }
    std::printf(
        "%-22s %-9s %-5s %-22s %10s %10s %10s %10s %10s %9.3f %9.3f %9s\n", addr.c_str(),
        j.value("state", "?").c_str(), part.c_str(), nodes.c_str(),
        Human(Num(tp, "1s", "sampled_edges_per_s")).c_str(),
        Human(Num(tp, "10s", "sampled_edges_per_s")).c_str(),
        Human(Num(tp, "60s", "sampled_edges_per_s")).c_str(),
        Human(Num(tp, "10s", "feature_bytes_per_s"), "B").c_str(),
        Human(Num(tp, "10s", "requests_per_s")).c_str(), p50, p99,
        Human(j.value("memory", nlohmann::json::object()).value("rss_bytes", 0.0), "B").c_str());
    // Requests and bytes by path, and what the data plane's endpoints use.
    if (j.contains("totals") && j["totals"].contains("by_path")) {
      std::string line = "    by path:";
      for (const auto& [name, v] : j["totals"]["by_path"].items())
        line += " " + name + " " + Human(v.value("requests", 0.0)) + " req " +
                Human(v.value("reply_bytes", 0.0), "B") + ";";
      const auto& dp = j.value("data_plane", nlohmann::json::object());
      if (!dp.value("enabled", false)) {
        line += " data plane off";
      } else {
        line += " data plane :" + std::to_string(dp.value("port", 0)) + " (UCX " +
                dp.value("ucx_version", "?") + ", memory";
        for (const auto& m : dp.value("memory_types", nlohmann::json::array()))
          line += " " + m.get<std::string>();
        line += ", " + std::to_string(dp.value("endpoints_open", 0)) + " endpoints, held " +
                Human(dp.value("held_bytes", 0.0), "B") + ")";
        const auto& mem = j.value("memory", nlohmann::json::object());
        line += "; RSS own " + Human(mem.value("rss_anon_bytes", 0.0), "B") + " + shared " +
                Human(mem.value("rss_shmem_bytes", 0.0), "B") + " + files " +
                Human(mem.value("rss_file_bytes", 0.0), "B") + ", requests held " +
                Human(mem.value("request_held_bytes", 0.0), "B") + " of " +
                Human(mem.value("request_budget_bytes", 0.0), "B");
        std::set<std::string> tls;
        for (const auto& e : dp.value("endpoints", nlohmann::json::array()))
          tls.insert(e.value("transports", ""));
        for (const auto& t : tls)
          if (!t.empty()) line += " [" + t + "]";
      }
      const nlohmann::json lo = j.value("local", nlohmann::json::object());
      if (lo.value("enabled", false)) {
        line += "; local export " + lo.value("socket", std::string()) + " (" +
                Human(lo.value("bytes", 0.0), "B") + ", handed " +
                std::to_string(lo.value("handed", 0)) + ", refused " +
                std::to_string(lo.value("refused_uid", 0) + lo.value("refused_token", 0) +
                               lo.value("malformed", 0) + lo.value("timed_out", 0) +
                               lo.value("overloaded", 0)) +
                ")";
      }
      std::printf("%s\n", line.c_str());
    }
    // A live partition: its committed version, write rate, log and delta.
    if (j.contains("live") && j["live"].is_object()) {
      const auto& lv = j["live"];
      const auto& log = lv.value("log", nlohmann::json::object());
      const auto& delta = lv.value("delta", nlohmann::json::object());
      std::printf(
          "    live: version %lld committed, %s updates/s (10s), %lld batches (%lld retries, "
          "%lld refused), log %s in %lld syncs, delta %s (%lld rows, %lld added edges, %lld "
          "removals)\n",
          static_cast<long long>(lv.value("committed_version", 0LL)),
          Human(Num(tp, "10s", "updates_per_s")).c_str(),
          static_cast<long long>(lv.value("batches", 0LL)),
          static_cast<long long>(lv.value("retries", 0LL)),
          static_cast<long long>(lv.value("refused", 0LL)),
          Human(log.value("bytes", 0.0), "B").c_str(),
          static_cast<long long>(log.value("syncs", 0LL)),
          Human(delta.value("bytes", 0.0), "B").c_str(),
          static_cast<long long>(delta.value("rows_touched", 0LL)),
          static_cast<long long>(delta.value("added_edges", 0LL)),
          static_cast<long long>(delta.value("removals", 0LL)));
      const auto& cp = lv.value("compaction", nlohmann::json::object());
      if (!cp.empty()) {
        const long long kept = cp.value("retained_version", -1LL);
        std::printf("    live base: version %lld, %lld compactions (last %.2f s)%s%s%s\n",
                    static_cast<long long>(cp.value("base_version", 0LL)),
                    static_cast<long long>(cp.value("compactions", 0LL)),
                    cp.value("last_seconds", 0.0),
                    kept >= 0 ? (", the base of version " + std::to_string(kept) + " kept (" +
                                 Human(cp.value("retained_bytes", 0.0), "B") + ")")
                                    .c_str()
                              : "",
                    cp.value("last_error", std::string()).empty() ? "" : "; last compaction: ",
                    cp.value("last_error", std::string()).c_str());
      }
      const auto& bf = lv.value("base_file", nlohmann::json::object());
      if (!bf.empty() && (bf.value("writes", 0LL) > 0 || bf.value("read_at_start", 0LL) > 0 ||
                          !bf.value("last_error", std::string()).empty()))
        std::printf(
            "    live base file: version %lld on disk (%s, %lld written, last in %.2f s, read at "
            "start: version %lld), the log from version %lld%s%s\n",
            static_cast<long long>(bf.value("version", 0LL)),
            Human(bf.value("bytes", 0.0), "B").c_str(),
            static_cast<long long>(bf.value("writes", 0LL)), bf.value("last_seconds", 0.0),
            static_cast<long long>(bf.value("read_at_start", 0LL)),
            static_cast<long long>(log.value("base_version", 0LL)),
            bf.value("last_error", std::string()).empty() ? "" : "; last write: ",
            bf.value("last_error", std::string()).c_str());
      // Replicas: a primary lists its followers, a follower its primary.
      const auto& rp = lv.value("replication", nlohmann::json::object());
      if (rp.value("role", std::string()) == "follower") {
        const std::string err = rp.value("last_error", std::string());
        std::printf("    live replica: follows %s as %s, %s, %lld versions behind%s%s\n",
                    rp.value("primary", std::string()).c_str(),
                    rp.value("name", std::string()).c_str(),
                    rp.value("following", false) ? "following" : "STOPPED following",
                    static_cast<long long>(rp.value("lag", 0LL)),
                    err.empty() ? "" : "; last: ", err.c_str());
      } else if (rp.contains("followers") && !rp["followers"].empty()) {
        std::string line = "    live replicas (primary):";
        for (const auto& f : rp["followers"])
          line += " " + f.value("name", std::string()) + " " +
                  (f.value("in_sync", false) ? "in sync" : "out of sync") + " (" +
                  std::to_string(f.value("lag", 0LL)) + " behind)";
        std::printf("%s\n", line.c_str());
      }
    }
    // Connections: the server's limits at work.
    if (j.contains("connections")) {
      const auto& c = j["connections"];
      std::printf(
          "    connections: %lld open of %lld (peak %lld), %lld accepted, %lld refused at the "
          "limit, %lld idle "
          "ones closed to make room, %lld idle timeouts, %lld frame timeouts, %lld closed waiting "
          "for request "
          "memory (%s in flight of %s)\n",
          c.value("open", 0LL), c.value("max_connections", 0LL), c.value("peak_open", 0LL),
          c.value("accepted", 0LL), c.value("refused", 0LL), c.value("evicted_idle", 0LL),
          c.value("idle_timeouts", 0LL), c.value("frame_timeouts", 0LL),
          c.value("memory_refused", 0LL), Human(c.value("inflight_bytes", 0.0), "B").c_str(),
          Human(c.value("max_inflight_bytes", 0.0), "B").c_str());
    }
    // What clients reported when they moved here: retries on this server,
    // failovers to it, and from which replica.
    if (j.contains("failovers")) {
      const auto& f = j["failovers"];
      std::string line = "    clients: " + std::to_string(f.value("retries_in", 0LL)) +
                         " retries here after a failure, " +
                         std::to_string(f.value("failovers_in", 0LL)) + " failovers to here";
      std::string from;
      const nlohmann::json origins =
          f.value("from", nlohmann::json::object());  // named: items() refers into it
      for (const auto& [origin, n] : origins.items()) {
        from +=
            (from.empty() ? " (from " : ", ") + origin + " x" + std::to_string(n.get<int64_t>());
        away[origin] += n.get<int64_t>();
      }
      if (!from.empty()) from += ")";
      const std::string reason = f.value("last_reason", "");
      std::printf("%s%s%s\n", line.c_str(), from.c_str(),
                  reason.empty() ? "" : ("; last reason: " + reason).c_str());
    }
  }
  // Failovers away from each replica, as the servers above were told.
  if (!away.empty()) {
    std::printf("failovers away from each replica (reported to the servers above):\n");
    for (const auto& [origin, n] : away)
      std::printf("    %-30s %lld\n", origin.c_str(), static_cast<long long>(n));
  }
  return failures ? 1 : 0;
}

}  // namespace fanout::ctl
