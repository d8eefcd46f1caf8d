// The same-host export's three records: layout, hello and answer
// (rpc/local_export.h). Pure functions of their bytes; fuzzed by
// fuzz/fuzz_local_export.cc.
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rpc/detail/local_export_internal.h"
#include "rpc/local_export.h"

namespace fanout::rpc {

namespace detail {
std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

std::string LimitText() {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  return "this process's descriptor limit (RLIMIT_NOFILE " +
         std::to_string(static_cast<long long>(r.rlim_cur)) + ")";
}
}  // namespace detail

using detail::kLocalVersion;
using detail::kPage;

namespace {

constexpr uint32_t kLayoutMagic = 0x584c4e46;  // "FNLX"
constexpr uint32_t kHelloMagic = 0x484c4e46;   // "FNLH"
constexpr uint32_t kAnswerMagic = 0x414c4e46;  // "FNLA"

// Little-endian append/read helpers for the records.
template <typename T>
void Put(std::string* s, T v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof(T));
}
struct Reader {
  const char* p;
  size_t left;
  template <typename T>
  bool Get(T* v) {
    if (left < sizeof(T)) return false;
    std::memcpy(v, p, sizeof(T));
    p += sizeof(T);
    left -= sizeof(T);
    return true;
  }
  bool Bytes(size_t n, std::string* out) {
    if (left < n) return false;
    out->assign(p, n);
    p += n;
    left -= n;
    return true;
  }
};

bool Known(uint16_t kind) { return kind >= 1 && kind <= 13; }

uint64_t PageRound(uint64_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

}  // namespace

const char* ExportArrayName(ExportArray a) {
  switch (a) {
    case ExportArray::kIndptr:
      return "indptr";
    case ExportArray::kIndices:
      return "indices";
    case ExportArray::kEdgeIds:
      return "edge_ids";
    case ExportArray::kEdgeTimes:
      return "edge_times";
    case ExportArray::kEdgeTypes:
      return "edge_types";
    case ExportArray::kFeatures:
      return "features";
    case ExportArray::kLabels:
      return "labels";
    case ExportArray::kSplit:
      return "split";
    case ExportArray::kOriginalIds:
      return "original_ids";
    case ExportArray::kIndices32:
      return "indices32";
    case ExportArray::kHotTable:
      return "hot_table";
    case ExportArray::kHotRows:
      return "hot_rows";
    case ExportArray::kEdgeWeights:
      return "edge_weights";
  }
  return "unknown";
}

size_t ExportArrayElementBytes(ExportArray a) {
  switch (a) {
    case ExportArray::kEdgeTypes:
    case ExportArray::kEdgeWeights:
    case ExportArray::kIndices32:
    case ExportArray::kHotTable:
      return 4;
    case ExportArray::kFeatures:
    case ExportArray::kSplit:
    case ExportArray::kHotRows:
      return 1;
    default:
      return 8;
  }
}

const ExportedArray* ExportLayout::Find(ExportArray kind) const {
  for (const auto& a : arrays)
    if (a.kind == kind) return &a;
  return nullptr;
}

uint64_t ExportBytesFor(const std::vector<ExportedArray>& arrays) {
  uint64_t at = 0;
  for (const ExportedArray& a : arrays) at += PageRound(a.count * ExportArrayElementBytes(a.kind));
  return std::max<uint64_t>(at, kPage);
}

std::string EncodeLayout(const ExportLayout& l) {
  std::string s;
  Put(&s, kLayoutMagic);
  Put(&s, kLocalVersion);
  Put(&s, static_cast<uint32_t>(l.dataset_id.size()));
  s += l.dataset_id;
  Put(&s, l.partition);
  Put(&s, l.node_begin);
  Put(&s, l.node_end);
  Put(&s, l.export_id);
  Put(&s, l.bytes);
  Put(&s, static_cast<uint32_t>(l.arrays.size()));
  for (const auto& a : l.arrays) {
    Put(&s, static_cast<uint16_t>(a.kind));
    Put(&s, uint16_t{0});
    Put(&s, a.offset);
    Put(&s, a.count);
  }
  Put(&s, static_cast<uint8_t>(l.feature_file ? 1 : 0));
  Put(&s, l.feature_cache_bytes);
  return s;
}

Status DecodeLayout(const std::string& text, ExportLayout* out) {
  Reader r{text.data(), text.size()};
  uint32_t magic = 0, version = 0, id_bytes = 0, n = 0;
  auto bad = [](const std::string& why) {
    return Status::Corruption("local export layout record: " + why);
  };
  if (!r.Get(&magic) || !r.Get(&version)) return bad("truncated header");
  if (magic != kLayoutMagic) return bad("bad magic");
  if (version != kLocalVersion)
    return bad("version " + std::to_string(version) + ", this client reads version " +
               std::to_string(kLocalVersion));
  ExportLayout l;
  if (!r.Get(&id_bytes) || id_bytes > 1024 || !r.Bytes(id_bytes, &l.dataset_id))
    return bad("truncated dataset id");
  if (!r.Get(&l.partition) || !r.Get(&l.node_begin) || !r.Get(&l.node_end) ||
      !r.Get(&l.export_id) || !r.Get(&l.bytes) || !r.Get(&n))
    return bad("truncated");
  if (l.node_begin < 0 || l.node_end < l.node_begin) return bad("node range is not a range");
  if (n > 64) return bad(std::to_string(n) + " arrays");
  uint64_t seen = 0, end = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint16_t kind = 0, pad = 0;
    ExportedArray a;
    if (!r.Get(&kind) || !r.Get(&pad) || !r.Get(&a.offset) || !r.Get(&a.count))
      return bad("truncated array list");
    if (!Known(kind)) return bad("unknown array kind " + std::to_string(kind));
    if (seen & (uint64_t{1} << kind)) return bad("array " + std::to_string(kind) + " twice");
    seen |= uint64_t{1} << kind;
    a.kind = static_cast<ExportArray>(kind);
    const uint64_t elem = ExportArrayElementBytes(a.kind);
    if (a.count > l.bytes / elem || a.offset > l.bytes || a.count * elem > l.bytes - a.offset)
      return bad(std::string("array ") + ExportArrayName(a.kind) + " lies outside the memory");
    if (a.offset % elem != 0)
      return bad(std::string("array ") + ExportArrayName(a.kind) + " is misaligned");
    end = std::max(end, a.offset + a.count * elem);
    l.arrays.push_back(a);
  }
  uint8_t feature_file = 0;
  if (!r.Get(&feature_file) || !r.Get(&l.feature_cache_bytes))
    return bad("truncated feature-file fields");
  if (feature_file > 1) return bad("feature-file flag " + std::to_string(feature_file));
  l.feature_file = feature_file == 1;
  if (l.feature_cache_bytes < 0) return bad("a negative feature cache size");
  if (r.left != 0) return bad(std::to_string(r.left) + " trailing bytes");
  // No two arrays share a byte (empty ones occupy none).
  std::vector<const ExportedArray*> by_offset;
  for (const ExportedArray& a : l.arrays)
    if (a.count > 0) by_offset.push_back(&a);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const ExportedArray* a, const ExportedArray* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const ExportedArray& prev = *by_offset[i - 1];
    if (prev.offset + prev.count * ExportArrayElementBytes(prev.kind) > by_offset[i]->offset)
      return bad(std::string("arrays ") + ExportArrayName(prev.kind) + " and " +
                 ExportArrayName(by_offset[i]->kind) + " overlap");
  }
  // The memory ends at the page after the last array: a record claiming more
  // asks the client to map memory nothing is in.
  if (l.bytes > std::max<uint64_t>(PageRound(end), kPage))
    return bad("memory of " + std::to_string(l.bytes) + " bytes for arrays that end at byte " +
               std::to_string(end));
  *out = std::move(l);
  return Status::OK();
}

std::string PrintableText(const std::string& text, size_t cap) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= cap) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string EncodeHello(const std::string& token) {
  std::string s;
  Put(&s, kHelloMagic);
  Put(&s, kLocalVersion);
  Put(&s, static_cast<uint32_t>(token.size()));
  s += token;
  return s;
}

Status DecodeHello(const char* data, size_t bytes, std::string* token) {
  Reader r{data, bytes};
  uint32_t magic = 0, version = 0, n = 0;
  if (!r.Get(&magic) || !r.Get(&version) || !r.Get(&n))
    return Status::InvalidArgument("truncated hello");
  if (magic != kHelloMagic) return Status::InvalidArgument("not a Fanout local-export hello");
  if (version != kLocalVersion)
    return Status::InvalidArgument("hello version " + std::to_string(version) +
                                   ", this server speaks version " + std::to_string(kLocalVersion));
  if (n > kMaxLocalTokenBytes || n != r.left)
    return Status::InvalidArgument("hello token length does not match");
  r.Bytes(n, token);
  return Status::OK();
}

std::string EncodeAnswer(int code, const std::string& text) {
  std::string s;
  Put(&s, kAnswerMagic);
  Put(&s, kLocalVersion);
  Put(&s, static_cast<int32_t>(code));
  Put(&s, static_cast<uint32_t>(text.size()));
  s += text;
  return s;
}

Status DecodeAnswer(const char* data, size_t bytes, std::string* text) {
  Reader r{data, bytes};
  uint32_t magic = 0, version = 0, n = 0;
  int32_t code = 0;
  if (!r.Get(&magic) || !r.Get(&version) || !r.Get(&code) || !r.Get(&n) || magic != kAnswerMagic ||
      n != r.left)
    return Status::Corruption("a malformed answer (not a Fanout server of this version?)");
  if (version != kLocalVersion)
    return Status::Corruption("answer version " + std::to_string(version));
  r.Bytes(n, text);
  if (code == 0) return Status::OK();
  // A refusal: the peer's words, printable, under a code a server gives.
  const std::string said = "refused: " + PrintableText(*text);
  text->clear();
  switch (static_cast<Status::Code>(code)) {
    case Status::Code::kInvalidArgument:
    case Status::Code::kUnauthenticated:
    case Status::Code::kResourceExhausted:
    case Status::Code::kDeadlineExceeded:
      return Status::FromCode(code, said);
    default:
      return Status::Unavailable(said + " (code " + std::to_string(code) + ")");
  }
}

}  // namespace fanout::rpc
