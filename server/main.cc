// fanout-server: serves one partition of a Fanout dataset.
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <tuple>

#include "common/auth_token.h"
#include "common/byte_size.h"
#include "common/cpu.h"
#include "common/version.h"
#include "rpc/data_plane.h"
#include "server/partition_server.h"
#include "server/ready_record.h"

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-server: load partition K of a Fanout dataset (fanout-partition output) and serve\n"
      "neighbor sampling and feature lookups over Thrift (and bulk replies over the UCX data "
      "plane:\n"
      "shared memory on one host, RDMA or tcp between hosts), with an admin HTTP endpoint\n"
      "(/metrics Prometheus text, /stats JSON throughput, /healthz, / live page).\n"
      "SIGTERM or SIGINT: stop accepting, finish requests in flight, exit 0."};
  app.set_version_flag("--version", fanout::VersionLine("fanout-server"));
  // Connections need descriptors: take the hard open-file limit before the
  // connection limit's default is sized from it.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  fanout::server::ServerOptions o;
  const fanout::rpc::ConnectionLimits defaults = fanout::rpc::ConnectionLimits::Defaults();
  int idle_timeout_s = static_cast<int>(defaults.idle_timeout_ms / 1000);
  double frame_timeout_s = defaults.frame_timeout_ms / 1000.0;
  int64_t max_inflight_mib = defaults.max_inflight_bytes >> 20;
  int malloc_arenas = 0;
  app.add_option("--dataset", o.dataset_dir, "Dataset folder written by fanout-partition")
      ->required();
  app.add_option("--partition", o.partition, "Partition to serve")
      ->required()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--port", o.port, "RPC port (0 = any free port, printed when ready)")
      ->required()
      ->check(CLI::Range(0, 65535));
  app.add_option("--admin-port", o.admin_port, "Admin HTTP port (0 = any free port, -1 = none)")
      ->required()
      ->check(CLI::Range(-1, 65535));
  app.add_option("--bind", o.bind,
                 "Address to listen on (default loopback only; 0.0.0.0 for all interfaces)")
      ->default_val("127.0.0.1");
  app.add_option("--threads", o.threads,
                 "Threads that split a large request (default: the number of CPUs)")
      ->default_val(0)
      ->check(CLI::Range(0, 1024));
  app.add_option("--max-ids", o.max_ids_per_request, "Most ids accepted in one request")
      ->default_val(int64_t{1} << 22)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--max-fanout", o.max_fanout, "Largest fanout accepted")
      ->default_val(100000)
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--max-frame-mib", o.max_frame_bytes,
                 "Largest request frame in MiB; larger ones close the connection")
      ->default_val(256)
      ->check(CLI::Range(1, 2047));
  int64_t max_reply_mib = 1024;
  app.add_option("--max-reply-mib", max_reply_mib,
                 "Largest feature reply one request may ask for (ids x row bytes), in MiB; larger "
                 "requests are "
                 "refused naming the limit")
      ->default_val(1024)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  std::string data_plane = fanout::rpc::DataPlaneBuilt() ? "ucx" : "off";
  app.add_option(
         "--data-plane", data_plane,
         "Bulk replies over the UCX data plane beside Thrift: ucx or off (default ucx in builds "
         "with UCX; off under TLS, as the data plane is not encrypted, unless given)")
      ->check(CLI::IsMember({"ucx", "off"}));
  app.add_option("--data-port", o.data_port,
                 "UCX data-plane port (0 = any free port, printed when ready)")
      ->default_val(0)
      ->check(CLI::Range(0, 65535));
  app.add_option("--data-threads", o.data_threads,
                 "UCX data-plane progress threads (0 = min(CPUs, 4))")
      ->default_val(0)
      ->check(CLI::Range(0, 64));
  app.add_option("--expect-parts", o.expected_num_parts,
                 "Refuse a dataset that does not have this many partitions")
      ->default_val(-1);
  app.add_option("--max-connections", o.limits.max_connections,
                 "RPC connections open at once; at the limit a new one replaces the longest-idle "
                 "one, or is "
                 "refused (with the reason, counted) when every connection is inside a request (0 "
                 "= no limit)")
      ->default_val(defaults.max_connections)
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--idle-timeout-s", idle_timeout_s,
                 "Close an RPC connection idle this long (0 = never)")
      ->default_val(idle_timeout_s)
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--frame-timeout-s", frame_timeout_s,
                 "A request must arrive whole, and a reply be taken, within this long (slow "
                 "clients; 0 = never)")
      ->default_val(frame_timeout_s)
      ->check(CLI::Range(0.0, 1e7));
  app.add_option(
         "--max-inflight-mib", max_inflight_mib,
         "Request bytes all connections may hold at once, Thrift and the data plane together; "
         "more waits (default a quarter of memory; 0 = no limit)")
      ->default_val(max_inflight_mib)
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--malloc-arenas", malloc_arenas,
                 "glibc malloc arenas (0 = 2 per CPU): fewer keep memory bounded under many "
                 "connection threads")
      ->default_val(0)
      ->check(CLI::Range(0, 1024));
  std::string auth_token_file, ready_file;
  long long parent_pid = 0;
  app.add_option("--tls-cert", o.tls_cert,
                 "Serve RPC over TLS with this certificate (PEM; with --tls-key)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", o.tls_key, "The TLS certificate's private key (PEM)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-ca", o.tls_ca,
                 "Require client certificates signed by this CA (PEM): mutual TLS")
      ->check(CLI::ExistingFile);
  std::string admin_token_file;
  app.add_option("--admin-token-file", admin_token_file,
                 "The admin credential (the file's first line, at least 16 characters): the admin "
                 "endpoint's /stats, /history and / need it (Authorization: Bearer TOKEN or "
                 "?token=); /metrics and /healthz stay open. Without it the --auth-token-file "
                 "token is the admin credential, and a server with --tenants refuses those pages "
                 "(they show every tenant's name and usage)")
      ->check(CLI::ExistingFile);
  app.add_option("--auth-token-file", auth_token_file,
                 "Require this file's token (first line) on every RPC connection and on the admin "
                 "endpoint's /stats "
                 "and / (Authorization: Bearer TOKEN or ?token=); /metrics and /healthz stay open. "
                 "The data plane "
                 "then serves only clients that authenticated")
      ->check(CLI::ExistingFile);
  app.add_option(
      "--local-socket", o.local_socket,
      "Export the partition to clients on this host: its arrays in sealed read-only shared memory, "
      "handed "
      "out on this Unix socket (default: under $XDG_RUNTIME_DIR/fanout, /run/fanout as root, else "
      "/tmp/fanout-UID, named by dataset id, partition and RPC port; printed when ready); off = "
      "none");
  app.add_option("--features", o.features,
                 "Where feature rows live: memory, disk (the dataset's feature file, written by "
                 "fanout-partition --feature-file, read with io_uring and O_DIRECT under a cache "
                 "of --feature-memory bytes) or auto (memory where the partition fits "
                 "--memory-limit, disk otherwise); the ready line says which")
      ->default_val("auto")
      ->check(CLI::IsMember({"memory", "disk", "auto"}));
  std::string feature_memory_text, memory_limit_text;
  app.add_option("--feature-memory", feature_memory_text,
                 "The disk tier's row cache in bytes (4G, 512M, ...): the hot set (highest degree "
                 "first) and a SIEVE cache of the rows read since, never more (default: a quarter "
                 "of the partition's feature bytes, within the memory limit)");
  app.add_option("--feature-hot-fraction", o.feature_hot_fraction,
                 "The hot set's share of --feature-memory (the rest is the SIEVE cache)")
      ->default_val(0.9)
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--feature-queue-depth", o.feature_queue_depth,
                 "Disk reads in flight per serving thread (io_uring queue depth)")
      ->default_val(32)
      ->check(CLI::Range(1, 4096));
  app.add_option("--edge-ids", o.edge_ids,
                 "Edge ids: memory (held from the start), on-demand (read from the store on the "
                 "first request that asks for them: link prediction, edge features) or auto "
                 "(held where they fit the memory limit)")
      ->default_val("auto")
      ->check(CLI::IsMember({"memory", "on-demand", "auto"}));
  app.add_option("--index-bits", o.index_bits,
                 "Width of the neighbor ids held: 32, 64, or 0 (default: 32 where the dataset has "
                 "fewer than 2^31 nodes)")
      ->default_val(0)
      ->check(CLI::IsMember({0, 32, 64}));
  app.add_option("--memory-limit", memory_limit_text,
                 "The memory the tiers are planned against (4G, 24GiB, ...; default: the cgroup's "
                 "limit, else physical memory)");
  app.add_option("--tenants", o.tenants_file,
                 "Tenants file (one 'tenant NAME token=... weight=W class=batch|online "
                 "max_...=...' per line; docs/TENANTS.md): requests are charged to the tenant "
                 "their token or TLS client subject names (none: `default`), served in weighted "
                 "fair order and kept to its quotas; SIGHUP reloads it (a bad file keeps the old "
                 "table, naming the line)")
      ->check(CLI::ExistingFile);
  app.add_flag(
      "--online-io-first,!--no-online-io-first", o.online_io_first,
      "On by default. With --tenants naming online tenants: while an online request's "
      "feature reads wait for the device, batch requests keep to a budget of reads in flight "
      "(all of them together; --io-gate-budget), so a query's reads do not queue behind a "
      "hundred batch reads (docs/TENANTS.md). With --no-online-io-first only CPU priority "
      "separates the classes");
  app.add_option("--io-gate-budget", o.io_gate_budget,
                 "With --online-io-first: batch reads in flight at most while online reads go "
                 "on. 0 (default) adapts it to the device: online reads' 99th-percentile "
                 "latency is held near --io-gate-latency-factor x their latency with batch held "
                 "to one read (probed every 10 s), cutting the budget above it and raising it "
                 "well below; N fixes it at N, held only while an online read waits")
      ->default_val(0)
      ->check(CLI::Range(0, 65536));
  app.add_option("--io-gate-latency-factor", o.io_gate_latency_factor,
                 "With --io-gate-budget 0: the online reads' latency target as a multiple of "
                 "their latency with batch held to one read")
      ->default_val(1.5)
      ->check(CLI::Range(1.05, 100.0));
  app.add_option("--scheduler-slots", o.scheduler_slots,
                 "With --tenants: requests computed at once, in fair order (0 = the usable CPUs; "
                 "as many more for online tenants' work only)")
      ->default_val(0)
      ->check(CLI::Range(0, 1024));
  app.add_option("--live-dir", o.live_dir,
                 "Live graph: take updates (apply_updates; fanout-ctl update) into this "
                 "partition, logged durably in this folder (part-<k>.updates.log, made if "
                 "missing, replayed at start; a torn tail is cut and said, a damaged log "
                 "refused); every read is then at a version. Writers need a tenant with "
                 "write=yes (or, without --tenants, an authenticated connection). Reads at a "
                 "version go over Thrift and the UCX data plane; for now a live server offers "
                 "no same-host export (docs/DESIGN.md, \"Live updates\")");
  app.add_option("--live-compact-ratio", o.live_compact_ratio,
                 "Live: fold the delta into a new base in the background when its edge changes "
                 "reach this fraction of the base's edges (0 = not by size of the graph)")
      ->default_val(0.1)
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--live-compact-mib", o.live_compact_mib,
                 "Live: ... or when the delta holds this many MiB (0 = not by bytes)")
      ->default_val(256)
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--live-compact-max-mib", o.live_compact_max_mib,
                 "Live: the most MiB a compaction's new base may take (0 = no bound); a "
                 "compaction that would need more is skipped and said in /stats")
      ->default_val(0)
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--live-checkpoint-mib", o.live_checkpoint_mib,
                 "Live: after a compaction, once the update log holds this many MiB, write the "
                 "new base to the live folder (part-<k>.base) and cut the log's records at or "
                 "below its version, so that a restart replays only what came after (0 = after "
                 "every compaction, -1 = never)")
      ->default_val(64)
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 30));
  app.add_option("--live-retain-s", o.live_retain_s,
                 "Live: after a compaction, keep the generation before for reads at older versions "
                 "(a pinned epoch) until none came for this many seconds")
      ->default_val(10)
      ->check(CLI::Range(0.0, 86400.0));
  std::string follow_token_file;
  app.add_option("--live-follow", o.live_follow,
                 "Live: make this server a follower replica of the primary at HOST:PORT (the "
                 "same partition of the same dataset, live too): it applies the primary's update "
                 "log in the primary's order, serves once it has caught up, and refuses writes "
                 "(they go to the primary, which acknowledges a write once its followers in sync "
                 "hold it too)");
  app.add_option("--live-follow-token-file", follow_token_file,
                 "Live: the token this follower presents to its primary (the primary's auth "
                 "token, or the token of a tenant with write=yes)");
  app.add_option("--live-replica-name", o.live_replica_name,
                 "Live: this follower's name in its primary's /stats and /metrics (default: "
                 "host:port, or host:dir<hash of --live-dir> with --port 0)");
  app.add_option("--live-catch-up-s", o.live_catch_up_s,
                 "Live: how long a follower may take to catch up with its primary at start "
                 "before it gives up (0 = serve what it holds at once and catch up meanwhile)")
      ->default_val(60)
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--live-replica-wait-ms", o.live_replica_wait_ms,
                 "Live: how long a primary's write waits for each in-sync follower to hold it; "
                 "one that has not by then falls out of sync (said) and is not waited on until "
                 "it has caught up")
      ->default_val(1000)
      ->check(CLI::Range(1, 600000));
  app.add_option("--live-feed-mib", o.live_feed_mib,
                 "Live: MiB of update records a primary keeps for followers that fall behind "
                 "(one further behind starts from a copy of the primary's live folder)")
      ->default_val(256)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  std::vector<long long> local_uids;
  app.add_option("--local-uids", local_uids,
                 "Uids allowed to map the export (default: this server's own uid); the auth token "
                 "is also required "
                 "where the server has one")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  app.add_option(
      "--ready-file", ready_file,
      "Once serving, write the ready record to this file, whole (written aside, then renamed): "
      "{\"fanout_server_ready\": {pid, dataset, partition, num_parts, host, rpc_port, admin_port, "
      "data_port, local_socket, version}} (docs/DEPLOY.md, \"The ready record\"); the same record "
      "is printed as one JSON line after the ready line. A file left there by an earlier run is "
      "removed at start, and the server removes its own on exit, so a launcher that waits for "
      "the file is never answered by a stale one");
  app.add_option("--parent-pid", parent_pid,
                 "Exit (SIGTERM) when this process, the server's parent, exits: for launchers that "
                 "must not leave servers behind (fanout.LocalCluster)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  // Not dumpable: no core file (it would hold feature rows and credentials), and no
  // process of this uid can ptrace the server or open /proc/<pid>/fd/N (the export's
  // memfd, the feature file) or /proc/<pid>/mem; /stats reports the flag
  // (docs/RELIABILITY.md says what a same-uid process can still do).
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    std::fprintf(stderr, "fanout-server: error: prctl(PR_SET_DUMPABLE, 0): %s\n",
                 std::strerror(errno));
    return 1;
  }
  if (parent_pid > 0) {
    // Ask for SIGTERM at the parent's death, then check it has not died
    // already (before the request was in place).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != static_cast<pid_t>(parent_pid)) {
      std::fprintf(stderr,
                   "fanout-server: error: --parent-pid %lld is not running (parent is %d)\n",
                   parent_pid, static_cast<int>(getppid()));
      return 2;
    }
  }
  for (long long u : local_uids) o.local_uids.push_back(static_cast<uid_t>(u));
  for (auto [text, dst, flag] :
       {std::tuple{&feature_memory_text, &o.feature_memory_bytes, "--feature-memory"},
        std::tuple{&memory_limit_text, &o.memory_limit_bytes, "--memory-limit"}}) {
    if (text->empty()) continue;
    if (*text == "0" && dst == &o.feature_memory_bytes) {  // no cache: every row from the file
      *dst = 0;
      continue;
    }
    fanout::Status st = fanout::ParseByteSize(*text, dst);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-server: error: %s: %s\n", flag, st.message().c_str());
      return 2;
    }
  }
  o.max_frame_bytes <<= 20;
  o.max_reply_bytes = max_reply_mib << 20;
  if (!auth_token_file.empty()) {
    fanout::Status st = fanout::ReadAuthTokenFile(auth_token_file, 16, &o.auth_token);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-server: error: --auth-token-file %s\n", st.message().c_str());
      return 2;
    }
  }
  if (!follow_token_file.empty()) {
    fanout::Status st = fanout::ReadAuthTokenFile(follow_token_file, 16, &o.live_follow_token);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-server: error: --live-follow-token-file %s\n",
                   st.message().c_str());
      return 2;
    }
  }
  if (!o.live_follow.empty() && o.live_dir.empty()) {
    std::fprintf(stderr,
                 "fanout-server: error: --live-follow needs --live-dir (a follower keeps "
                 "its own update log)\n");
    return 2;
  }
  if (!admin_token_file.empty()) {
    fanout::Status st = fanout::ReadAuthTokenFile(admin_token_file, 16, &o.admin_token);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-server: error: --admin-token-file %s\n", st.message().c_str());
      return 2;
    }
  }
  // The data plane is not encrypted: under TLS it runs only when asked for.
  if (!o.tls_cert.empty() && app.count("--data-plane") == 0) data_plane = "off";
  o.limits.idle_timeout_ms = int64_t{idle_timeout_s} * 1000;
  o.limits.frame_timeout_ms = static_cast<int64_t>(frame_timeout_s * 1000);
  o.limits.max_inflight_bytes = max_inflight_mib << 20;
  if (o.limits.max_inflight_bytes > 0 && o.limits.max_inflight_bytes < o.max_frame_bytes) {
    std::fprintf(
        stderr,
        "fanout-server: error: --max-inflight-mib %lld is below --max-frame-mib %lld: no request "
        "of the largest size could ever be held\n",
        static_cast<long long>(max_inflight_mib), static_cast<long long>(o.max_frame_bytes >> 20));
    return 2;
  }
  // glibc gives each thread that allocates its own arena (up to 8 per CPU);
  // with a thread per connection, memory grows with connection churn.
  mallopt(M_ARENA_MAX, malloc_arenas > 0 ? malloc_arenas : 2 * fanout::UsableCpuCount());
  o.data_plane = data_plane == "ucx";
  if (o.data_plane && !fanout::rpc::DataPlaneBuilt()) {
    std::fprintf(
        stderr,
        "fanout-server: error: --data-plane ucx, but this build has no UCX (FANOUT_WITH_UCX)\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // Handle SIGTERM/SIGINT in this thread only: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // reloads the tenants file
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // A record left by an earlier run must not answer a launcher waiting for this one.
  if (!ready_file.empty() && unlink(ready_file.c_str()) != 0 && errno != ENOENT) {
    std::fprintf(stderr, "fanout-server: error: --ready-file: cannot remove the old %s: %s\n",
                 ready_file.c_str(), std::strerror(errno));
    return 2;
  }
  fanout::server::PartitionServer server(o);
  fanout::Status st = server.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-server: error: %s\n", st.ToString().c_str());
    return 1;
  }
  const auto& meta = server.data().meta;
  const auto& d = server.view();
  int64_t rss = fanout::ResidentSetBytes();
  std::printf(
      "fanout-server ready: dataset %s partition %d/%d nodes [%lld, %lld) %lld edges; loaded in "
      "%.2f s; "
      "arrays %.1f MiB, RSS %.1f MiB (%.2fx); rpc %s:%d admin %s data %s local %s; at most %d "
      "connections; memory: %s\n",
      meta.name.c_str(), d.part, meta.num_parts, static_cast<long long>(d.node_begin),
      static_cast<long long>(d.node_end), static_cast<long long>(d.num_edges()),
      server.load_seconds(), d.RawBytes() / 1048576.0, rss / 1048576.0,
      d.RawBytes() ? double(rss) / d.RawBytes() : 0.0, o.bind.c_str(), server.port(),
      server.admin_port() > 0 ? (o.bind + ":" + std::to_string(server.admin_port())).c_str()
                              : "off",
      server.data_port() > 0 ? ("ucx " + o.bind + ":" + std::to_string(server.data_port())).c_str()
                             : "off",
      server.local_socket().empty()
          ? (server.local_off_reason().empty() ? std::string("off")
                                               : "off (" + server.local_off_reason() + ")")
                .c_str()
          : server.local_socket().c_str(),
      o.limits.max_connections, server.memory_plan().why.c_str());
  fanout::server::ReadyRecord ready;
  ready.pid = getpid();
  ready.dataset = meta.name;
  ready.partition = d.part;
  ready.num_parts = meta.num_parts;
  ready.host = o.bind;
  ready.rpc_port = server.port();
  ready.admin_port = server.admin_port() > 0 ? server.admin_port() : 0;
  ready.data_port = server.data_port() > 0 ? server.data_port() : 0;
  ready.local_socket = server.local_socket();
  ready.version = fanout::VersionString();
  std::printf("%s\n", fanout::server::EncodeReadyRecord(ready).c_str());
  if (!ready_file.empty()) {
    fanout::Status w = fanout::server::WriteReadyFile(ready_file, ready);
    if (!w.ok()) {
      std::fprintf(stderr, "fanout-server: error: %s\n", w.ToString().c_str());
      server.Stop();
      return 1;
    }
  }
  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    const fanout::Status reload = server.ReloadTenants();
    if (reload.ok())
      std::printf("fanout-server: SIGHUP: tenants reloaded from %s\n", o.tenants_file.c_str());
    else
      std::fprintf(stderr, "fanout-server: SIGHUP: %s; the tenants as they were stay\n",
                   reload.ToString().c_str());
    std::fflush(stdout);
  }
  std::printf("fanout-server: %s received, draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  server.Stop();
  if (!ready_file.empty()) unlink(ready_file.c_str());  // no longer serving
  std::printf("fanout-server: stopped\n");
  return 0;
}
