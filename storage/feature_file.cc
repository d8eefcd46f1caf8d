#include "storage/feature_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/crc32c.h"

namespace fanout::storage {
namespace {

constexpr char kMagic[4] = {'F', 'N', 'F', 'F'};
constexpr size_t kMaxIdBytes = 255;
// Header field offsets (little-endian).
constexpr size_t kOffVersion = 4, kOffIdLen = 8, kOffId = 12, kOffPartition = 268,
                 kOffNodeBegin = 272, kOffRows = 280, kOffDim = 288, kOffDType = 296,
                 kOffRowBytes = 304, kOffBlockBytes = 312, kOffRowsPerBlock = 320,
                 kOffNumBlocks = 328, kOffTableCrc = 336, kOffHeaderCrc = 340;

template <typename T>
void Put(char* at, T v) {
  std::memcpy(at, &v, sizeof v);
}
template <typename T>
T Get(const char* at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

Status WriteExactly(int fd, const std::string& path, const char* buf, int64_t n, int64_t offset) {
  int64_t done = 0;
  while (done < n) {
    const ssize_t r = pwrite(fd, buf + done, static_cast<size_t>(n - done), offset + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(path + ": " + Errno("writing"));
    }
    done += r;
  }
  return Status::OK();
}

std::string EncodeHeader(const FeatureFileIdentity& id, const FeatureFileGeometry& g,
                         uint32_t table_crc) {
  std::string h(kFeatureBlockAlign, '\0');
  char* p = h.data();
  std::memcpy(p, kMagic, 4);
  Put<uint32_t>(p + kOffVersion, kFeatureFileVersion);
  const size_t idn = std::min(id.dataset_id.size(), kMaxIdBytes);
  Put<uint32_t>(p + kOffIdLen, static_cast<uint32_t>(idn));
  std::memcpy(p + kOffId, id.dataset_id.data(), idn);
  Put<int32_t>(p + kOffPartition, id.partition);
  Put<int64_t>(p + kOffNodeBegin, id.node_begin);
  Put<int64_t>(p + kOffRows, id.rows);
  Put<int64_t>(p + kOffDim, id.feature_dim);
  Put<uint32_t>(p + kOffDType, static_cast<uint32_t>(id.dtype));
  Put<int64_t>(p + kOffRowBytes, g.row_bytes);
  Put<int64_t>(p + kOffBlockBytes, g.block_bytes);
  Put<int64_t>(p + kOffRowsPerBlock, g.rows_per_block);
  Put<int64_t>(p + kOffNumBlocks, g.num_blocks);
  Put<uint32_t>(p + kOffTableCrc, table_crc);
  Put<uint32_t>(p + kOffHeaderCrc, Crc32c(p, kOffHeaderCrc));
  return h;
}

}  // namespace

FeatureFileGeometry FeatureFileGeometry::For(int64_t rows, int64_t row_bytes) {
  FeatureFileGeometry g;
  g.rows = rows;
  g.row_bytes = row_bytes;
  if (row_bytes <= 0) {
    g.block_bytes = kFeatureBlockAlign;
    g.rows_per_block = 1;
    g.num_blocks = 0;
    return g;
  }
  if (row_bytes <= kFeatureBlockAlign) {
    g.block_bytes = kFeatureBlockAlign;
    g.rows_per_block = kFeatureBlockAlign / row_bytes;
  } else {
    g.block_bytes = RoundUp(row_bytes, kFeatureBlockAlign);
    g.rows_per_block = 1;
  }
  g.num_blocks = (rows + g.rows_per_block - 1) / g.rows_per_block;
  return g;
}

int64_t FeatureFileGeometry::TableBytes() const {
  return std::max<int64_t>(kFeatureBlockAlign, RoundUp(num_blocks * 4, kFeatureBlockAlign));
}

// ---- AlignedBuffer ----

AlignedBuffer::AlignedBuffer(size_t bytes) {
  const size_t n = static_cast<size_t>(
      RoundUp(static_cast<int64_t>(std::max<size_t>(bytes, 1)), kFeatureBlockAlign));
  void* p = nullptr;
  if (posix_memalign(&p, kFeatureBlockAlign, n) != 0) throw std::bad_alloc();
  p_ = static_cast<char*>(p);
  n_ = n;
}

AlignedBuffer::~AlignedBuffer() { std::free(p_); }

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    std::free(p_);
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

// ---- FeatureFileWriter ----

Status FeatureFileWriter::Create(const std::string& path, const FeatureFileIdentity& id,
                                 std::unique_ptr<FeatureFileWriter>* out) {
  if (id.rows < 0 || id.feature_dim < 0)
    return Status::InvalidArgument(path + ": a feature file of " + std::to_string(id.rows) +
                                   " rows x " + std::to_string(id.feature_dim) + " columns");
  if (id.dataset_id.size() > kMaxIdBytes)
    return Status::InvalidArgument(path + ": dataset id longer than " +
                                   std::to_string(kMaxIdBytes) + " bytes");
  std::unique_ptr<FeatureFileWriter> w(new FeatureFileWriter());
  w->path_ = path;
  w->id_ = id;
  w->g_ = FeatureFileGeometry::For(id.rows, id.row_bytes());
  w->fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) return Status::IOError(path + ": " + Errno("creating the feature file"));
  // The header block stays zero until Finish(): an unfinished file is refused.
  const std::string zero(kFeatureBlockAlign, '\0');
  FANOUT_RETURN_IF_ERROR(WriteExactly(w->fd_, path, zero.data(), kFeatureBlockAlign, 0));
  w->block_.assign(static_cast<size_t>(w->g_.block_bytes), '\0');
  w->crcs_.reserve(static_cast<size_t>(w->g_.num_blocks));
  *out = std::move(w);
  return Status::OK();
}

FeatureFileWriter::~FeatureFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status FeatureFileWriter::FlushBlock() {
  crcs_.push_back(Crc32c(block_.data(), block_.size()));
  FANOUT_RETURN_IF_ERROR(
      WriteExactly(fd_, path_, block_.data(), g_.block_bytes, g_.BlockOffset(blocks_written_)));
  ++blocks_written_;
  std::fill(block_.begin(), block_.end(), '\0');
  rows_in_block_ = 0;
  return Status::OK();
}

Status FeatureFileWriter::Append(const char* rows, int64_t n) {
  if (rows_written_ + n > id_.rows)
    return Status::InvalidArgument(path_ + ": more rows than the " + std::to_string(id_.rows) +
                                   " the file was made for");
  const int64_t rb = g_.row_bytes;
  if (rb == 0) {  // no feature values: rows without bytes, no blocks
    rows_written_ += n;
    return Status::OK();
  }
  for (int64_t i = 0; i < n; ++i) {
    if (rb > 0) std::memcpy(block_.data() + rows_in_block_ * rb, rows + i * rb, rb);
    ++rows_in_block_;
    ++rows_written_;
    if (rows_in_block_ == g_.rows_per_block) FANOUT_RETURN_IF_ERROR(FlushBlock());
  }
  return Status::OK();
}

Status FeatureFileWriter::Finish() {
  if (finished_) return Status::OK();
  if (rows_written_ != id_.rows)
    return Status::InvalidArgument(path_ + ": " + std::to_string(rows_written_) + " rows of " +
                                   std::to_string(id_.rows) + " written");
  if (g_.row_bytes > 0 && rows_in_block_ > 0) FANOUT_RETURN_IF_ERROR(FlushBlock());
  if (blocks_written_ != g_.num_blocks)
    return Status::Internal(path_ + ": wrote " + std::to_string(blocks_written_) + " blocks of " +
                            std::to_string(g_.num_blocks));
  std::string table(static_cast<size_t>(g_.TableBytes()), '\0');
  if (!crcs_.empty()) std::memcpy(table.data(), crcs_.data(), crcs_.size() * 4);
  FANOUT_RETURN_IF_ERROR(WriteExactly(fd_, path_, table.data(), g_.TableBytes(), g_.TableOffset()));
  const std::string header = EncodeHeader(id_, g_, Crc32c(crcs_.data(), crcs_.size() * 4));
  FANOUT_RETURN_IF_ERROR(WriteExactly(fd_, path_, header.data(), kFeatureBlockAlign, 0));
  if (fsync(fd_) != 0) return Status::IOError(path_ + ": " + Errno("fsync"));
  if (::close(fd_) != 0) {
    fd_ = -1;
    return Status::IOError(path_ + ": " + Errno("close"));
  }
  fd_ = -1;
  finished_ = true;
  return Status::OK();
}

// ---- FeatureFile ----

FeatureFile::~FeatureFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status FeatureFile::Open(const std::string& path, const Expect& expect,
                         std::shared_ptr<const FeatureFile>* out, FileIo* io) {
  bool direct = true;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0 && errno == EINVAL) {  // a file system without O_DIRECT (tmpfs)
    direct = false;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    if (errno == ENOENT)
      return Status::NotFound(path + ": no such feature file (the dataset's meta.json names it)");
    return Status::IOError(path + ": " + Errno("opening the feature file"));
  }
  return Check(fd, direct, path, expect, out, io);
}

Status FeatureFile::FromDescriptor(int fd, const std::string& name, const Expect& expect,
                                   std::shared_ptr<const FeatureFile>* out, FileIo* io) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) {
    ::close(fd);
    return Status::InvalidArgument(name + ": " + Errno("not a descriptor"));
  }
  if ((flags & O_ACCMODE) != O_RDONLY) {
    ::close(fd);
    return Status::InvalidArgument(name + ": the feature file was handed over writable");
  }
  return Check(fd, (flags & O_DIRECT) != 0, name, expect, out, io);
}

Status FeatureFile::Check(int fd, bool direct, const std::string& path, const Expect& expect,
                          std::shared_ptr<const FeatureFile>* out, FileIo* io) {
  std::shared_ptr<FeatureFile> f(new FeatureFile());
  f->fd_ = fd;  // owned from here: closed with f on every path
  f->direct_ = direct;
  f->path_ = path;
  f->io_ = io != nullptr ? io : FileIo::Default();
  struct stat sb {};
  if (fstat(fd, &sb) != 0) return Status::IOError(path + ": " + Errno("fstat"));
  if (!S_ISREG(sb.st_mode)) return Status::InvalidArgument(path + ": not a regular file");
  if (sb.st_size < kFeatureBlockAlign)
    return Status::Corruption(path + ": " + std::to_string(sb.st_size) +
                              " bytes, shorter than its header (truncated?)");
  AlignedBuffer hb(kFeatureBlockAlign);
  FANOUT_RETURN_IF_ERROR(
      ReadFully(f->io_, fd, direct, path + ": header", hb.data(), kFeatureBlockAlign, 0));
  const char* h = hb.data();
  if (std::memcmp(h, kMagic, 4) != 0)
    return Status::Corruption(path +
                              ": not a Fanout feature file (bad magic; an unfinished write?)");
  if (Get<uint32_t>(h + kOffHeaderCrc) != Crc32c(h, kOffHeaderCrc))
    return Status::Corruption(path + ": its header fails its checksum");
  if (Get<uint32_t>(h + kOffVersion) != kFeatureFileVersion)
    return Status::InvalidArgument(
        path + ": feature file version " + std::to_string(Get<uint32_t>(h + kOffVersion)) +
        ", this build reads version " + std::to_string(kFeatureFileVersion));
  FeatureFileIdentity& id = f->id_;
  const uint32_t idn = Get<uint32_t>(h + kOffIdLen);
  if (idn > kMaxIdBytes) return Status::Corruption(path + ": dataset id length out of range");
  id.dataset_id.assign(h + kOffId, idn);
  id.partition = Get<int32_t>(h + kOffPartition);
  id.node_begin = Get<int64_t>(h + kOffNodeBegin);
  id.rows = Get<int64_t>(h + kOffRows);
  id.feature_dim = Get<int64_t>(h + kOffDim);
  const uint32_t dt = Get<uint32_t>(h + kOffDType);
  if (dt > static_cast<uint32_t>(FeatureDType::kBFloat16))
    return Status::Corruption(path + ": unknown feature dtype " + std::to_string(dt));
  id.dtype = static_cast<FeatureDType>(dt);
  // Bounded before any arithmetic with them (the file size and table size
  // derive from them).
  if (id.rows < 0 || id.rows > (int64_t{1} << 40) || id.feature_dim < 0 ||
      id.feature_dim > (int64_t{1} << 24))
    return Status::Corruption(path + ": rows or feature dim out of range");
  FeatureFileGeometry& g = f->g_;
  g.row_bytes = Get<int64_t>(h + kOffRowBytes);
  g.block_bytes = Get<int64_t>(h + kOffBlockBytes);
  g.rows_per_block = Get<int64_t>(h + kOffRowsPerBlock);
  g.num_blocks = Get<int64_t>(h + kOffNumBlocks);
  g.rows = id.rows;
  const FeatureFileGeometry want = FeatureFileGeometry::For(id.rows, id.row_bytes());
  if (g.row_bytes != want.row_bytes || g.block_bytes != want.block_bytes ||
      g.rows_per_block != want.rows_per_block || g.num_blocks != want.num_blocks)
    return Status::Corruption(path + ": its block geometry is not the one its rows make");
  // Who it belongs to, before its size: another partition's file says so.
  if (id.dataset_id != expect.dataset_id || id.partition != expect.partition ||
      id.node_begin != expect.node_begin || id.rows != expect.rows)
    return Status::InvalidArgument(
        path + ": holds " + std::to_string(id.rows) + " rows from node " +
        std::to_string(id.node_begin) + " of partition " + std::to_string(id.partition) +
        " of dataset " + id.dataset_id + ", not partition " + std::to_string(expect.partition) +
        " of " + expect.dataset_id + " (another dataset's file?)");
  if (id.feature_dim != expect.feature_dim || id.dtype != expect.dtype)
    return Status::InvalidArgument(path + ": rows of " + std::to_string(id.feature_dim) + " x " +
                                   FeatureDTypeName(id.dtype) + ", the dataset says " +
                                   std::to_string(expect.feature_dim) + " x " +
                                   FeatureDTypeName(expect.dtype));
  if (sb.st_size != g.FileBytes())
    return Status::Corruption(path + ": " + std::to_string(sb.st_size) +
                              " bytes, its header says " + std::to_string(g.FileBytes()) +
                              " (truncated or extended?)");
  AlignedBuffer table(static_cast<size_t>(g.TableBytes()));
  FANOUT_RETURN_IF_ERROR(ReadFully(f->io_, fd, direct, path + ": checksum table", table.data(),
                                   g.TableBytes(), g.TableOffset()));
  f->crcs_.resize(static_cast<size_t>(g.num_blocks));
  if (!f->crcs_.empty()) std::memcpy(f->crcs_.data(), table.data(), f->crcs_.size() * 4);
  if (Crc32c(f->crcs_.data(), f->crcs_.size() * 4) != Get<uint32_t>(h + kOffTableCrc))
    return Status::Corruption(path + ": its checksum table fails its checksum");
  *out = std::move(f);
  return Status::OK();
}

Status FeatureFile::VerifyBlock(int64_t block, const char* data) const {
  if (block < 0 || block >= g_.num_blocks)
    return Status::InvalidArgument(path_ + ": block " + std::to_string(block) + " is outside [0, " +
                                   std::to_string(g_.num_blocks) + ")");
  if (Crc32c(data, static_cast<size_t>(g_.block_bytes)) != crcs_[static_cast<size_t>(block)])
    return Status::Corruption(path_ + ": block " + std::to_string(block) + " (bytes " +
                              std::to_string(g_.BlockOffset(block)) + ".." +
                              std::to_string(g_.BlockOffset(block) + g_.block_bytes) +
                              ") fails its checksum; not serving it");
  return Status::OK();
}

Status FeatureFile::ReadAll(char* out) const {
  if (g_.row_bytes == 0 || g_.num_blocks == 0) return Status::OK();
  constexpr int64_t kChunk = int64_t{8} << 20;
  const int64_t blocks_per_read = std::max<int64_t>(1, kChunk / g_.block_bytes);
  AlignedBuffer buf(static_cast<size_t>(blocks_per_read * g_.block_bytes));
  int64_t row = 0;
  for (int64_t b = 0; b < g_.num_blocks; b += blocks_per_read) {
    const int64_t n = std::min(blocks_per_read, g_.num_blocks - b);
    FANOUT_RETURN_IF_ERROR(
        ReadFully(io_, fd_, direct_,
                  path_ + ": blocks " + std::to_string(b) + ".." + std::to_string(b + n - 1),
                  buf.data(), n * g_.block_bytes, g_.BlockOffset(b)));
    for (int64_t i = 0; i < n; ++i) {
      const char* block = buf.data() + i * g_.block_bytes;
      FANOUT_RETURN_IF_ERROR(VerifyBlock(b + i, block));
      const int64_t k = std::min(g_.rows_per_block, g_.rows - row);
      std::memcpy(out + row * g_.row_bytes, block, static_cast<size_t>(k * g_.row_bytes));
      row += k;
    }
  }
  return Status::OK();
}

}  // namespace fanout::storage
