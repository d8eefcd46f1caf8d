// The disk tier's pieces: the feature file (round trip, every damage refused
// by name), the block reader (io_uring and pread give the same checked
// bytes), the row caches (SIEVE's order, the hot set's checks) and
// DiskFeatures (the same rows as the file, inside its budget).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "storage/block_reader.h"
#include "storage/disk_features.h"
#include "storage/feature_file.h"
#include "storage/io_gate.h"
#include "storage/row_cache.h"
#include "tests/storage/storage_test_util.h"

namespace fanout::storage {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST(FeatureFileTest, RowsRoundTripAndSitWholeInAlignedBlocks) {
  TempDir tmp;
  for (int64_t dim : {int64_t{0}, int64_t{3}, int64_t{64}, int64_t{1250}}) {  // 1250 x 4 > 4096
    const FeatureFileIdentity id = Identity(1001, dim);
    const std::vector<char> rows = Rows(id.rows, id.row_bytes());
    const std::string path = Write(tmp.Sub("f" + std::to_string(dim)), id, rows);
    std::shared_ptr<const FeatureFile> f;
    Status st = FeatureFile::Open(path, ExpectOf(id), &f);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const FeatureFileGeometry& g = f->geometry();
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)), g.FileBytes());
    EXPECT_EQ(g.block_bytes % 4096, 0);
    if (dim > 0) EXPECT_LE(g.rows_per_block * g.row_bytes, g.block_bytes);
    if (dim == 1250) EXPECT_EQ(g.block_bytes, 8192);
    std::vector<char> back(rows.size());
    ASSERT_TRUE(f->ReadAll(back.data()).ok());
    EXPECT_EQ(back, rows);
  }
}

TEST(FeatureFileTest, EveryDamageIsRefusedByName) {
  TempDir tmp;
  const FeatureFileIdentity id = Identity(500, 16);
  const std::vector<char> rows = Rows(id.rows, id.row_bytes());
  const std::string good = Write(tmp.Sub("good"), id, rows);
  std::shared_ptr<const FeatureFile> f;
  auto copy = [&](const std::string& name) {
    fs::copy_file(good, tmp.Sub(name));
    return tmp.Sub(name);
  };
  auto poke = [](const std::string& path, int64_t at) {
    std::fstream s(path, std::ios::in | std::ios::out | std::ios::binary);
    s.seekg(at);
    char c = 0;
    s.read(&c, 1);
    c ^= 0x20;
    s.seekp(at);
    s.write(&c, 1);
  };
  // Missing.
  Status st = FeatureFile::Open(tmp.Sub("none"), ExpectOf(id), &f);
  EXPECT_EQ(st.code(), Status::Code::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr(tmp.Sub("none")));
  // Truncated by a byte, and by a block.
  std::string p = copy("short");
  fs::resize_file(p, fs::file_size(p) - 4096);
  st = FeatureFile::Open(p, ExpectOf(id), &f);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr("truncated"));
  // A flipped header byte; a flipped checksum-table byte.
  p = copy("header");
  poke(p, 300);
  st = FeatureFile::Open(p, ExpectOf(id), &f);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr("header"));
  p = copy("table");
  {
    std::shared_ptr<const FeatureFile> g;
    ASSERT_TRUE(FeatureFile::Open(good, ExpectOf(id), &g).ok());
    poke(p, g->geometry().TableOffset() + 2);
  }
  st = FeatureFile::Open(p, ExpectOf(id), &f);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr("checksum table"));
  // An unfinished write (its header still zero).
  p = tmp.Sub("unfinished");
  {
    std::unique_ptr<FeatureFileWriter> w;
    ASSERT_TRUE(FeatureFileWriter::Create(p, id, &w).ok());
    ASSERT_TRUE(w->Append(rows.data(), 10).ok());
  }
  st = FeatureFile::Open(p, ExpectOf(id), &f);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr(p + ": not a Fanout feature file")) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("an unfinished write?")) << st.ToString();
  // Another partition's file.
  FeatureFile::Expect other = ExpectOf(id);
  other.partition = 2;
  st = FeatureFile::Open(good, other, &f);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("not partition 2"));
  other = ExpectOf(id);
  other.dtype = FeatureDType::kFloat16;
  EXPECT_EQ(FeatureFile::Open(good, other, &f).code(), Status::Code::kInvalidArgument);
  // A flipped byte in a row: the file opens; the block is refused when read.
  p = copy("row");
  ASSERT_TRUE(FeatureFile::Open(p, ExpectOf(id), &f).ok());
  const int64_t bad_block = 1;
  poke(p, f->geometry().BlockOffset(bad_block) + 100);
  std::vector<char> back(rows.size());
  st = f->ReadAll(back.data());
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr(p + ": block 1 "));
  for (bool uring : {true, false}) {
    std::unique_ptr<BlockReader> r;
    ASSERT_TRUE(
        (uring ? BlockReader::Create(8, 4096, &r) : BlockReader::CreatePread(8, 4096, &r)).ok());
    std::vector<int64_t> blocks{0, 2, bad_block, 3};
    int delivered = 0;
    st = r->Read(*f, blocks.data(), 4, [&](int64_t i, const char*) {
      EXPECT_NE(blocks[i], bad_block);
      ++delivered;
    });
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << r->mode();
    EXPECT_THAT(st.message(), HasSubstr("block 1 ")) << r->mode();
    EXPECT_LE(delivered, 3);
    std::vector<int64_t> outside{f->geometry().num_blocks};
    EXPECT_EQ(r->Read(*f, outside.data(), 1, [](int64_t, const char*) {}).code(),
              Status::Code::kInvalidArgument);
  }
}

TEST(FeatureFileTest, AHandedOverDescriptorIsCheckedAsAPathIs) {
  TempDir tmp;
  const FeatureFileIdentity id = Identity(100, 8);
  const std::string path = Write(tmp.Sub("f"), id, Rows(100, 32));
  std::shared_ptr<const FeatureFile> f;
  EXPECT_TRUE(
      FeatureFile::FromDescriptor(::open(path.c_str(), O_RDONLY), "handed", ExpectOf(id), &f).ok());
  Status st = FeatureFile::FromDescriptor(::open(path.c_str(), O_RDWR), "handed", ExpectOf(id), &f);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("writable"));
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  st = FeatureFile::FromDescriptor(p[0], "a pipe", ExpectOf(id), &f);
  EXPECT_THAT(st.message(), HasSubstr("not a regular file"));
  close(p[1]);
}

TEST(BlockReaderTest, UringAndPreadReadTheSameCheckedBlocksInAnyOrder) {
  TempDir tmp;
  const FeatureFileIdentity id = Identity(20000, 32);  // 128-byte rows, 32 a block
  const std::vector<char> rows = Rows(id.rows, id.row_bytes());
  const std::string path = Write(tmp.Sub("f"), id, rows, 999);
  std::shared_ptr<const FeatureFile> f;
  ASSERT_TRUE(FeatureFile::Open(path, ExpectOf(id), &f).ok());
  const FeatureFileGeometry& g = f->geometry();
  std::vector<int64_t> blocks(g.num_blocks);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), std::mt19937(5));
  for (int depth : {1, 7, 64}) {
    for (bool uring : {true, false}) {
      std::unique_ptr<BlockReader> r;
      ASSERT_TRUE(
          (uring ? BlockReader::Create(depth, 4096, &r) : BlockReader::CreatePread(depth, 4096, &r))
              .ok());
      std::vector<int> seen(blocks.size(), 0);
      Status st = r->Read(*f, blocks.data(), static_cast<int64_t>(blocks.size()),
                          [&](int64_t i, const char* data) {
                            ++seen[i];
                            const int64_t b = blocks[i];
                            const int64_t first = b * g.rows_per_block;
                            const int64_t k = std::min(g.rows_per_block, g.rows - first);
                            EXPECT_EQ(std::memcmp(data, rows.data() + first * g.row_bytes,
                                                  static_cast<size_t>(k * g.row_bytes)),
                                      0);
                          });
      ASSERT_TRUE(st.ok()) << r->mode() << ": " << st.ToString();
      EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
      EXPECT_EQ(r->stats().reads, g.num_blocks);
      EXPECT_LE(r->stats().max_in_flight, depth);
      if (uring && std::string(r->mode()) == "io_uring" && depth > 1)
        EXPECT_GT(r->stats().max_in_flight, 1);
    }
  }
  std::unique_ptr<BlockReader> r;
  EXPECT_EQ(BlockReader::Create(0, 4096, &r).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(BlockReader::Create(4, 1000, &r).code(), Status::Code::kInvalidArgument);
}

// IoGate: while an online read waits, batch reads in flight stay within the
// budget (a batch reader with none out waits for its turn); with none
// waiting, batch reads take what they like.
TEST(IoGateTest, BatchReadsKeepToTheBudgetOnlyWhileAnOnlineReadWaits) {
  IoGate gate(2);
  EXPECT_TRUE(gate.BatchTryAcquire());
  EXPECT_TRUE(gate.BatchTryAcquire());
  EXPECT_TRUE(gate.BatchTryAcquire());  // no online read: past the budget
  gate.OnlineBegin();
  EXPECT_TRUE(gate.online_waiting());
  EXPECT_FALSE(gate.BatchTryAcquire());  // 3 out, budget 2
  gate.BatchDone(2);
  EXPECT_TRUE(gate.BatchTryAcquire());  // 2 out
  EXPECT_FALSE(gate.BatchTryAcquire());
  EXPECT_EQ(gate.batch_in_flight(), 2);
  EXPECT_EQ(gate.held(), 2);
  // A reader with none out waits in BatchWait until the online read ends.
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    gate.BatchWait();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.load());
  gate.OnlineEnd();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(gate.batch_in_flight(), 3);
  gate.BatchDone(3);
}

TEST(IoGateTest, ABatchReaderKeepsToTheProcessBudgetWhileAnOnlineReaderReads) {
  TempDir tmp;
  const FeatureFileIdentity id = Identity(20000, 32);
  const std::vector<char> rows = Rows(id.rows, id.row_bytes());
  const std::string path = Write(tmp.Sub("f"), id, rows, 999);
  std::shared_ptr<const FeatureFile> f;
  ASSERT_TRUE(FeatureFile::Open(path, ExpectOf(id), &f).ok());
  std::vector<int64_t> blocks(f->geometry().num_blocks);
  std::iota(blocks.begin(), blocks.end(), 0);
  for (bool uring : {true, false}) {
    for (bool online_waits : {false, true}) {
      std::unique_ptr<BlockReader> r;
      ASSERT_TRUE(
          (uring ? BlockReader::Create(64, 4096, &r) : BlockReader::CreatePread(64, 4096, &r))
              .ok());
      IoGate gate(IoGate::kBatchBudget);  // fixed (no online read reports here)
      const int64_t held_before = gate.held();
      if (online_waits) gate.OnlineBegin();
      int64_t most = 0;  // the gate's batch reads in flight, seen at each completion
      ReadOptions batch;
      batch.read_class = ReadClass::kBatch;
      batch.gate = &gate;
      Status st = r->Read(
          *f, blocks.data(), static_cast<int64_t>(blocks.size()),
          [&](int64_t, const char*) { most = std::max(most, gate.batch_in_flight()); }, batch);
      if (online_waits) gate.OnlineEnd();
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(r->stats().reads, static_cast<int64_t>(blocks.size()));
      EXPECT_EQ(gate.batch_in_flight(), 0);  // every read given back
      if (online_waits) {
        EXPECT_LE(r->stats().max_in_flight, IoGate::kBatchBudget) << r->mode();
        EXPECT_LE(most, IoGate::kBatchBudget) << r->mode();
        if (std::string(r->mode()) == "io_uring") EXPECT_GT(gate.held(), held_before);
      } else if (std::string(r->mode()) == "io_uring") {
        EXPECT_GT(r->stats().max_in_flight, IoGate::kBatchBudget);
      }
    }
  }
}

// An online reader's reads each report their latency to the gate (both
// modes), which a batch reader's do not.
TEST(IoGateTest, AnOnlineReaderReportsEachReadsLatency) {
  TempDir tmp;
  const FeatureFileIdentity id = Identity(4000, 32);
  const std::vector<char> rows = Rows(id.rows, id.row_bytes());
  const std::string path = Write(tmp.Sub("f"), id, rows, 7);
  std::shared_ptr<const FeatureFile> f;
  ASSERT_TRUE(FeatureFile::Open(path, ExpectOf(id), &f).ok());
  std::vector<int64_t> blocks(f->geometry().num_blocks);
  std::iota(blocks.begin(), blocks.end(), 0);
  for (bool uring : {true, false}) {
    std::unique_ptr<BlockReader> r;
    ASSERT_TRUE(
        (uring ? BlockReader::Create(16, 4096, &r) : BlockReader::CreatePread(16, 4096, &r)).ok());
    IoGate gate;
    for (ReadClass c : {ReadClass::kBatch, ReadClass::kOnline}) {
      ReadOptions o;
      o.read_class = c;
      o.gate = &gate;
      ASSERT_TRUE(r->Read(
                       *f, blocks.data(), static_cast<int64_t>(blocks.size()),
                       [](int64_t, const char*) {}, o)
                      .ok());
    }
    EXPECT_EQ(gate.stats().online_reads, static_cast<int64_t>(blocks.size())) << r->mode();
    EXPECT_FALSE(gate.online_waiting());
  }
}

int64_t g_gate_now = 0;
int64_t GateNow() { return g_gate_now; }

// The adaptive budget, on a clock of the test's: raised while the online
// reads' p99 stays well under factor x the device's latency and batch reads
// were held back, cut above it (down to 1), raised again when the device is
// quiet; a device that becomes slower for good is the new reference within
// a minute; a fixed gate never moves.
TEST(IoGateTest, AnAdaptiveBudgetFollowsTheOnlineReadsLatency) {
  g_gate_now = int64_t{1000} * 1'000'000'000;
  IoGateOptions o;
  o.now_ns = GateNow;
  o.latency_factor = 1.5;
  o.initial_budget = 8;
  IoGate gate(o);
  ASSERT_TRUE(gate.adaptive());
  ASSERT_EQ(gate.budget(), 8);
  // One window: batch reads held back by the budget (or not), then 100
  // online reads of `latency_ns` 110 ms on (the 100th closes the window).
  auto window = [&](int64_t latency_ns, bool held) {
    if (held) {
      gate.OnlineBegin();
      const int b = gate.budget();
      for (int i = 0; i < b; ++i) ASSERT_TRUE(gate.BatchTryAcquire());
      ASSERT_FALSE(gate.BatchTryAcquire());
      gate.BatchDone(b);
      gate.OnlineEnd();
    }
    g_gate_now += 110'000'000;
    for (int i = 0; i < 100; ++i) gate.OnlineRead(latency_ns);
  };
  // The first windows are the probe: batch held to 1 read for two windows,
  // the second measured (the reference), then the budget back.
  window(100'000, true);
  EXPECT_EQ(gate.budget(), 1);
  EXPECT_TRUE(gate.stats().probing);
  window(100'000, true);
  window(100'000, true);
  EXPECT_EQ(gate.budget(), 8);
  EXPECT_EQ(gate.stats().probes, 1);
  EXPECT_FALSE(gate.stats().probing);
  EXPECT_NEAR(gate.stats().reference_us, 100, 10);
  EXPECT_NEAR(gate.stats().target_us, 150, 15);
  // Well under the target with batch reads held back: raised each window.
  for (int w = 0; w < 7; ++w) window(100'000, true);
  const IoGateStats quiet = gate.stats();
  EXPECT_EQ(quiet.windows, 10);
  EXPECT_EQ(quiet.raises, 7);
  EXPECT_EQ(gate.budget(), 15);
  // Quiet but nothing held: the budget stays.
  for (int w = 0; w < 5; ++w) window(100'000, false);
  EXPECT_EQ(gate.budget(), 15);
  // Online reads at 4x the reference: cut each window, down to 1.
  for (int w = 0; w < 30; ++w) window(400'000, true);
  EXPECT_EQ(gate.budget(), 1);
  EXPECT_GT(gate.stats().cuts, 5);
  EXPECT_NEAR(gate.stats().last_p99_us, 400, 40);
  // Between 0.85 and 1 x the target: held.
  window(135'000, true);
  EXPECT_EQ(gate.budget(), 1);
  // Quiet again: raised.
  for (int w = 0; w < 5; ++w) window(100'000, true);
  EXPECT_GT(gate.budget(), 1);
  EXPECT_EQ(gate.stats().probes, 1);
  // Slower for good (1 ms): cut at first; once the probes kept (three, 10 s
  // apart) all saw it, 1 ms is the reference, and the budget grows again.
  for (int w = 0; w < 10; ++w) window(1'000'000, true);
  EXPECT_EQ(gate.budget(), 1);
  for (int w = 0; w < 140; ++w) window(1'000'000, true);
  EXPECT_NEAR(gate.stats().reference_us, 100, 10);  // the first probe still kept
  for (int w = 0; w < 200; ++w) window(1'000'000, true);
  EXPECT_GE(gate.stats().probes, 4);
  EXPECT_NEAR(gate.stats().reference_us, 1000, 100);
  EXPECT_GT(gate.budget(), 8);
  // A few reads after a quiet spell make no window.
  const int64_t windows = gate.stats().windows;
  g_gate_now += 3'000'000'000;
  for (int i = 0; i < 3; ++i) gate.OnlineRead(50'000'000);
  EXPECT_EQ(gate.stats().windows, windows);

  // Batch reads keep to the budget for a second after an online read, with
  // none waiting (the queue between two queries is what the next one waits
  // behind); then they take the device's whole depth.
  {
    IoGateOptions lo;
    lo.now_ns = GateNow;
    lo.initial_budget = 2;
    IoGate linger(lo);
    EXPECT_TRUE(linger.BatchTryAcquire());
    EXPECT_TRUE(linger.BatchTryAcquire());
    EXPECT_TRUE(linger.BatchTryAcquire());  // no online read yet: free
    linger.BatchDone(3);
    linger.OnlineRead(100'000);
    g_gate_now += 500'000'000;
    EXPECT_TRUE(linger.BatchTryAcquire());
    EXPECT_TRUE(linger.BatchTryAcquire());
    EXPECT_FALSE(linger.BatchTryAcquire());  // half a second after an online read
    g_gate_now += 600'000'000;
    EXPECT_TRUE(linger.BatchTryAcquire());  // over a second
    linger.BatchDone(3);
  }

  IoGate fixed(4);
  EXPECT_FALSE(fixed.adaptive());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(fixed.BatchTryAcquire());
  fixed.OnlineRead(100'000);
  EXPECT_TRUE(fixed.BatchTryAcquire());  // a fixed gate holds only while one waits
  fixed.BatchDone(5);
  for (int w = 0; w < 3; ++w) {
    g_gate_now += 110'000'000;
    for (int i = 0; i < 32; ++i) fixed.OnlineRead(10'000'000);
  }
  EXPECT_EQ(fixed.budget(), 4);
  EXPECT_EQ(fixed.stats().online_reads, 97);
  EXPECT_EQ(fixed.stats().windows, 0);
}

TEST(RowCacheTest, SieveEvictsTheOldestRowNotHitSinceTheHandPassed) {
  // One shard's worth: rows that all land in shard 0 (row % 64 == 0), 3 slots there.
  SieveCache c(3 * SieveCache::kShards, 4, 0);  // no access counts: SIEVE alone
  auto row = [](int i) { return int64_t{i} * SieveCache::kShards; };
  auto put = [&](int i) {
    const int32_t v = i;
    c.Insert(row(i), reinterpret_cast<const char*>(&v));
  };
  auto has = [&](int i) {
    int32_t v = -1;
    const bool hit = c.Lookup(row(i), reinterpret_cast<char*>(&v));
    if (hit) EXPECT_EQ(v, i);
    return hit;
  };
  put(1), put(2), put(3);
  EXPECT_TRUE(has(1));  // 1 hit: the hand passes it
  put(4);               // evicts 2 (oldest not hit)
  EXPECT_FALSE(has(2));
  EXPECT_TRUE(has(3) && has(4));
  put(5);  // hand after 2's place: 3 was hit, then 4 hit, 1's bit cleared: evicts 1
  EXPECT_FALSE(has(1));
  EXPECT_TRUE(has(5));
  EXPECT_EQ(c.evictions(), 2);
  // Never more rows than slots, whatever goes in.
  SieveCache big(1000, 16, 0);
  std::vector<char> src(16, 'x');
  for (int64_t r = 0; r < 100000; r += 3) big.Insert(r, src.data());
  EXPECT_LE(big.held(), 1000);
  EXPECT_EQ(big.bytes(), SieveCache::BytesFor(1000, 16, 0));
  EXPECT_LE(SieveCache::BytesFor(SieveCache::SlotsFor(123456, 16, 5000), 16, 5000), 123456);
  EXPECT_EQ(SieveCache::SlotsFor(4000, 16, 5000), 0);  // not even the counts fit
}

TEST(RowCacheTest, ARowAskedForOnceDoesNotPushOutOneAskedForOften) {
  // One slot in shard 0 (rows 0, 64, 128, ... land there).
  SieveCache c(SieveCache::kShards, 4, 1000);
  const int32_t v = 7;
  char out[4];
  for (int i = 0; i < 5; ++i) c.Lookup(0, out);  // row 0 asked for 5 times (misses)
  c.Insert(0, reinterpret_cast<const char*>(&v));
  EXPECT_TRUE(c.Lookup(0, out));
  c.Lookup(64, out);  // row 64 once
  c.Insert(64, reinterpret_cast<const char*>(&v));
  EXPECT_EQ(c.refused(), 1);
  EXPECT_TRUE(c.Lookup(0, out));
  EXPECT_FALSE(c.Lookup(64, out));
  for (int i = 0; i < 10; ++i) c.Lookup(128, out);  // row 128 more often than 0
  c.Insert(128, reinterpret_cast<const char*>(&v));
  EXPECT_TRUE(c.Lookup(128, out));
  EXPECT_FALSE(c.Lookup(0, out));
  EXPECT_EQ(c.evictions(), 1);
}

TEST(RowCacheTest, AnExportedHotTableIsCheckedBeforeUse) {
  std::vector<int64_t> rows{5, 9, 100, 3};
  const int64_t entries = StaticRowSet::TableEntriesFor(4);
  std::vector<int32_t> table(2 * entries);
  StaticRowSet::BuildTable(rows.data(), 4, table.data(), entries);
  std::vector<char> data(4 * 8);
  for (int i = 0; i < 4; ++i) std::memset(data.data() + 8 * i, 'a' + i, 8);
  StaticRowSet s;
  ASSERT_TRUE(StaticRowSet::View(table.data(), entries, data.data(), 4, 8, 200, &s).ok());
  EXPECT_EQ(s.Find(100)[0], 'c');
  EXPECT_EQ(s.Find(7), nullptr);
  EXPECT_EQ(s.Find(-1), nullptr);
  EXPECT_FALSE(StaticRowSet::View(table.data(), entries - 1, data.data(), 4, 8, 200, &s).ok());
  EXPECT_FALSE(
      StaticRowSet::View(table.data(), entries, data.data(), 4, 8, 50, &s).ok());  // row 100
  std::vector<int32_t> full(2 * 4);
  for (int i = 0; i < 4; ++i) full[2 * i] = i, full[2 * i + 1] = i;  // no empty entry
  EXPECT_FALSE(StaticRowSet::View(full.data(), 4, data.data(), 4, 8, 200, &s).ok());
  std::vector<int32_t> bad = table;
  for (int64_t i = 0; i < entries; ++i)
    if (bad[2 * i] >= 0) bad[2 * i + 1] = 77;  // slot outside
  EXPECT_FALSE(StaticRowSet::View(bad.data(), entries, data.data(), 4, 8, 200, &s).ok());
}

TEST(DiskFeaturesTest, GatherEqualsTheFileWithinItsBudgetFromManyThreads) {
  TempDir tmp;
  const FeatureFileIdentity id = Identity(30000, 16);  // 64-byte rows
  const std::vector<char> rows = Rows(id.rows, id.row_bytes());
  const std::string path = Write(tmp.Sub("f"), id, rows, 4096);
  std::shared_ptr<const FeatureFile> f;
  ASSERT_TRUE(FeatureFile::Open(path, ExpectOf(id), &f).ok());
  std::vector<int64_t> hot(id.rows);
  std::iota(hot.begin(), hot.end(), 0);  // rows 0.. are the hottest
  DiskCacheOptions o;
  o.budget_bytes = 300000;
  o.hot_fraction = 0.5;
  o.queue_depth = 16;
  std::unique_ptr<DiskFeatures> d;
  ASSERT_TRUE(DiskFeatures::Create(f, o, hot, &d).ok());
  EXPECT_LE(d->cache_bytes(), o.budget_bytes);
  EXPECT_GT(d->hot().size(), 1000);
  EXPECT_GT(d->stats().cache_slots, 1000);
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::unique_ptr<BlockReader> r;
      if (!d->NewReader(&r).ok()) return void(++bad[t]);
      std::mt19937_64 rng(t);
      for (int round = 0; round < 50; ++round) {
        std::vector<int64_t> ask(300);
        for (int64_t& a : ask)
          a = static_cast<int64_t>(rng() % 4 == 0 ? rng() % 500 : rng() % id.rows);
        ask[7] = ask[3];  // a duplicate
        std::vector<char> out(ask.size() * 64);
        if (!d->Gather(ask.data(), static_cast<int64_t>(ask.size()), out.data(), r.get()).ok())
          ++bad[t];
        for (size_t i = 0; i < ask.size(); ++i)
          if (std::memcmp(out.data() + i * 64, rows.data() + ask[i] * 64, 64) != 0) ++bad[t];
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
  const DiskFeatureStats s = d->stats();
  EXPECT_EQ(s.lookups, 4 * 50 * 300);
  EXPECT_EQ(s.hot_hits + s.cache_hits + s.misses, s.lookups);
  EXPECT_GT(s.hot_hits, 0);
  EXPECT_GT(s.cache_hits, 0);
  EXPECT_GT(s.block_reads, 0);
  EXPECT_LE(s.cache_bytes, s.budget_bytes);
  // A damaged block: refused, counted, the rest still served.
  {
    std::fstream fs(path, std::ios::in | std::ios::out | std::ios::binary);
    const int64_t at = f->geometry().BlockOffset(f->geometry().num_blocks - 1);
    fs.seekp(at);
    fs.write("zz", 2);
  }
  DiskCacheOptions none;
  none.budget_bytes = 0;  // no cache: every row read
  std::unique_ptr<DiskFeatures> uncached;
  ASSERT_TRUE(DiskFeatures::Create(f, none, hot, &uncached).ok());
  EXPECT_EQ(uncached->cache_bytes(), 0);
  std::unique_ptr<BlockReader> r;
  ASSERT_TRUE(uncached->NewReader(&r).ok());
  std::vector<int64_t> last{id.rows - 1};
  std::vector<char> out(64);
  Status st = uncached->Gather(last.data(), 1, out.data(), r.get());
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr(path));
  EXPECT_EQ(uncached->stats().read_errors, 1);
  std::vector<int64_t> first{0};
  EXPECT_TRUE(uncached->Gather(first.data(), 1, out.data(), r.get()).ok());
  EXPECT_EQ(std::memcmp(out.data(), rows.data(), 64), 0);
}

}  // namespace
}  // namespace fanout::storage
