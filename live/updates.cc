#include "live/updates.h"

#include <cstring>

namespace fanout::live {

namespace {

constexpr uint32_t kMagic = 0x42554e46;  // "FNUB"
constexpr uint32_t kVersion = 2;         // 2: the writer and its batch number after the header
constexpr uint32_t kVersionWithoutWriter = 1;
constexpr size_t kEdgeBytes = 8 + 8 + 8 + 4 + 4;

template <typename T>
void Put(std::string* s, T v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof v);
}

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  template <typename T>
  bool Get(T* v) {
    if (b_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Bytes(size_t n, std::string_view* out) {
    if (b_.size() - pos_ < n) return false;
    *out = b_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  size_t left() const { return b_.size() - pos_; }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

void PutEdges(std::string* s, const std::vector<EdgeUpdate>& edges) {
  for (const EdgeUpdate& e : edges) {
    Put(s, e.src);
    Put(s, e.dst);
    Put(s, e.time);
    Put(s, e.weight);
    Put(s, e.type);
  }
}

bool GetEdges(Reader* r, uint64_t n, std::vector<EdgeUpdate>* out) {
  out->resize(n);
  for (EdgeUpdate& e : *out)
    if (!r->Get(&e.src) || !r->Get(&e.dst) || !r->Get(&e.time) || !r->Get(&e.weight) ||
        !r->Get(&e.type))
      return false;
  return true;
}

}  // namespace

bool RetryTable::Admit(uint64_t writer, uint64_t writer_seq, uint64_t seq) {
  if (writer == 0 || capacity_ == 0) return true;
  auto it = last_.find(writer);
  if (it != last_.end()) {
    by_heard_.erase(it->second.heard);
    it->second.heard = seq;
    by_heard_[seq] = writer;
    if (writer_seq <= it->second.writer_seq) return false;
    it->second.writer_seq = writer_seq;
    return true;
  }
  if (last_.size() >= capacity_) {
    auto oldest = by_heard_.begin();
    last_.erase(oldest->second);
    by_heard_.erase(oldest);
    ++forgotten_;
  }
  last_[writer] = {writer_seq, seq};
  by_heard_[seq] = writer;
  return true;
}

void RetryTable::Export(RetryState* out) const {
  out->writers.clear();
  out->writers.reserve(by_heard_.size());
  for (const auto& [heard, writer] : by_heard_)
    out->writers.push_back({writer, last_.at(writer).writer_seq, heard});
  out->forgotten = forgotten_;
}

void RetryTable::Import(const RetryState& state) {
  last_.clear();
  by_heard_.clear();
  forgotten_ = state.forgotten;
  for (const RetryState::Writer& w : state.writers) {
    if (w.writer == 0) continue;
    auto it = last_.find(w.writer);
    if (it != last_.end()) by_heard_.erase(it->second.heard);
    last_[w.writer] = {w.writer_seq, w.heard};
    by_heard_[w.heard] = w.writer;
  }
  while (last_.size() > capacity_ && !by_heard_.empty()) {
    auto oldest = by_heard_.begin();
    last_.erase(oldest->second);
    by_heard_.erase(oldest);
    ++forgotten_;
  }
}

int64_t EncodedBatchBytes(const UpdateBatch& b) {
  return static_cast<int64_t>(64 + (b.add_edges.size() + b.remove_edges.size()) * kEdgeBytes +
                              b.feature_rows.size() * 8 + b.feature_bytes.size() +
                              b.label_rows.size() * 16);
}

std::string EncodeUpdateBatch(const UpdateBatch& b) {
  std::string s;
  s.reserve(static_cast<size_t>(EncodedBatchBytes(b)));
  Put(&s, kMagic);
  Put(&s, kVersion);
  Put<uint64_t>(&s, b.add_edges.size());
  Put<uint64_t>(&s, b.remove_edges.size());
  Put<uint64_t>(&s, b.feature_rows.size());
  Put<int64_t>(&s, b.row_bytes);
  Put<uint64_t>(&s, b.label_rows.size());
  Put<uint64_t>(&s, b.writer);
  Put<uint64_t>(&s, b.writer_seq);
  PutEdges(&s, b.add_edges);
  PutEdges(&s, b.remove_edges);
  for (int64_t r : b.feature_rows) Put(&s, r);
  s += b.feature_bytes;
  for (size_t i = 0; i < b.label_rows.size(); ++i) {
    Put(&s, b.label_rows[i]);
    Put(&s, b.labels[i]);
  }
  return s;
}

Status DecodeUpdateBatch(std::string_view bytes, UpdateBatch* out) {
  *out = UpdateBatch();
  if (static_cast<int64_t>(bytes.size()) > kMaxBatchBytes)
    return Status::InvalidArgument("an update batch of " + std::to_string(bytes.size()) +
                                   " bytes is over the limit of " + std::to_string(kMaxBatchBytes));
  Reader r(bytes);
  uint32_t magic = 0, version = 0;
  uint64_t adds = 0, removes = 0, feats = 0, labels = 0;
  int64_t row_bytes = 0;
  if (!r.Get(&magic) || !r.Get(&version) || !r.Get(&adds) || !r.Get(&removes) || !r.Get(&feats) ||
      !r.Get(&row_bytes) || !r.Get(&labels))
    return Status::InvalidArgument("update batch: its header is cut short");
  if (magic != kMagic) return Status::InvalidArgument("not an update batch (bad magic)");
  if (version != kVersion && version != kVersionWithoutWriter)
    return Status::InvalidArgument("update batch of version " + std::to_string(version) +
                                   "; this server reads 1 and " + std::to_string(kVersion));
  if (version == kVersion && (!r.Get(&out->writer) || !r.Get(&out->writer_seq)))
    return Status::InvalidArgument("update batch: its header is cut short");
  if (out->writer != 0 && out->writer_seq == 0)
    return Status::InvalidArgument("update batch: writer " + std::to_string(out->writer) +
                                   " numbers a batch 0 (its batches count from 1)");
  const uint64_t max_ops = static_cast<uint64_t>(kMaxBatchOperations);
  if (adds > max_ops || removes > max_ops || feats > max_ops || labels > max_ops ||
      adds + removes + feats + labels > max_ops)
    return Status::InvalidArgument("an update batch of more than " +
                                   std::to_string(kMaxBatchOperations) + " operations");
  if (row_bytes < 0 || row_bytes > (int64_t{1} << 24) || (feats > 0 && row_bytes == 0))
    return Status::InvalidArgument("update batch: feature rows of " + std::to_string(row_bytes) +
                                   " bytes");
  // Every count against the bytes there are, before anything is allocated.
  const unsigned __int128 need = (unsigned __int128)(adds + removes) * kEdgeBytes +
                                 (unsigned __int128)feats * (8 + static_cast<uint64_t>(row_bytes)) +
                                 (unsigned __int128)labels * 16;
  if (need != r.left())
    return Status::InvalidArgument("update batch: its counts say " +
                                   std::to_string(static_cast<uint64_t>(need)) +
                                   " bytes of operations, it holds " + std::to_string(r.left()));
  GetEdges(&r, adds, &out->add_edges);
  GetEdges(&r, removes, &out->remove_edges);
  out->feature_rows.resize(feats);
  for (int64_t& row : out->feature_rows) r.Get(&row);
  out->row_bytes = row_bytes;
  std::string_view fb;
  r.Bytes(feats * static_cast<uint64_t>(row_bytes), &fb);
  out->feature_bytes.assign(fb);
  out->label_rows.resize(labels);
  out->labels.resize(labels);
  for (uint64_t i = 0; i < labels; ++i) {
    r.Get(&out->label_rows[i]);
    r.Get(&out->labels[i]);
  }
  return Status::OK();
}

Status CheckBatch(const LiveShape& shape, int64_t node_begin, int64_t node_end,
                  const UpdateBatch& b) {
  auto Owns = [&](int64_t v) { return v >= node_begin && v < node_end; };
  auto Op = [](const char* kind, size_t i) { return std::string(kind) + " " + std::to_string(i); };
  const int64_t n = shape.num_nodes_total;
  auto node_in_range = [&](int64_t v) { return v >= 0 && v < n; };
  auto check_edge = [&](const EdgeUpdate& e, const std::string& op, bool removal) -> Status {
    if (!Owns(e.src))
      return Status::InvalidArgument(op + ": source " + std::to_string(e.src) +
                                     " is not in this partition's rows [" +
                                     std::to_string(node_begin) + ", " + std::to_string(node_end) +
                                     ") (the client routes each edge to its source's partition)");
    if (!node_in_range(e.dst))
      return Status::InvalidArgument(op + ": destination " + std::to_string(e.dst) +
                                     " is out of range [0, " + std::to_string(n) + ")");
    if (shape.num_edge_types > 0) {
      if (e.type >= shape.num_edge_types || e.type < (removal ? -1 : 0))
        return Status::InvalidArgument(op + ": edge type " + std::to_string(e.type) +
                                       " is not one of the dataset's " +
                                       std::to_string(shape.num_edge_types));
    } else if (e.type != 0 && !(removal && e.type == -1)) {
      return Status::InvalidArgument(op + ": edge type " + std::to_string(e.type) +
                                     " on a homogeneous dataset (give 0)");
    }
    if (!removal && !(e.weight >= 0 && e.weight < 3.0e38f))
      return Status::InvalidArgument(op + ": weight " + std::to_string(e.weight) +
                                     " is not a finite non-negative number");
    if (!removal && !shape.temporal && e.time != 0)
      return Status::InvalidArgument(op + ": a time on a dataset without edge times");
    return Status::OK();
  };
  for (size_t i = 0; i < b.add_edges.size(); ++i)
    FANOUT_RETURN_IF_ERROR(check_edge(b.add_edges[i], Op("added edge", i), false));
  for (size_t i = 0; i < b.remove_edges.size(); ++i)
    FANOUT_RETURN_IF_ERROR(check_edge(b.remove_edges[i], Op("removed edge", i), true));
  if (!b.feature_rows.empty()) {
    if (shape.row_bytes == 0)
      return Status::InvalidArgument("feature rows given for a dataset without features");
    if (b.row_bytes != shape.row_bytes)
      return Status::InvalidArgument("feature rows of " + std::to_string(b.row_bytes) +
                                     " bytes; this dataset's rows are " +
                                     std::to_string(shape.row_bytes) + " bytes");
    if (static_cast<int64_t>(b.feature_bytes.size()) !=
        b.row_bytes * static_cast<int64_t>(b.feature_rows.size()))
      return Status::InvalidArgument("feature bytes do not match their rows");
  }
  for (size_t i = 0; i < b.feature_rows.size(); ++i)
    if (!Owns(b.feature_rows[i]))
      return Status::InvalidArgument(Op("feature row", i) + ": node " +
                                     std::to_string(b.feature_rows[i]) +
                                     " is not in this partition");
  if (b.labels.size() != b.label_rows.size())
    return Status::InvalidArgument("labels and their rows differ in count");
  if (!b.label_rows.empty() && !shape.has_labels)
    return Status::InvalidArgument("labels given for a dataset without labels");
  for (size_t i = 0; i < b.label_rows.size(); ++i)
    if (!Owns(b.label_rows[i]))
      return Status::InvalidArgument(Op("label", i) + ": node " + std::to_string(b.label_rows[i]) +
                                     " is not in this partition");
  return Status::OK();
}

}  // namespace fanout::live
