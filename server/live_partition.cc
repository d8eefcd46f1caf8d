#include "server/live_partition.h"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "live/base_file.h"
#include "server/prometheus_text.h"
#include "server/service.h"

namespace fanout::server {

Status LivePartition::Open(const std::string& dir, const ServerState& s,
                           std::unique_ptr<LivePartition>* out, live::LogReplayReport* report) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::IOError("cannot make the live folder " + dir + ": " + std::strerror(errno));
  const datasets::DatasetMeta& m = s.data->meta;
  if (!s.edge_ids_at_start && s.view.num_edges() > 0)
    return Status::InvalidArgument(
        "a live partition keeps its edge ids in memory (added edges are numbered after them), "
        "and this server's memory plan reads them on first use: give it more memory "
        "(--memory-limit) or serve it static");
  live::LiveShape shape;
  shape.num_parts = m.num_parts;
  shape.num_nodes_total = m.num_nodes;
  shape.base_edges_total = m.num_edges;
  shape.row_bytes = m.feature_dim * datasets::FeatureDTypeSize(m.feature_dtype);
  shape.num_edge_types = m.hetero.num_edge_types();
  shape.temporal = m.has_edge_times;
  shape.weighted = !s.view.edge_weights.empty();
  shape.has_labels = m.has_labels;
  std::unique_ptr<LivePartition> p(new LivePartition());
  p->vp_ = std::make_unique<live::VersionedPartition>(s.view, shape, s.time_index, s.max_degree);
  const std::string prefix = dir + "/part-" + std::to_string(s.view.part);
  const std::string path = prefix + ".updates.log";
  p->base_path_ = prefix + ".base";
  live::VersionedPartition* vp = p->vp_.get();
  // What a crash left half-made: never the files themselves (a rename
  // publishes each whole).
  ::unlink((path + ".tmp").c_str());
  ::unlink((p->base_path_ + ".tmp").c_str());
  // A compacted base on disk: the log's records at or below its version are
  // in it (a crash between its rename and the log's cut leaves them in the
  // log too: skipped).
  uint64_t base = 0;
  {
    live::BaseFileHeader h;
    auto arrays = std::make_unique<live::Generation::Arrays>();
    live::BaseOverlay overlay;
    live::RetryState table;
    Status st = live::ReadBaseFile(p->base_path_, shape, s.view.part, s.view.node_begin,
                                   s.view.num_nodes(), &h, arrays.get(), &overlay, &table);
    if (st.ok()) {
      FANOUT_RETURN_IF_ERROR(
          vp->RestoreBase(std::move(arrays), h.version, h.next_ordinal, overlay));
      p->retries_.Import(table);
      p->base_retries_.Import(table);
      base = h.version;
      p->base_edges_ = h.edges;
      p->base_file_bytes_ = h.file_bytes;
    } else if (st.code() != Status::Code::kNotFound) {
      return st;
    }
  }
  p->opened_base_version_ = base;
  p->base_file_version_ = base;
  LivePartition* lp = p.get();
  auto replay = [&](uint64_t seq, std::string_view bytes) -> Status {
    if (seq <= base) return Status::OK();  // in the base file
    live::UpdateBatch b;
    Status st = live::DecodeUpdateBatch(bytes, &b);
    if (st.ok()) st = vp->Check(b);
    if (!st.ok())
      return Status::Corruption("update log " + path + ", record " + std::to_string(seq) +
                                ": this partition refuses it (" + st.message() +
                                "): is the log another partition's or another dataset's?");
    lp->ApplyInOrder(seq, b);
    lp->feed_.Add(seq, bytes);  // for followers
    return Status::OK();
  };
  p->feed_.SetOldest(base);
  live::UpdateLogOptions lo;
  lo.base_seq = base;  // a new log after a base file starts above it
  FANOUT_RETURN_IF_ERROR(live::UpdateLog::Open(path, lo, replay, report, &p->log_));
  if (report->base_seq > base || report->last_seq < base)
    return Status::Corruption(
        "update log " + path + " holds records " + std::to_string(report->base_seq + 1) + ".." +
        std::to_string(report->last_seq) + " and the base file " +
        (base > 0 ? p->base_path_ + " holds version " + std::to_string(base) : "is missing") +
        ": records between them are lost (is one of the two another folder's?)");
  vp->Publish(report->last_seq);
  p->feed_.Publish(report->last_seq);
  p->opened_ = *report;
  if (base == 0) p->base_edges_ = s.view.num_edges();
  *out = std::move(p);
  return Status::OK();
}

bool LivePartition::ApplyInOrder(uint64_t seq, const live::UpdateBatch& b) {
  const bool admitted = retries_.Admit(b.writer, b.writer_seq, seq);
  NoteHeard(seq, b.writer, b.writer_seq);
  if (admitted) vp_->Apply(seq, b);
  return admitted;
}

void LivePartition::NoteHeard(uint64_t seq, uint64_t writer, uint64_t writer_seq) {
  if (writer == 0) return;  // never a retry: the table does not keep it
  std::lock_guard<std::mutex> lock(heard_mu_);
  heard_.push_back({seq, writer, writer_seq});
}

Status LivePartition::WriteBase() {
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const live::Generation> g;
  live::BaseOverlay overlay;
  live::BaseFileHeader h;
  FANOUT_RETURN_IF_ERROR(vp_->BaseToWrite(&g, &overlay, &h.next_ordinal));
  h.version = g->base_version();
  const sampler::PartitionView& view = g->view();
  h.part = view.part;
  h.node_begin = view.node_begin;
  h.rows = view.num_nodes();
  live::RetryState table;
  {
    // The table at the base's version: the batches heard up to it (retries
    // too: they move their writer's place in the table) folded in.
    std::lock_guard<std::mutex> lock(heard_mu_);
    while (!heard_.empty() && heard_.front().seq <= h.version) {
      const Heard& a = heard_.front();
      base_retries_.Admit(a.writer, a.writer_seq, a.seq);
      heard_.pop_front();
    }
    base_retries_.Export(&table);
  }
  int64_t bytes = 0;
  FANOUT_RETURN_IF_ERROR(live::WriteBaseFile(base_path_, h, view, overlay, table, &bytes));
  // The base is durable: the log's records at or below it can go.
  FANOUT_RETURN_IF_ERROR(log_->DropThrough(h.version));
  std::lock_guard<std::mutex> lock(compactor_mu_);
  ++base_writes_;
  base_file_version_ = h.version;
  base_file_bytes_ = bytes;
  base_write_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  base_write_error_.clear();
  return Status::OK();
}

LivePartition::~LivePartition() {
  // The follower thread first (it applies into everything below), and no
  // write or fetch left waiting on followers.
  follower_.reset();
  feed_.Stop();
  {
    std::lock_guard<std::mutex> lock(compactor_mu_);
    stopping_ = true;
  }
  compactor_cv_.notify_all();
  if (compactor_.joinable()) compactor_.join();
}

void LivePartition::StartCompactor(const CompactionPolicy& policy) {
  policy_ = policy;
  compactor_ = std::thread([this] {
    // Background work: below the serving threads in the CPU's order (as a
    // database's low-priority compaction pool), so sampling keeps its share.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
    std::unique_lock<std::mutex> lock(compactor_mu_);
    while (!stopping_) {
      compactor_cv_.wait_for(lock, std::chrono::duration<double>(policy_.poll_s),
                             [&] { return stopping_ || asked_ > done_; });
      if (stopping_) break;
      const uint64_t asked = asked_;
      lock.unlock();
      if (vp_->ReleaseIdle(policy_.retain_s)) malloc_trim(0);  // the freed base and delta
      const live::DeltaStats d = vp_->Stats();
      const int64_t changes = d.added_edges + d.removals;
      const bool due =
          d.committed > d.base_version && d.retained < 0 &&
          ((policy_.ratio > 0 && changes > 0 &&
            static_cast<double>(changes) >=
                policy_.ratio * static_cast<double>(std::max<int64_t>(1, base_edges_))) ||
           (policy_.bytes > 0 && d.bytes >= policy_.bytes));
      Status st;
      live::CompactionReport r;
      if (due || asked > done_) {
        st = RunCompaction(&r);
        if (!st.ok() && st.code() != Status::Code::kAborted && asked == done_)
          std::fprintf(stderr, "fanout-server: live compaction skipped: %s\n",
                       st.ToString().c_str());
        // The new base to disk once the log is long enough (the caller of
        // CompactNow waits for it too: a restart after its answer reads it).
        if (st.ok() && !r.up_to_date && policy_.checkpoint_bytes >= 0 &&
            log_->Stats().bytes >= policy_.checkpoint_bytes) {
          Status w = WriteBase();
          if (!w.ok()) {
            std::fprintf(stderr, "fanout-server: live base not written: %s\n",
                         w.ToString().c_str());
            std::lock_guard<std::mutex> l(compactor_mu_);
            base_write_error_ = w.ToString();
          }
        }
      }
      lock.lock();
      if (asked > done_) {
        done_ = asked;  // every ask up to `asked` came before this run
        asked_status_ = st;
        asked_report_ = r;
        compactor_cv_.notify_all();
      }
    }
    compactor_cv_.notify_all();
  });
}

Status LivePartition::RunCompaction(live::CompactionReport* report) {
  live::CompactionOptions o;
  o.max_bytes = policy_.max_bytes;
  const uint64_t at = vp_->committed();
  // Nothing newer than the base (or another compaction just folded it): no
  // compaction, said as such rather than as an error.
  auto up_to_date = [&] {
    const uint64_t base = vp_->Stats().base_version;
    if (at > base) return false;
    *report = live::CompactionReport();
    report->version = base;
    report->up_to_date = true;
    return true;
  };
  if (up_to_date()) return Status::OK();
  Status st = vp_->Compact(at, o, report);
  if (st.code() == Status::Code::kInvalidArgument && up_to_date()) return Status::OK();
  std::lock_guard<std::mutex> lock(compactor_mu_);
  if (st.ok()) {
    last_compaction_ = *report;
    last_compaction_error_.clear();
  } else {
    last_compaction_error_ = st.ToString();
  }
  return st;
}

Status LivePartition::CompactNow(live::CompactionReport* report) {
  std::unique_lock<std::mutex> lock(compactor_mu_);
  if (!compactor_.joinable()) {
    lock.unlock();
    return RunCompaction(report);
  }
  // The compactor thread runs it (at its priority); this caller waits.
  const uint64_t ticket = ++asked_;
  compactor_cv_.notify_all();
  compactor_cv_.wait(lock, [&] { return stopping_ || done_ >= ticket; });
  if (done_ < ticket) return Status::Unavailable("the server is stopping");
  *report = asked_report_;
  return asked_status_;
}

Status LivePartition::Apply(const std::string& bytes, uint64_t* version, int64_t* operations,
                            bool* retry) {
  if (!follows_.empty())
    return Status::NotSupported(
        "this replica follows the primary " + follows_ +
        ", which orders every write: send updates there (UpdateWriter and fanout-ctl update find "
        "it by PartitionInfo.live_follows)");
  live::UpdateBatch b;
  Status st = live::DecodeUpdateBatch(bytes, &b);
  if (st.ok()) st = vp_->Check(b);
  if (st.ok() && b.empty()) st = Status::InvalidArgument("an empty update batch");
  if (!st.ok()) {
    ++refused_;
    return st;
  }
  uint64_t seq = 0;
  bool again = false;
  // Applied in log order under the log's lock, readable once durable. A
  // retry is logged too (it is told from a new batch in log order, on replay
  // the same way) and answered once durable: by then its first copy, earlier
  // in the log, is durable as well.
  FANOUT_RETURN_IF_ERROR(log_->Append(bytes, &seq, [&](uint64_t s) {
    again = !ApplyInOrder(s, b);
    feed_.Add(s, bytes);
  }));
  vp_->Publish(seq);
  feed_.Publish(seq);
  // Acknowledged once the followers in sync hold it too.
  feed_.WaitFollowers(seq);
  if (retry != nullptr) *retry = again;
  if (again) {
    ++retried_;
  } else {
    ++batches_;
    operations_ += b.size();
  }
  update_bytes_ += static_cast<int64_t>(bytes.size());
  *version = seq;
  *operations = b.size();
  return Status::OK();
}

Status LivePartition::ApplyReplicated(const std::vector<FeedRecord>& records) {
  // Decoded and checked first: a record this partition refuses means the
  // primary's log is not this partition's (nothing is applied).
  std::vector<live::UpdateBatch> batches(records.size());
  std::vector<std::string_view> payloads(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    Status st = live::DecodeUpdateBatch(records[i].batch, &batches[i]);
    if (st.ok()) st = vp_->Check(batches[i]);
    if (!st.ok())
      return Status::Corruption("record " + std::to_string(records[i].version) +
                                " of the primary: this partition refuses it (" + st.message() +
                                ")");
    payloads[i] = records[i].batch;
  }
  // The follower thread is this log's only writer: the next version is the
  // first record's.
  const uint64_t next = vp_->committed() + 1;
  if (records.front().version != next)
    return Status::Corruption("the primary sent record " + std::to_string(records.front().version) +
                              " where " + std::to_string(next) + " was due");
  uint64_t last = 0;
  FANOUT_RETURN_IF_ERROR(log_->AppendMany(payloads, &last, [&](uint64_t s, size_t i) {
    const live::UpdateBatch& b = batches[i];
    if (ApplyInOrder(s, b)) {
      ++batches_;
      operations_ += b.size();
    } else {
      ++retried_;
    }
    update_bytes_ += static_cast<int64_t>(payloads[i].size());
  }));
  if (last != records.back().version)
    return Status::Corruption("this replica's log gave the primary's record " +
                              std::to_string(records.back().version) + " the version " +
                              std::to_string(last));
  vp_->Publish(last);
  return Status::OK();
}

Status LivePartition::StartReplication(const Replication& r) {
  feed_.Configure(r.feed_bytes, r.wait_ms);
  if (r.follow.empty()) return Status::OK();
  follows_ = r.follow;
  FollowerLink::Options o;
  o.primary = r.follow;
  o.token = r.token;
  o.name = r.name;
  o.tls_ca = r.tls_ca;
  o.tls_cert = r.tls_cert;
  o.tls_key = r.tls_key;
  o.catch_up_s = r.catch_up_s;
  follower_ = std::make_unique<FollowerLink>(
      o, [this] { return vp_->committed(); },
      [this](const std::vector<FeedRecord>& records) { return ApplyReplicated(records); });
  if (r.catch_up_s > 0) FANOUT_RETURN_IF_ERROR(follower_->CatchUp());
  follower_->Start();
  return Status::OK();
}

Status LivePartition::FetchForFollower(const std::string& name, uint64_t after, int64_t max_bytes,
                                       std::string* records, uint64_t* committed,
                                       uint64_t* oldest) {
  if (!follows_.empty())
    return Status::NotSupported("this replica follows " + follows_ + " itself: follow the primary");
  return feed_.Fetch(name, after, max_bytes, records, committed, oldest);
}

Status LivePartition::ReadVersion(int64_t requested, uint64_t* version) const {
  return vp_->ResolveVersion(requested, version);
}

void LivePartition::Prometheus(PrometheusText* out) const {
  const live::DeltaStats d = vp_->Stats();
  const live::UpdateLogStats l = log_->Stats();
  out->Gauge("fanout_live_committed_version",
             "The newest committed version of the live partition (its log's sequence).",
             static_cast<int64_t>(d.committed));
  out->Counter("fanout_live_batches_total", "Update batches applied since start.", batches_.load());
  out->Counter("fanout_live_retries_total",
               "Update batches that were retries of one applied already (logged, not applied).",
               retried_.load());
  out->Counter("fanout_live_refused_total", "Update batches refused (nothing applied).",
               refused_.load());
  out->Counter("fanout_live_update_bytes_total", "Bytes of the update batches applied.",
               update_bytes_.load());
  out->Gauge("fanout_live_log_bytes", "Bytes of the update log file.", l.bytes);
  out->Counter("fanout_live_log_syncs_total", "Group commits (one write and one sync each).",
               l.syncs);
  out->Gauge("fanout_live_delta_bytes", "Bytes the delta over the base holds.", d.bytes);
  out->Gauge("fanout_live_delta_rows", "Rows the delta changed.", d.rows_touched);
  out->Gauge("fanout_live_delta_added_edges", "Edges the delta added.", d.added_edges);
  out->Counter("fanout_live_compactions_total", "Compactions: the delta folded into a new base.",
               d.compactions);
  out->Gauge("fanout_live_base_version", "The version the live partition's base holds.",
             static_cast<int64_t>(d.base_version));
  out->Gauge("fanout_live_retained_bytes",
             "Bytes of the generation before the last compaction, kept for older reads.",
             d.retained_bytes);
  out->Gauge("fanout_live_log_base_version",
             "The version the update log starts after (records at or below it are in the base "
             "file).",
             static_cast<int64_t>(log_->base_seq()));
  std::lock_guard<std::mutex> lock(compactor_mu_);
  out->Gauge("fanout_live_base_file_version",
             "The version of the compacted base written to the live folder (0: none).",
             static_cast<int64_t>(base_file_version_));
  out->Counter("fanout_live_base_file_writes_total",
               "Compacted bases written to the live folder since start.", base_writes_);
  if (follower_)
    follower_->Prometheus(out);
  else
    feed_.Prometheus(out);
}

nlohmann::json LivePartition::StatsJson() const {
  const live::DeltaStats d = vp_->Stats();
  const live::UpdateLogStats l = log_->Stats();
  nlohmann::json j = {{"committed_version", d.committed},
                      {"batches", batches_.load()},
                      {"operations", operations_.load()},
                      {"refused", refused_.load()},
                      {"retries", retried_.load()},
                      {"update_bytes", update_bytes_.load()},
                      {"log",
                       {{"path", log_->path()},
                        {"bytes", l.bytes},
                        {"base_version", log_->base_seq()},
                        {"appends", l.appends},
                        {"syncs", l.syncs},
                        {"max_group", l.max_group},
                        {"replayed_at_start", opened_.records},
                        {"torn_bytes_cut_at_start", opened_.torn_bytes},
                        {"torn_reason", opened_.torn_reason}}},
                      {"delta",
                       {{"rows_touched", d.rows_touched},
                        {"added_edges", d.added_edges},
                        {"removals", d.removals},
                        {"feature_rows", d.feature_rows},
                        {"labels", d.labels},
                        {"bytes", d.bytes}}}};
  std::lock_guard<std::mutex> lock(compactor_mu_);
  j["compaction"] = {{"compactions", d.compactions},
                     {"base_version", d.base_version},
                     {"base_bytes", d.base_bytes},
                     {"retained_version", d.retained},
                     {"retained_bytes", d.retained_bytes},
                     {"last_seconds", d.last_compaction_s},
                     {"last_rows_merged", last_compaction_.rows_merged},
                     {"last_carried", last_compaction_.carried},
                     {"last_error", last_compaction_error_},
                     {"trigger_ratio", policy_.ratio},
                     {"trigger_bytes", policy_.bytes},
                     {"retain_s", policy_.retain_s}};
  j["base_file"] = {{"path", base_path_},
                    {"version", base_file_version_},
                    {"bytes", base_file_bytes_},
                    {"writes", base_writes_},
                    {"last_seconds", base_write_s_},
                    {"last_error", base_write_error_},
                    {"read_at_start", opened_base_version_},
                    {"checkpoint_bytes", policy_.checkpoint_bytes}};
  j["replication"] = follower_ ? follower_->StatsJson() : feed_.StatsJson();
  return j;
}

}  // namespace fanout::server
