#include "live/base_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "common/crc32c.h"
#include "live/update_log.h"

namespace fanout::live {

namespace {

constexpr char kMagic[8] = {'F', 'N', 'L', 'B', 'A', 'S', 'E', '1'};
constexpr char kEnd[8] = {'F', 'N', 'L', 'B', 'E', 'N', 'D', '1'};
constexpr uint32_t kFormat = 1;
constexpr int64_t kHeaderBytes = 64;
enum Flags : uint32_t { kNarrow = 1, kTimes = 2, kTypes = 4, kWeights = 8 };

// Sequential writes through a buffer.
class Writer {
 public:
  Writer(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Status Put(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      const size_t k = std::min(n, kBuf - buf_.size());
      buf_.append(c, k);
      c += k;
      n -= k;
      if (buf_.size() == kBuf) FANOUT_RETURN_IF_ERROR(Flush());
    }
    return Status::OK();
  }
  template <typename T>
  Status PutValue(T v) {
    return Put(&v, sizeof v);
  }
  // One section: its length, its bytes (in pieces) and their checksum.
  template <typename Fn>
  Status Section(uint64_t bytes, Fn pieces) {
    FANOUT_RETURN_IF_ERROR(PutValue(bytes));
    crc_ = 0;
    counting_ = true;
    FANOUT_RETURN_IF_ERROR(pieces());
    counting_ = false;
    return PutValue(crc_);
  }
  Status Piece(const void* p, size_t n) {
    if (counting_) crc_ = Crc32c(p, n, crc_);
    return Put(p, n);
  }
  int64_t bytes() const { return flushed_ + static_cast<int64_t>(buf_.size()); }
  Status Flush() {
    size_t done = 0;
    while (done < buf_.size()) {
      const ssize_t w = ::write(fd_, buf_.data() + done, buf_.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Errno("cannot write", path_, errno);
      if (w == 0) return Status::IOError("cannot write " + path_ + ": wrote nothing");
      done += static_cast<size_t>(w);
    }
    flushed_ += static_cast<int64_t>(buf_.size());
    buf_.clear();
    return Status::OK();
  }

 private:
  static constexpr size_t kBuf = size_t{1} << 20;
  const int fd_;
  const std::string path_;
  std::string buf_;
  uint32_t crc_ = 0;
  bool counting_ = false;
  int64_t flushed_ = 0;
};

template <typename T>
Status PieceOf(Writer* w, ArrayView<const T> a) {
  return w->Piece(a.data(), a.size() * sizeof(T));
}

// Reads through the file with every length checked against what is left.
class Reader {
 public:
  Reader(int fd, std::string path, int64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}
  Status Get(void* p, size_t n, const std::string& what) {
    if (static_cast<int64_t>(n) > size_ - off_)
      return Status::Corruption("live base file " + path_ + ": " + what + " runs past the end");
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd_, static_cast<char*>(p) + got, n - got, off_);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Errno("cannot read", path_, errno);
      if (r == 0) return Status::Corruption("live base file " + path_ + " ends early");
      got += static_cast<size_t>(r);
      off_ += r;
    }
    return Status::OK();
  }
  // A section of exactly `bytes` (or, where `bytes` < 0, of any length up
  // to what is left) into *out, its checksum checked.
  Status Section(int64_t bytes, const std::string& what, std::string* out) {
    uint64_t n = 0;
    FANOUT_RETURN_IF_ERROR(Get(&n, 8, what));
    if ((bytes >= 0 && n != static_cast<uint64_t>(bytes)) ||
        n > static_cast<uint64_t>(size_ - off_))
      return Status::Corruption(
          "live base file " + path_ + ": " + what + " holds " + std::to_string(n) + " bytes" +
          (bytes >= 0 ? ", its header says " + std::to_string(bytes) : ", more than the file has"));
    out->resize(static_cast<size_t>(n));
    FANOUT_RETURN_IF_ERROR(Get(out->data(), out->size(), what));
    uint32_t crc = 0;
    FANOUT_RETURN_IF_ERROR(Get(&crc, 4, what));
    if (Crc32c(out->data(), out->size()) != crc)
      return Status::Corruption("live base file " + path_ + ": " + what +
                                " fails its checksum (the file is damaged)");
    return Status::OK();
  }
  template <typename T>
  Status Array(int64_t count, const std::string& what, std::vector<T>* out) {
    std::string bytes;
    FANOUT_RETURN_IF_ERROR(Section(count * static_cast<int64_t>(sizeof(T)), what, &bytes));
    out->resize(static_cast<size_t>(count));
    if (count > 0) std::memcpy(out->data(), bytes.data(), bytes.size());
    return Status::OK();
  }
  int64_t left() const { return size_ - off_; }

 private:
  const int fd_;
  const std::string path_;
  const int64_t size_;
  int64_t off_ = 0;
};

template <typename T>
T Take(const std::string& s, size_t* at) {
  T v;
  std::memcpy(&v, s.data() + *at, sizeof v);
  *at += sizeof v;
  return v;
}

}  // namespace

Status WriteBaseFile(const std::string& path, const BaseFileHeader& header,
                     const sampler::PartitionView& base, const BaseOverlay& overlay,
                     const RetryState& retries, int64_t* file_bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", tmp, errno);
  auto fail = [&](Status st) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  };
  const bool narrow = !base.indices32.empty();
  const int64_t edges = base.num_edges();
  uint32_t flags = (narrow ? kNarrow : 0) | (base.edge_times.empty() ? 0 : kTimes) |
                   (base.edge_types.empty() ? 0 : kTypes) |
                   (base.edge_weights.empty() ? 0 : kWeights);
  std::string h(kMagic, sizeof kMagic);
  auto put = [&h](auto v) { h.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(kFormat);
  put(static_cast<uint32_t>(header.part));
  put(header.version);
  put(header.node_begin);
  put(header.rows);
  put(edges);
  put(header.next_ordinal);
  put(flags);
  put(Crc32c(h.data(), h.size()));
  Writer w(fd, tmp);
  Status st = w.Put(h.data(), h.size());
  auto section = [&](auto view) {
    if (!st.ok()) return;
    st = w.Section(view.size() * sizeof(view[0]), [&] { return PieceOf(&w, view); });
  };
  section(base.indptr);
  if (narrow)
    section(base.indices32);
  else
    section(base.indices);
  section(base.edge_ids);
  section(base.edge_times);
  section(base.edge_types);
  section(base.edge_weights);
  // The overlay: counts, then (node, seq) pairs and rows; then labels.
  const uint64_t nf = overlay.feature_nodes.size(), nl = overlay.label_nodes.size();
  const uint64_t row_bytes = nf == 0 ? 0 : overlay.feature_bytes.size() / nf;
  if (st.ok())
    st = w.Section(8 * 4 + nf * 16 + overlay.feature_bytes.size() + nl * 24, [&]() -> Status {
      for (uint64_t v : {nf, row_bytes, nl, uint64_t{0}}) FANOUT_RETURN_IF_ERROR(w.Piece(&v, 8));
      for (uint64_t i = 0; i < nf; ++i) {
        FANOUT_RETURN_IF_ERROR(w.Piece(&overlay.feature_nodes[i], 8));
        FANOUT_RETURN_IF_ERROR(w.Piece(&overlay.feature_seqs[i], 8));
      }
      FANOUT_RETURN_IF_ERROR(w.Piece(overlay.feature_bytes.data(), overlay.feature_bytes.size()));
      for (uint64_t i = 0; i < nl; ++i) {
        FANOUT_RETURN_IF_ERROR(w.Piece(&overlay.label_nodes[i], 8));
        FANOUT_RETURN_IF_ERROR(w.Piece(&overlay.label_seqs[i], 8));
        FANOUT_RETURN_IF_ERROR(w.Piece(&overlay.labels[i], 8));
      }
      return Status::OK();
    });
  const uint64_t nw = retries.writers.size();
  if (st.ok())
    st = w.Section(16 + nw * 24, [&]() -> Status {
      FANOUT_RETURN_IF_ERROR(w.Piece(&retries.forgotten, 8));
      FANOUT_RETURN_IF_ERROR(w.Piece(&nw, 8));
      for (const RetryState::Writer& x : retries.writers) {
        FANOUT_RETURN_IF_ERROR(w.Piece(&x.writer, 8));
        FANOUT_RETURN_IF_ERROR(w.Piece(&x.writer_seq, 8));
        FANOUT_RETURN_IF_ERROR(w.Piece(&x.heard, 8));
      }
      return Status::OK();
    });
  if (st.ok()) st = w.Put(kEnd, sizeof kEnd);
  if (st.ok()) st = w.Flush();
  if (file_bytes != nullptr) *file_bytes = w.bytes();
  if (st.ok() && ::fsync(fd) != 0) st = Errno("cannot sync", tmp, errno);
  if (!st.ok()) return fail(st);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Errno("cannot close", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Errno("cannot rename " + tmp + " over", path, err);
  }
  return SyncFolderOf(path);
}

Status ReadBaseFile(const std::string& path, const LiveShape& shape, int part, int64_t node_begin,
                    int64_t rows, BaseFileHeader* header, Generation::Arrays* a,
                    BaseOverlay* overlay, RetryState* retries) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return Status::NotFound("no live base file " + path);
  if (fd < 0) return Errno("cannot open the live base file", path, errno);
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const int err = errno;
    ::close(fd);
    return Errno("cannot stat the live base file", path, err);
  }
  Reader r(fd, path, sb.st_size);
  header->file_bytes = sb.st_size;
  Status st = [&]() -> Status {
    auto bad = [&](const std::string& what) {
      return Status::Corruption("live base file " + path + ": " + what);
    };
    char h[kHeaderBytes];
    FANOUT_RETURN_IF_ERROR(r.Get(h, sizeof h, "the header"));
    if (std::memcmp(h, kMagic, sizeof kMagic) != 0)
      return bad("no valid header (not a live base file, or damaged)");
    uint32_t crc = 0;
    std::memcpy(&crc, h + 60, 4);
    if (Crc32c(h, 60) != crc) return bad("the header fails its checksum");
    std::string hs(h, sizeof h);
    size_t at = 8;
    const uint32_t format = Take<uint32_t>(hs, &at), file_part = Take<uint32_t>(hs, &at);
    header->version = Take<uint64_t>(hs, &at);
    header->node_begin = Take<int64_t>(hs, &at);
    header->rows = Take<int64_t>(hs, &at);
    header->edges = Take<int64_t>(hs, &at);
    header->next_ordinal = Take<int64_t>(hs, &at);
    const uint32_t flags = Take<uint32_t>(hs, &at);
    header->part = static_cast<int>(file_part);
    if (format != kFormat)
      return bad("format " + std::to_string(format) + ", this server reads " +
                 std::to_string(kFormat));
    if (header->part != part || header->node_begin != node_begin || header->rows != rows)
      return bad("it holds partition " + std::to_string(header->part) + " (rows from " +
                 std::to_string(header->node_begin) + ", " + std::to_string(header->rows) +
                 "), this server serves partition " + std::to_string(part) + " (rows from " +
                 std::to_string(node_begin) + ", " + std::to_string(rows) +
                 "): the live folder of another partition or dataset?");
    if (header->version == 0) return bad("version 0 (a base file holds a compacted base)");
    if (header->edges < 0 || header->next_ordinal < 0 ||
        header->edges > r.left() / 12)  // every edge costs at least 12 bytes
      return bad("its header's counts do not fit its size");
    const bool narrow = flags & kNarrow;
    const int64_t e = header->edges;
    // A base without edges has no per-edge arrays to flag.
    if (e > 0 && (((flags & kTimes) != 0) != shape.temporal ||
                  ((flags & kTypes) != 0) != (shape.num_edge_types > 0) ||
                  ((flags & kWeights) != 0) != shape.weighted))
      return bad("its edges' times, types or weights do not match the dataset's");
    FANOUT_RETURN_IF_ERROR(r.Array(rows + 1, "indptr", &a->indptr));
    if (a->indptr[0] != 0 || a->indptr[static_cast<size_t>(rows)] != e)
      return bad("indptr does not run from 0 to its " + std::to_string(e) + " edges");
    for (int64_t i = 0; i < rows; ++i)
      if (a->indptr[i + 1] < a->indptr[i])
        return bad("indptr decreases at row " + std::to_string(i));
    if (narrow)
      FANOUT_RETURN_IF_ERROR(r.Array(e, "indices", &a->indices32));
    else
      FANOUT_RETURN_IF_ERROR(r.Array(e, "indices", &a->indices));
    for (int64_t i = 0; i < e; ++i) {
      const int64_t v = narrow ? a->indices32[i] : a->indices[i];
      if (v < 0 || v >= shape.num_nodes_total)
        return bad("edge " + std::to_string(i) + " points at node " + std::to_string(v) +
                   ", outside [0, " + std::to_string(shape.num_nodes_total) + ")");
    }
    FANOUT_RETURN_IF_ERROR(r.Array(e, "edge ids", &a->edge_ids));
    // The dataset's ids, or an id this partition gave an added edge
    // (base_edges_total + num_parts * ordinal + part, below the next ordinal).
    const int64_t parts = std::max(1, shape.num_parts);
    for (int64_t i = 0; i < e; ++i) {
      const int64_t id = a->edge_ids[i];
      const int64_t above = id < 0 ? -1 : id - shape.base_edges_total;  // no overflow: id >= 0
      if (id < 0 ||
          (above >= 0 && (above % parts != part || above / parts >= header->next_ordinal)))
        return bad("edge " + std::to_string(i) + " has id " + std::to_string(id) +
                   ", neither the dataset's nor one this partition gave an added edge");
    }
    FANOUT_RETURN_IF_ERROR(r.Array((flags & kTimes) ? e : 0, "edge times", &a->times));
    FANOUT_RETURN_IF_ERROR(r.Array((flags & kTypes) ? e : 0, "edge types", &a->types));
    for (size_t i = 0; i < a->types.size(); ++i)
      if (a->types[i] < 0 || a->types[i] >= shape.num_edge_types)
        return bad("edge " + std::to_string(i) + " has type " + std::to_string(a->types[i]));
    FANOUT_RETURN_IF_ERROR(r.Array((flags & kWeights) ? e : 0, "edge weights", &a->weights));
    for (size_t i = 0; i < a->weights.size(); ++i)
      if (!(a->weights[i] >= 0 && std::isfinite(a->weights[i])))
        return bad("edge " + std::to_string(i) + " has weight " + std::to_string(a->weights[i]));
    // The overlay.
    std::string s;
    FANOUT_RETURN_IF_ERROR(r.Section(-1, "the overlay", &s));
    if (s.size() < 32) return bad("the overlay is cut short");
    at = 0;
    const uint64_t nf = Take<uint64_t>(s, &at), row_bytes = Take<uint64_t>(s, &at),
                   nl = Take<uint64_t>(s, &at);
    at += 8;
    if (nf > s.size() || nl > s.size() ||
        (nf > 0 && row_bytes != static_cast<uint64_t>(shape.row_bytes)) ||
        s.size() != 32 + nf * 16 + nf * row_bytes + nl * 24)
      return bad("the overlay's counts do not add up (or its rows are not the dataset's " +
                 std::to_string(shape.row_bytes) + " bytes)");
    if (nl > 0 && !shape.has_labels) return bad("labels for a dataset without labels");
    auto own = [&](int64_t v) { return v >= node_begin && v < node_begin + rows; };
    for (uint64_t i = 0; i < nf; ++i) {
      overlay->feature_nodes.push_back(Take<int64_t>(s, &at));
      overlay->feature_seqs.push_back(Take<uint64_t>(s, &at));
      if (!own(overlay->feature_nodes.back()) || overlay->feature_seqs.back() > header->version)
        return bad("feature row " + std::to_string(i) + " is not this partition's at its version");
    }
    overlay->feature_bytes.assign(s, at, nf * row_bytes);
    at += nf * row_bytes;
    for (uint64_t i = 0; i < nl; ++i) {
      overlay->label_nodes.push_back(Take<int64_t>(s, &at));
      overlay->label_seqs.push_back(Take<uint64_t>(s, &at));
      overlay->labels.push_back(Take<int64_t>(s, &at));
      if (!own(overlay->label_nodes.back()) || overlay->label_seqs.back() > header->version)
        return bad("label " + std::to_string(i) + " is not this partition's at its version");
    }
    // The retry table.
    FANOUT_RETURN_IF_ERROR(r.Section(-1, "the retry table", &s));
    if (s.size() < 16) return bad("the retry table is cut short");
    at = 0;
    retries->forgotten = Take<int64_t>(s, &at);
    const uint64_t nw = Take<uint64_t>(s, &at);
    if (nw > s.size() || s.size() != 16 + nw * 24 || retries->forgotten < 0)
      return bad("the retry table's counts do not add up");
    uint64_t last_heard = 0;
    for (uint64_t i = 0; i < nw; ++i) {
      RetryState::Writer w{};
      w.writer = Take<uint64_t>(s, &at);
      w.writer_seq = Take<uint64_t>(s, &at);
      w.heard = Take<uint64_t>(s, &at);
      if (w.heard <= last_heard || w.heard > header->version || w.writer == 0)
        return bad("the retry table's writer " + std::to_string(i) + " is out of order");
      last_heard = w.heard;
      retries->writers.push_back(w);
    }
    char end[sizeof kEnd];
    FANOUT_RETURN_IF_ERROR(r.Get(end, sizeof end, "the end mark"));
    if (std::memcmp(end, kEnd, sizeof kEnd) != 0 || r.left() != 0)
      return bad("no end mark where the file should end");
    return Status::OK();
  }();
  ::close(fd);
  return st;
}

}  // namespace fanout::live
