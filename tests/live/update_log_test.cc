// The update log: group commit, replay in order, a torn tail cut at every
// byte, damage refused, a failed sync that poisons the log, and kill -9 in
// the middle of appends losing no acknowledged record.
#include "live/update_log.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/datasets/test_util.h"

namespace fanout::live {
namespace {

using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

struct Replayed {
  std::vector<std::pair<uint64_t, std::string>> records;
  UpdateLog::Replay fn() {
    return [this](uint64_t seq, std::string_view p) {
      records.emplace_back(seq, std::string(p));
      return Status::OK();
    };
  }
};

std::string Payload(uint64_t i) { return "batch-" + std::to_string(i) + std::string(i % 37, 'x'); }

// A log of n records 1..n; returns its path.
std::string MakeLog(const datasets::testing::TempDir& dir, int n) {
  const std::string path = dir.Sub("updates.log");
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  EXPECT_TRUE(UpdateLog::Open(path, {}, {}, &r, &log).ok());
  for (int i = 1; i <= n; ++i) {
    uint64_t seq = 0;
    EXPECT_TRUE(log->Append(Payload(i), &seq).ok());
    EXPECT_EQ(seq, static_cast<uint64_t>(i));
  }
  return path;
}

TEST(UpdateLogTest, ConcurrentAppendsShareSyncsAndReplayInOrder) {
  datasets::testing::TempDir dir;
  const std::string path = dir.Sub("updates.log");
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  UpdateLogOptions o;
  std::atomic<int> syncs{0};
  o.sync = [&](int fd) {
    ++syncs;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // a slow disk: groups form
    return ::fdatasync(fd) == 0 ? 0 : errno;
  };
  ASSERT_TRUE(UpdateLog::Open(path, o, {}, &r, &log).ok());
  EXPECT_TRUE(r.created);
  std::mutex mu;
  std::map<uint64_t, std::string> acked;
  std::vector<uint64_t> applied;  // the order `apply` saw
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const std::string p = "w" + std::to_string(t) + "-" + std::to_string(i);
        uint64_t seq = 0;
        ASSERT_TRUE(log->Append(p, &seq, [&](uint64_t s) { applied.push_back(s); }).ok());
        std::lock_guard<std::mutex> l(mu);
        acked[seq] = p;
      }
    });
  for (auto& w : writers) w.join();
  const UpdateLogStats s = log->Stats();
  EXPECT_EQ(s.appends, 320);
  EXPECT_EQ(s.last_seq, 320u);
  EXPECT_LT(s.syncs, 320);  // group commit: fewer syncs than records
  EXPECT_GT(s.max_group, 1);
  ASSERT_EQ(acked.size(), 320u);
  // apply ran in sequence order.
  for (size_t i = 0; i < applied.size(); ++i) EXPECT_EQ(applied[i], i + 1);
  log.reset();
  Replayed rep;
  ASSERT_TRUE(UpdateLog::Open(path, {}, rep.fn(), &r, &log).ok());
  EXPECT_EQ(r.records, 320);
  EXPECT_EQ(r.torn_bytes, 0);
  ASSERT_EQ(rep.records.size(), 320u);
  for (const auto& [seq, p] : rep.records) EXPECT_EQ(acked.at(seq), p);
  uint64_t seq = 0;
  ASSERT_TRUE(log->Append("after", &seq).ok());
  EXPECT_EQ(seq, 321u);
}

// AppendMany (a follower replica's append of its primary's records): the
// records get consecutive versions, `apply` sees each in order with its
// index, a lone caller's records share one sync, and while other writers
// append they stay consecutive and replay as acknowledged.
TEST(UpdateLogTest, AppendManyGivesConsecutiveVersionsInOneSync) {
  datasets::testing::TempDir dir;
  const std::string path = dir.Sub("updates.log");
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  ASSERT_TRUE(UpdateLog::Open(path, {}, {}, &r, &log).ok());
  std::vector<std::string> first = {"a", "bb", "ccc", "dddd"};
  std::vector<std::string_view> views(first.begin(), first.end());
  std::vector<std::pair<uint64_t, size_t>> seen;
  uint64_t last = 0;
  ASSERT_TRUE(
      log->AppendMany(views, &last, [&](uint64_t s, size_t i) { seen.emplace_back(s, i); }).ok());
  EXPECT_EQ(last, 4u);
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, size_t>>{{1, 0}, {2, 1}, {3, 2}, {4, 3}}));
  EXPECT_EQ(log->Stats().syncs, 1);
  EXPECT_EQ(log->Stats().appends, 4);
  EXPECT_TRUE(log->AppendMany({}, &last).code() == Status::Code::kInvalidArgument);
  // Beside writers of single records: each AppendMany's run stays whole.
  std::mutex mu;
  std::map<uint64_t, std::string> acked;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        std::vector<std::string> run;
        for (int k = 0; k < 1 + (i % 3); ++k)
          run.push_back("t" + std::to_string(t) + "-" + std::to_string(i) + "-" +
                        std::to_string(k));
        std::vector<std::string_view> v(run.begin(), run.end());
        uint64_t end = 0;
        ASSERT_TRUE(log->AppendMany(v, &end).ok());
        std::lock_guard<std::mutex> l(mu);
        for (size_t k = 0; k < run.size(); ++k) acked[end - run.size() + 1 + k] = run[k];
      }
    });
  for (auto& t : ts) t.join();
  log.reset();
  Replayed rep;
  ASSERT_TRUE(UpdateLog::Open(path, {}, rep.fn(), &r, &log).ok());
  ASSERT_EQ(rep.records.size(), 4 + acked.size());
  for (const auto& [seq, p] : rep.records)
    if (seq > 4) EXPECT_EQ(acked.at(seq), p) << seq;
}

// DropThrough (the log cut at a base file's version) while writers append:
// every acknowledged record above the cut replays, in order, from the new
// file; nothing at or below it; a cut above what is durable is refused.
TEST(UpdateLogTest, DropThroughKeepsEveryRecordAboveTheCutWhileAppendsGoOn) {
  datasets::testing::TempDir dir;
  const std::string path = MakeLog(dir, 100);
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  ASSERT_TRUE(UpdateLog::Open(path, {}, {}, &r, &log).ok());
  std::mutex mu;
  std::map<uint64_t, std::string> acked;
  for (uint64_t i = 1; i <= 100; ++i) acked[i] = Payload(i);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; !stop.load() || i < 50; ++i) {
        const std::string p = "w" + std::to_string(t) + "-" + std::to_string(i);
        uint64_t seq = 0;
        ASSERT_TRUE(log->Append(p, &seq).ok());
        std::lock_guard<std::mutex> l(mu);
        acked[seq] = p;
        if (i > 2000) break;
      }
    });
  ASSERT_TRUE(log->DropThrough(50).ok());
  EXPECT_EQ(log->base_seq(), 50u);
  const uint64_t second = log->Stats().last_seq;  // durable, whatever the writers do
  ASSERT_TRUE(log->DropThrough(second).ok());
  EXPECT_EQ(log->base_seq(), second);
  stop = true;
  for (auto& w : writers) w.join();
  EXPECT_TRUE(log->DropThrough(10).ok());  // below the base: nothing to do
  EXPECT_EQ(log->base_seq(), second);
  const uint64_t last = log->Stats().last_seq;
  Status above = log->DropThrough(last + 1);
  EXPECT_EQ(above.code(), Status::Code::kInvalidArgument) << above.ToString();
  uint64_t seq = 0;
  ASSERT_TRUE(log->Append("after the cuts", &seq).ok());
  acked[seq] = "after the cuts";
  EXPECT_EQ(log->Stats().bytes, static_cast<int64_t>(Slurp(path).size()));
  log.reset();
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);  // no temporary left
  Replayed rep;
  ASSERT_TRUE(UpdateLog::Open(path, {}, rep.fn(), &r, &log).ok());
  EXPECT_EQ(r.base_seq, second);
  EXPECT_EQ(r.torn_bytes, 0);
  ASSERT_EQ(rep.records.size(), acked.size() - second);
  uint64_t expect = second + 1;
  for (const auto& [s2, p] : rep.records) {
    EXPECT_EQ(s2, expect++);
    EXPECT_EQ(acked.at(s2), p);
  }
}

// A cut whose new file cannot be made durable (EIO on its sync) fails, names
// the file and leaves the log as it was: whole, still taking appends, no
// temporary left behind.
TEST(UpdateLogTest, AFailedDropThroughLeavesTheLogWholeAndWorking) {
  datasets::testing::TempDir dir;
  const std::string path = MakeLog(dir, 30);
  UpdateLogOptions o;
  bool fail_next = false;
  o.sync = [&](int fd) {
    if (fail_next) {
      fail_next = false;
      return EIO;
    }
    return ::fdatasync(fd) == 0 ? 0 : errno;
  };
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  ASSERT_TRUE(UpdateLog::Open(path, o, {}, &r, &log).ok());
  fail_next = true;
  Status st = log->DropThrough(20);
  EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr(path + ".tmp"));
  EXPECT_EQ(log->base_seq(), 0u);
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);
  uint64_t seq = 0;
  ASSERT_TRUE(log->Append(Payload(31), &seq).ok());
  EXPECT_EQ(seq, 31u);
  log.reset();
  Replayed rep;
  ASSERT_TRUE(UpdateLog::Open(path, {}, rep.fn(), &r, &log).ok());
  ASSERT_EQ(rep.records.size(), 31u);
  for (uint64_t i = 1; i <= 31; ++i) EXPECT_EQ(rep.records[i - 1].second, Payload(i));
}

TEST(UpdateLogTest, ATornTailIsCutAtEveryByteOfTheLastRecord) {
  datasets::testing::TempDir dir;
  const std::string path = MakeLog(dir, 5);
  const std::string whole = Slurp(path);
  const size_t last = EncodeLogRecord(5, Payload(5)).size();
  const size_t start = whole.size() - last;
  for (size_t cut = start; cut < whole.size(); ++cut) {
    Spit(path, whole.substr(0, cut));
    Replayed rep;
    LogReplayReport r;
    std::unique_ptr<UpdateLog> log;
    Status st = UpdateLog::Open(path, {}, rep.fn(), &r, &log);
    ASSERT_TRUE(st.ok()) << cut << ": " << st.ToString();
    EXPECT_EQ(r.records, 4) << cut;
    EXPECT_EQ(r.last_seq, 4u);
    EXPECT_EQ(r.torn_bytes, static_cast<int64_t>(cut - start)) << cut;
    if (cut > start) {
      EXPECT_FALSE(r.torn_reason.empty());
    }
    // The file is cut to the last whole record, and appending goes on from it.
    uint64_t seq = 0;
    ASSERT_TRUE(log->Append("again", &seq).ok());
    EXPECT_EQ(seq, 5u);
    log.reset();
    EXPECT_EQ(Slurp(path), whole.substr(0, start) + EncodeLogRecord(5, "again"));
  }
}

TEST(UpdateLogTest, ZerosWhereARecordWouldStartAreATornTail) {
  datasets::testing::TempDir dir;
  const std::string path = MakeLog(dir, 3);
  Spit(path, Slurp(path) + std::string(4096, '\0'));
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  ASSERT_TRUE(UpdateLog::Open(path, {}, {}, &r, &log).ok());
  EXPECT_EQ(r.records, 3);
  EXPECT_EQ(r.torn_bytes, 4096);
  EXPECT_THAT(r.torn_reason, HasSubstr("zero bytes"));
}

TEST(UpdateLogTest, DamageBeforeTheTailIsRefusedNamingTheRecordAndNothingAfterIsApplied) {
  datasets::testing::TempDir dir;
  const std::string path = MakeLog(dir, 6);
  const std::string whole = Slurp(path);
  // A byte of record 3's payload flipped.
  size_t off = kLogHeaderBytes;
  for (uint64_t s = 1; s < 3; ++s) off += EncodeLogRecord(s, Payload(s)).size();
  std::string bad = whole;
  bad[off + kRecordHeaderBytes + 2] ^= 0x40;
  Spit(path, bad);
  Replayed rep;
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  Status st = UpdateLog::Open(path, {}, rep.fn(), &r, &log);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr("at byte " + std::to_string(off) + " (record 3)"));
  EXPECT_THAT(st.message(), HasSubstr("checksum mismatch"));
  EXPECT_EQ(rep.records.size(), 2u);  // 1 and 2 only: nothing past the damage
  EXPECT_EQ(Slurp(path), bad);        // and the file is left for the operator
  // A garbled magic in the middle, and a sequence gap: refused too.
  bad = whole;
  bad[off] = 'Z';
  Spit(path, bad);
  st = UpdateLog::Open(path, {}, {}, &r, &log);
  EXPECT_THAT(st.message(), HasSubstr("bad magic"));
  std::string gap = whole.substr(0, off) + EncodeLogRecord(4, Payload(4));
  Spit(path, gap);
  st = UpdateLog::Open(path, {}, {}, &r, &log);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr("sequence 4 where 3 was expected"));
  // A flipped byte in the final record is indistinguishable from a torn
  // write: cut, and said.
  bad = whole;
  bad[bad.size() - 1] ^= 1;
  Spit(path, bad);
  ASSERT_TRUE(UpdateLog::Open(path, {}, {}, &r, &log).ok());
  EXPECT_EQ(r.records, 5);
  EXPECT_THAT(r.torn_reason, HasSubstr("checksum does not match"));
  // Not a log at all.
  log.reset();
  Spit(path, "hello, world: no log here, just some text over 24 bytes");
  st = UpdateLog::Open(path, {}, {}, &r, &log);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr("no valid header"));
}

TEST(UpdateLogTest, AReplayErrorStopsTheOpen) {
  datasets::testing::TempDir dir;
  const std::string path = MakeLog(dir, 4);
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  int seen = 0;
  Status st = UpdateLog::Open(
      path, {},
      [&](uint64_t seq, std::string_view) {
        ++seen;
        return seq == 2 ? Status::InvalidArgument("record 2 names node 99, out of range")
                        : Status::OK();
      },
      &r, &log);
  EXPECT_THAT(st.message(), HasSubstr("node 99"));
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(log, nullptr);
}

TEST(UpdateLogTest, AFailedSyncFailsItsBatchAndEveryLaterOne) {
  datasets::testing::TempDir dir;
  const std::string path = dir.Sub("updates.log");
  UpdateLogOptions o;
  std::atomic<bool> fail{false};
  o.sync = [&](int fd) { return fail ? EIO : (::fdatasync(fd) == 0 ? 0 : errno); };
  LogReplayReport r;
  std::unique_ptr<UpdateLog> log;
  ASSERT_TRUE(UpdateLog::Open(path, o, {}, &r, &log).ok());
  uint64_t seq = 0;
  ASSERT_TRUE(log->Append("one", &seq).ok());
  fail = true;
  Status st = log->Append("two", &seq);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_THAT(st.message(), HasSubstr(path));
  fail = false;
  st = log->Append("three", &seq);  // poisoned: the order after a lost sync is unknown
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_EQ(log->Stats().appends, 1);
  // Oversized records are refused before anything is written.
  log.reset();
  o.sync = {};
  o.max_record_bytes = 16;
  ASSERT_TRUE(UpdateLog::Open(dir.Sub("small.log"), o, {}, &r, &log).ok());
  st = log->Append(std::string(17, 'x'), &seq);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("over the log's record limit of 16"));
}

// A writer process appends as fast as it can and reports each acknowledged
// sequence number on a pipe; it is killed with SIGKILL at a different point
// each round. Every acknowledged record is then replayed, whole.
TEST(UpdateLogTest, KillNineMidAppendLosesNoAcknowledgedRecord) {
  datasets::testing::TempDir dir;
  const std::string path = dir.Sub("updates.log");
  uint64_t acked_total = 0;
  for (int round = 0; round < 12; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      LogReplayReport r;
      std::unique_ptr<UpdateLog> log;
      if (!UpdateLog::Open(path, {}, {}, &r, &log).ok()) _exit(3);
      for (;;) {
        uint64_t seq = 0;
        if (!log->Append(Payload(r.last_seq + 1 + (seq % 5)), &seq).ok()) _exit(4);
        if (write(fds[1], &seq, sizeof seq) != sizeof seq) _exit(5);
      }
    }
    close(fds[1]);
    // Let it acknowledge a few (a different number each round), then kill it.
    uint64_t seq = 0, last_acked = 0;
    for (int i = 0; i < 3 + round * 7; ++i) {
      if (read(fds[0], &seq, sizeof seq) != sizeof seq) break;
      last_acked = seq;
    }
    kill(pid, SIGKILL);
    // Whatever it acknowledged before the kill is in the pipe.
    while (read(fds[0], &seq, sizeof seq) == sizeof seq) last_acked = seq;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited " << WEXITSTATUS(status);
    Replayed rep;
    LogReplayReport r;
    std::unique_ptr<UpdateLog> log;
    Status st = UpdateLog::Open(path, {}, rep.fn(), &r, &log);
    ASSERT_TRUE(st.ok()) << "round " << round << ": " << st.ToString();
    EXPECT_GE(r.last_seq, last_acked) << "round " << round << " lost an acknowledged record";
    for (size_t i = 0; i < rep.records.size(); ++i) EXPECT_EQ(rep.records[i].first, i + 1);
    acked_total = last_acked;
  }
  EXPECT_GT(acked_total, 12u);
}

}  // namespace
}  // namespace fanout::live
