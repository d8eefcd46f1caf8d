// The feature file: one partition's feature rows in one flat, row-ordered
// file beside its RocksDB store ("part-<k>.features"), what the servers' disk
// tier reads with O_DIRECT and what the memory tier loads.
//
//   block 0            the header (4096 bytes, little-endian, CRC-32C'd):
//                      "FNFF", version, dataset id, partition, first node,
//                      rows, feature dim, dtype, row bytes, block geometry,
//                      the checksum table's CRC, then the header's own CRC
//   blocks 1 ..        the rows, rows_per_block to a block of block_bytes
//                      (4096, or a wider row rounded up to 4096): a row never
//                      straddles blocks, so one row is one aligned read
//   after the rows     the checksum table: one CRC-32C per block, padded to
//                      4096 bytes
//
// Every block a reader takes is checked against its checksum (Corruption
// naming the file and the block, never served); the table itself is
// checked when the file is opened, as are the header and the file's size.
// The writer publishes with the dataset's fsync-and-rename discipline (the
// whole dataset folder is renamed into place once complete).
//
// Thread safety: a FeatureFile is immutable once open (pread/io_uring on its
// descriptor from any thread); a FeatureFileWriter is one thread's.
#ifndef FANOUT_STORAGE_FEATURE_FILE_H_
#define FANOUT_STORAGE_FEATURE_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/feature_dtype.h"
#include "common/status.h"
#include "storage/file_io.h"

namespace fanout::storage {

inline constexpr uint32_t kFeatureFileVersion = 1;
inline constexpr int64_t kFeatureBlockAlign = 4096;  // O_DIRECT's unit: offsets, lengths, buffers

// Where rows sit: row r is in block r / rows_per_block at byte
// (r % rows_per_block) * row_bytes.
struct FeatureFileGeometry {
  int64_t rows = 0, row_bytes = 0;
  int64_t block_bytes = 0;     // a multiple of kFeatureBlockAlign
  int64_t rows_per_block = 1;  // >= 1
  int64_t num_blocks = 0;

  static FeatureFileGeometry For(int64_t rows, int64_t row_bytes);
  int64_t BlockOf(int64_t row) const { return row / rows_per_block; }
  int64_t OffsetInBlock(int64_t row) const { return (row % rows_per_block) * row_bytes; }
  int64_t BlockOffset(int64_t block) const { return kFeatureBlockAlign + block * block_bytes; }
  int64_t TableOffset() const { return kFeatureBlockAlign + num_blocks * block_bytes; }
  int64_t TableBytes() const;  // num_blocks * 4, padded to kFeatureBlockAlign
  int64_t FileBytes() const { return TableOffset() + TableBytes(); }
};

// Whose rows a file holds and how they are encoded.
struct FeatureFileIdentity {
  std::string dataset_id;
  int32_t partition = 0;
  int64_t node_begin = 0;  // global id of row 0
  int64_t rows = 0;
  int64_t feature_dim = 0;
  FeatureDType dtype = FeatureDType::kFloat32;
  int64_t row_bytes() const { return feature_dim * FeatureDTypeSize(dtype); }
};

// Writes a feature file: rows appended in order, then Finish() (the table,
// the header, fsync). A file not finished is incomplete (its header is
// zero): Open refuses it.
class FeatureFileWriter {
 public:
  static Status Create(const std::string& path, const FeatureFileIdentity& id,
                       std::unique_ptr<FeatureFileWriter>* out);
  ~FeatureFileWriter();
  FeatureFileWriter(const FeatureFileWriter&) = delete;
  FeatureFileWriter& operator=(const FeatureFileWriter&) = delete;
  // n encoded rows (n * row_bytes bytes), the next ones in row order.
  Status Append(const char* rows, int64_t n);
  // REQUIRES: every row appended. Writes the table and the header, syncs.
  Status Finish();
  int64_t bytes() const { return g_.FileBytes(); }
  const std::string& path() const { return path_; }

 private:
  FeatureFileWriter() = default;
  Status FlushBlock();
  std::string path_;
  int fd_ = -1;
  FeatureFileIdentity id_;
  FeatureFileGeometry g_;
  std::vector<char> block_;  // the block being filled
  int64_t rows_in_block_ = 0, rows_written_ = 0, blocks_written_ = 0;
  std::vector<uint32_t> crcs_;
  bool finished_ = false;
};

// An open feature file: its identity, geometry and checksum table.
class FeatureFile {
 public:
  // What a reader expects (the partition it serves); Open compares each.
  struct Expect {
    std::string dataset_id;
    int32_t partition = 0;
    int64_t node_begin = 0, rows = 0, feature_dim = 0;
    FeatureDType dtype = FeatureDType::kFloat32;
  };
  // Opens `path` read-only with O_DIRECT (without, where the file system
  // refuses it: direct() says which) and checks it: NotFound where it is
  // missing, Corruption naming the file where its header, size or checksum
  // table is wrong, InvalidArgument where it holds another partition.
  // `io`: the door its reads go through (null: FileIo::Default(); tests
  // inject faults), used by every BlockReader of the file too; not owned, it
  // must outlive the file.
  static Status Open(const std::string& path, const Expect& expect,
                     std::shared_ptr<const FeatureFile>* out, FileIo* io = nullptr);
  // The same checks on a descriptor handed over by a server (a same-host
  // client): it must be a regular file; `name` names it in errors. Takes
  // ownership of fd (closed on failure too).
  static Status FromDescriptor(int fd, const std::string& name, const Expect& expect,
                               std::shared_ptr<const FeatureFile>* out, FileIo* io = nullptr);
  ~FeatureFile();
  FeatureFile(const FeatureFile&) = delete;
  FeatureFile& operator=(const FeatureFile&) = delete;

  int fd() const { return fd_; }
  FileIo* io() const { return io_; }
  bool direct() const { return direct_; }  // opened with O_DIRECT
  const std::string& path() const { return path_; }
  const FeatureFileGeometry& geometry() const { return g_; }
  const FeatureFileIdentity& identity() const { return id_; }
  // OK where block b's bytes match its checksum; Corruption naming the file
  // and the block otherwise.
  Status VerifyBlock(int64_t block, const char* data) const;
  // Every row, in order, into out (rows * row_bytes bytes), each block
  // checked: the memory tier's load (sequential, large reads).
  Status ReadAll(char* out) const;

 private:
  FeatureFile() = default;
  static Status Check(int fd, bool direct, const std::string& path, const Expect& expect,
                      std::shared_ptr<const FeatureFile>* out, FileIo* io);
  int fd_ = -1;
  FileIo* io_ = nullptr;
  bool direct_ = false;
  std::string path_;
  FeatureFileIdentity id_;
  FeatureFileGeometry g_;
  std::vector<uint32_t> crcs_;
};

// An aligned buffer for O_DIRECT transfers (freed with the object).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  char* data() const { return p_; }
  size_t size() const { return n_; }
  // Gives up the memory without freeing it (reads that may still land).
  char* Leak() {
    char* p = p_;
    p_ = nullptr;
    n_ = 0;
    return p;
  }

 private:
  char* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_FEATURE_FILE_H_
