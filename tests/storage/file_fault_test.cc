// The disk tier's error paths, reached through FaultyIo (tests/storage/faulty_io.h):
// EIO, short reads, ring setup and submit failures, partial submits, failed
// and stalled completions, and a file truncated after open. Each ends in an
// error naming the file and the block (or finishes correctly where the fault
// is one to recover from), never a torn or stale row; a reader whose ring
// failed is retired to pread and keeps reading right.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "storage/block_reader.h"
#include "storage/disk_features.h"
#include "storage/feature_file.h"
#include "tests/storage/faulty_io.h"
#include "tests/storage/storage_test_util.h"

namespace fanout::storage {
namespace {

using testing::Faults;
using testing::FaultyIo;
using ::testing::HasSubstr;

class FileFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    id_ = Identity(4000, 32);  // 128-byte rows, 32 a block: 125 blocks
    rows_ = Rows(id_.rows, id_.row_bytes());
    path_ = Write(tmp_.Sub("f"), id_, rows_);
  }
  std::shared_ptr<const FeatureFile> Open(FileIo* io) {
    std::shared_ptr<const FeatureFile> f;
    Status st = FeatureFile::Open(path_, ExpectOf(id_), &f, io);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return f;
  }
  // A reader over `io` (io_uring where `uring` and the kernel allow).
  std::unique_ptr<BlockReader> Reader(FileIo* io, bool uring, int depth = 8) {
    std::unique_ptr<BlockReader> r;
    EXPECT_TRUE((uring ? BlockReader::Create(depth, 4096, &r, io)
                       : BlockReader::CreatePread(depth, 4096, &r, io))
                    .ok());
    return r;
  }
  bool UringHere() {
    std::unique_ptr<ReadRing> ring;
    return FileIo::Default()->NewRing(4, &ring) == 0;
  }
  // Reads every block in a shuffled order; each delivered block must hold
  // exactly its rows. Returns the status; *delivered counts the blocks.
  Status ReadAll(BlockReader* r, const FeatureFile& f, int64_t* delivered) {
    const FeatureFileGeometry& g = f.geometry();
    std::vector<int64_t> blocks(static_cast<size_t>(g.num_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), std::mt19937(11));
    std::vector<int> seen(blocks.size(), 0);
    *delivered = 0;
    Status st = r->Read(f, blocks.data(), static_cast<int64_t>(blocks.size()),
                        [&](int64_t i, const char* data) {
                          const int64_t b = blocks[i];
                          const int64_t first = b * g.rows_per_block;
                          const int64_t k = std::min(g.rows_per_block, g.rows - first);
                          EXPECT_EQ(std::memcmp(data, rows_.data() + first * g.row_bytes,
                                                static_cast<size_t>(k * g.row_bytes)),
                                    0)
                              << "block " << b << " torn or stale";
                          EXPECT_EQ(++seen[i], 1) << "block " << b << " delivered twice";
                          ++*delivered;
                        });
    return st;
  }
  TempDir tmp_;
  FeatureFileIdentity id_;
  std::vector<char> rows_;
  std::string path_;
};

TEST_F(FileFaultTest, AReadErrorAtOpenNamesTheFileAndWhatWasRead) {
  FaultyIo header(Faults{.pread_fail_at = 1});
  std::shared_ptr<const FeatureFile> f;
  Status st = FeatureFile::Open(path_, ExpectOf(id_), &f, &header);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_THAT(st.message(), HasSubstr(path_ + ": header"));
  EXPECT_THAT(st.message(), HasSubstr(std::strerror(EIO)));
  FaultyIo table(Faults{.pread_fail_at = 2});
  st = FeatureFile::Open(path_, ExpectOf(id_), &f, &table);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_THAT(st.message(), HasSubstr("checksum table"));
  // A short read at open is finished.
  FaultyIo short_read(Faults{.pread_short_at = 1, .short_bytes = 512});
  EXPECT_TRUE(FeatureFile::Open(path_, ExpectOf(id_), &f, &short_read).ok());
}

TEST_F(FileFaultTest, PreadEioNamesTheBlockAndShortPreadsAreFinished) {
  FaultyIo opened;
  auto f = Open(&opened);
  const int64_t at_open = opened.counts().preads;
  {
    FaultyIo io(Faults{.pread_fail_at = 7});
    auto file = Open(&io);
    auto r = Reader(&io, false);
    int64_t delivered = 0;
    Status st = ReadAll(r.get(), *file, &delivered);
    EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr(path_ + ": block "));
    EXPECT_THAT(st.message(), HasSubstr(std::strerror(EIO)));
    EXPECT_EQ(delivered, 7 - at_open - 1);  // the blocks before the failing read
  }
  {
    FaultyIo io(Faults{.pread_short_at = at_open + 3, .short_bytes = 1000});
    auto file = Open(&io);
    auto r = Reader(&io, false);
    int64_t delivered = 0;
    Status st = ReadAll(r.get(), *file, &delivered);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(delivered, file->geometry().num_blocks);
  }
}

TEST_F(FileFaultTest, ARingThatCannotBeMadeFallsBackToPread) {
  FaultyIo io(Faults{.ring_errno = ENOSYS});
  auto f = Open(&io);
  auto r = Reader(&io, true);
  EXPECT_STREQ(r->mode(), "pread");
  int64_t delivered = 0;
  ASSERT_TRUE(ReadAll(r.get(), *f, &delivered).ok());
  EXPECT_EQ(delivered, f->geometry().num_blocks);
}

TEST_F(FileFaultTest, AFailedSubmitRetiresTheRingAndNoBufferIsLost) {
  if (!UringHere()) GTEST_SKIP() << "io_uring is not available here";
  FaultyIo io(Faults{.submit_fail_at = 2});
  auto f = Open(&io);
  auto r = Reader(&io, true);
  ASSERT_STREQ(r->mode(), "io_uring");
  int64_t delivered = 0;
  Status st = ReadAll(r.get(), *f, &delivered);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_THAT(st.message(), HasSubstr(path_ + ": io_uring_submit"));
  EXPECT_THAT(st.message(), HasSubstr("retired"));
  EXPECT_TRUE(r->retired());
  EXPECT_STREQ(r->mode(), "pread");
  EXPECT_EQ(r->leaked_bytes(), 0);  // the queued reads went out and were waited for
  // The same reader goes on, one block at a time, reading right.
  ASSERT_TRUE(ReadAll(r.get(), *f, &delivered).ok());
  EXPECT_EQ(delivered, f->geometry().num_blocks);
}

TEST_F(FileFaultTest, APartialSubmitHandsOverTheRestBeforeWaiting) {
  if (!UringHere()) GTEST_SKIP() << "io_uring is not available here";
  for (int64_t at : {1, 2, 5}) {
    FaultyIo io(Faults{.submit_partial_at = at});
    auto f = Open(&io);
    auto r = Reader(&io, true, 16);
    int64_t delivered = 0;
    Status st = ReadAll(r.get(), *f, &delivered);  // would wait for ever on the held reads
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(delivered, f->geometry().num_blocks);
    EXPECT_FALSE(r->retired());
  }
}

TEST_F(FileFaultTest, ACompletionWithEioNamesTheBlockAndTheRingStays) {
  if (!UringHere()) GTEST_SKIP() << "io_uring is not available here";
  FaultyIo io(Faults{.cqe_eio_at = 3});
  auto f = Open(&io);
  auto r = Reader(&io, true);
  int64_t delivered = 0;
  Status st = ReadAll(r.get(), *f, &delivered);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_THAT(st.message(), HasSubstr(path_ + ": block "));
  EXPECT_LT(delivered, f->geometry().num_blocks);
  EXPECT_FALSE(r->retired());  // a bad read is the disk's, not the ring's
  ASSERT_TRUE(ReadAll(r.get(), *f, &delivered).ok());
  EXPECT_EQ(delivered, f->geometry().num_blocks);
  EXPECT_STREQ(r->mode(), "io_uring");
}

TEST_F(FileFaultTest, AShortCompletionIsFinishedInPlace) {
  if (!UringHere()) GTEST_SKIP() << "io_uring is not available here";
  for (int64_t bytes : {1000, 4095, 100}) {
    FaultyIo io(Faults{.short_bytes = bytes, .cqe_short_at = 2});
    auto f = Open(&io);
    auto r = Reader(&io, true);
    int64_t delivered = 0;
    Status st = ReadAll(r.get(), *f, &delivered);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(delivered, f->geometry().num_blocks);
  }
}

TEST_F(FileFaultTest, AFailedWaitRetiresTheRingAfterItsReadsAreIn) {
  if (!UringHere()) GTEST_SKIP() << "io_uring is not available here";
  FaultyIo io(Faults{.wait_fail_at = 4});
  auto f = Open(&io);
  auto r = Reader(&io, true);
  int64_t delivered = 0;
  Status st = ReadAll(r.get(), *f, &delivered);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_THAT(st.message(), HasSubstr("io_uring_wait_cqe"));
  EXPECT_TRUE(r->retired());
  EXPECT_EQ(r->leaked_bytes(), 0);
  ASSERT_TRUE(ReadAll(r.get(), *f, &delivered).ok());
  EXPECT_EQ(delivered, f->geometry().num_blocks);
}

TEST_F(FileFaultTest, AStalledCompletionEndsTheCallAndItsBuffersAreNeverReused) {
  if (!UringHere()) GTEST_SKIP() << "io_uring is not available here";
  FaultyIo io(Faults{.stall_from = 2});
  auto f = Open(&io);
  auto r = Reader(&io, true, 8);
  r->set_completion_timeout_ms(50);
  int64_t delivered = 0;
  Status st = ReadAll(r.get(), *f, &delivered);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_THAT(st.message(), HasSubstr("not completed within 50 ms"));
  EXPECT_TRUE(r->retired());
  // The reads it could not wait for may still land: their buffers are never
  // handed out again, and counted.
  EXPECT_EQ(r->leaked_bytes(), 8 * 4096);
  EXPECT_EQ(r->buffer_bytes(), 8 * 4096 + 4096);
  ASSERT_TRUE(ReadAll(r.get(), *f, &delivered).ok());
  EXPECT_EQ(delivered, f->geometry().num_blocks);
}

TEST_F(FileFaultTest, AFileTruncatedAfterOpenIsCorruptionNamingTheBlock) {
  for (bool uring : {true, false}) {
    const std::string p = Write(tmp_.Sub(uring ? "t1" : "t2"), id_, rows_);
    std::shared_ptr<const FeatureFile> f;
    ASSERT_TRUE(FeatureFile::Open(p, ExpectOf(id_), &f).ok());
    const FeatureFileGeometry& g = f->geometry();
    ASSERT_EQ(truncate(p.c_str(), g.BlockOffset(60) + 100), 0);
    auto r = Reader(nullptr, uring);
    std::vector<int64_t> blocks{0, 59, 60, 61};
    int64_t delivered = 0;
    Status st = r->Read(*f, blocks.data(), 4, [&](int64_t i, const char* data) {
      EXPECT_LT(blocks[i], 60);
      const int64_t first = blocks[i] * g.rows_per_block;
      EXPECT_EQ(std::memcmp(data, rows_.data() + first * g.row_bytes,
                            static_cast<size_t>(g.rows_per_block * g.row_bytes)),
                0);
      ++delivered;
    });
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << r->mode() << ": " << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr(p + ": block 6")) << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr("truncated")) << st.ToString();
    EXPECT_LE(delivered, 2);
    // ReadAll (the memory tier's load) says the same.
    std::vector<char> all(rows_.size());
    st = f->ReadAll(all.data());
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  }
}

TEST_F(FileFaultTest, DiskFeaturesGatherReportsTheFaultAndServesNoRowOfIt) {
  if (!UringHere()) GTEST_SKIP() << "io_uring is not available here";
  FaultyIo io(Faults{.cqe_eio_at = 1});
  auto f = Open(&io);
  DiskCacheOptions o;
  o.budget_bytes = 0;  // every row from the file
  o.queue_depth = 8;
  std::unique_ptr<DiskFeatures> d;
  ASSERT_TRUE(DiskFeatures::Create(f, o, {}, &d).ok());
  std::unique_ptr<BlockReader> r;
  ASSERT_TRUE(d->NewReader(&r).ok());
  std::vector<int64_t> rows{5, 900, 1800, 3999};
  std::vector<char> out(rows.size() * id_.row_bytes(), 0x5a);
  Status st = d->Gather(rows.data(), 4, out.data(), r.get());
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_THAT(st.message(), HasSubstr(path_ + ": block "));
  // Again, the fault gone: every row right.
  ASSERT_TRUE(d->Gather(rows.data(), 4, out.data(), r.get()).ok());
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(std::memcmp(out.data() + i * id_.row_bytes(),
                          rows_.data() + rows[i] * id_.row_bytes(), id_.row_bytes()),
              0);
}

}  // namespace
}  // namespace fanout::storage

namespace fanout::storage {
namespace {

// A cache is sized from the file, not from a figure: a budget of 1 GiB over a
// file of 4000 rows, or a peer's claim of 2^62 bytes, allocates no more than
// holding every row takes.
TEST_F(FileFaultTest, ACacheNeverTakesMoreThanTheFileHolds) {
  auto f = Open(nullptr);
  const int64_t rb = id_.row_bytes(), rows = id_.rows;
  const int64_t whole = SieveCache::BytesFor(rows, rb, rows);
  DiskCacheOptions o;
  o.budget_bytes = int64_t{1} << 30;
  std::unique_ptr<DiskFeatures> d;
  ASSERT_TRUE(DiskFeatures::Create(f, o, {}, &d).ok());
  EXPECT_LE(d->cache_bytes(), whole);
  EXPECT_GT(d->cache_bytes(), rows * rb);  // every row fits
  std::unique_ptr<DiskFeatures> client;
  ASSERT_TRUE(DiskFeatures::Attach(f, StaticRowSet(), int64_t{1} << 62, 8, &client).ok());
  EXPECT_LE(client->cache_bytes(), whole);
  // ... and it serves every row right.
  std::unique_ptr<BlockReader> r;
  ASSERT_TRUE(client->NewReader(&r).ok());
  std::vector<int64_t> all(static_cast<size_t>(rows));
  std::iota(all.begin(), all.end(), 0);
  std::vector<char> out(rows_.size());
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE(client->Gather(all.data(), rows, out.data(), r.get()).ok());
    EXPECT_EQ(out, rows_);
  }
}

}  // namespace
}  // namespace fanout::storage
