// The same-host data plane: a server exports its partition arrays as sealed,
// read-only shared memory, and clients on its host map them and read them
// themselves. The server never writes into memory a request names.
//
//   server: LocalExport::Create(arrays) copies the arrays into one memfd
//           (MFD_ALLOW_SEALING), maps it read-only, seals it (F_SEAL_WRITE,
//           F_SEAL_GROW, F_SEAL_SHRINK, F_SEAL_SEAL) and serves from that
//           mapping itself (no second copy). LocalExport::Listen(path)
//           answers a Unix-domain socket in a folder only its uid can
//           write: a peer whose uid is not allowed is refused at accept
//           (SO_PEERCRED, no handshake slot held); an allowed peer's hello is
//           checked (the token where one is required) and answered with the
//           layout record and the descriptor (SCM_RIGHTS).
//   client: FetchLocalExport(path, expect) connects, checks that the
//           listening side is the server's uid (SO_PEERCRED) before it sends
//           anything (the hello carries the token), receives the record and
//           the descriptor, compares the record with what the server's
//           PartitionInfo said (identity, size) before it maps anything,
//           checks the seals and that the arrays lie inside the memory
//           without overlapping, and maps it PROT_READ without populating it
//           (LocalMapping::Populate() after the caller validated contents).
//
// Trust (docs/RELIABILITY.md): the server trusts the kernel's SO_PEERCRED and
// the token; the client trusts the uid the server's RPC connection advertises
// (or its own uid or root), the seals, and nothing the socket peer says: its
// text is escaped and capped, its codes never read as "no export here".
//
// Wire (SOCK_SEQPACKET, one message each way, little-endian):
//   hello  = "FNLH" u32 version u32 token_bytes, token
//   answer = "FNLA" u32 version i32 code u32 text_bytes, text (code != 0: the
//            refusal, text its message; code 0: text is the layout record,
//            and the message carries the descriptor)
//   layout = EncodeLayout below ("FNLX", version, ids, node range, arrays).
//
// Files: local_export_wire.cc (the three records), local_export_server.cc,
// local_export_client.cc, local_socket_path.cc (where sockets live).
//
// Thread safety: a LocalExport's views and Stats() from any thread; Listen
// and Stop from one controlling thread. LocalMapping is immutable but for
// Populate(), which is safe to call from any thread.
#ifndef FANOUT_RPC_LOCAL_EXPORT_H_
#define FANOUT_RPC_LOCAL_EXPORT_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace fanout::rpc {

// What an exported array holds (the partition's arrays; see
// sampler::PartitionView).
enum class ExportArray : uint16_t {
  kIndptr = 1,        // int64, nodes + 1 (local rows)
  kIndices = 2,       // int64 global neighbor ids, one per stored edge
  kEdgeIds = 3,       // int64, one per stored edge
  kEdgeTimes = 4,     // int64, one per stored edge
  kEdgeTypes = 5,     // int32, one per stored edge
  kFeatures = 6,      // uint8 bytes, nodes x row bytes
  kLabels = 7,        // int64, one per node
  kSplit = 8,         // uint8, one per node
  kOriginalIds = 9,   // int64, one per node
  kIndices32 = 10,    // int32 global neighbor ids (compact topology), instead of kIndices
  kHotTable = 11,     // int32 (row, slot) pairs: the disk tier's hot set (storage/row_cache.h)
  kHotRows = 12,      // uint8 bytes: its rows, slot by slot
  kEdgeWeights = 13,  // float32, one per stored edge (weighted datasets)
};
const char* ExportArrayName(ExportArray a);
// Element size of each kind (1, 4 or 8 bytes).
size_t ExportArrayElementBytes(ExportArray a);

struct ExportedArray {
  ExportArray kind = ExportArray::kIndptr;
  uint64_t offset = 0;  // bytes from the start of the memory (page aligned)
  uint64_t count = 0;   // elements
};

// The layout record: what the memory holds and whose it is.
struct ExportLayout {
  std::string dataset_id;
  int32_t partition = 0;
  int64_t node_begin = 0, node_end = 0;
  uint64_t export_id = 0;  // random per export: a restarted server is a new export
  uint64_t bytes = 0;      // size of the memory
  std::vector<ExportedArray> arrays;
  // The disk tier: the feature rows are not in the memory but in the
  // partition's feature file, handed over read-only as a second descriptor
  // (storage/feature_file.h); a client keeps a SIEVE cache of its own reads
  // of feature_cache_bytes (the server's size).
  bool feature_file = false;
  int64_t feature_cache_bytes = 0;
  const ExportedArray* Find(ExportArray kind) const;
};
std::string EncodeLayout(const ExportLayout& layout);
// Corruption naming what is wrong (truncated, bad magic or version, arrays
// overlapping or outside `bytes`, `bytes` past the page after the last
// array, unknown kinds, duplicates).
Status DecodeLayout(const std::string& text, ExportLayout* out);
// What the creator of an export of these arrays makes its size: each array
// page aligned, at least one page.
uint64_t ExportBytesFor(const std::vector<ExportedArray>& arrays);

// A peer's text made safe to print: control and non-ASCII bytes as \xNN,
// at most `cap` bytes kept (then "...").
std::string PrintableText(const std::string& text, size_t cap = 256);

// Hello and answer messages (the socket's two messages).
constexpr size_t kMaxLocalTokenBytes = 4096;
std::string EncodeHello(const std::string& token);
Status DecodeHello(const char* data, size_t bytes, std::string* token);
std::string EncodeAnswer(int code, const std::string& text);
// OK with *text the layout record, or the peer's refusal as a Status: its
// text made printable (PrintableText), its code one of the refusals a server
// gives (InvalidArgument, Unauthenticated, ResourceExhausted,
// DeadlineExceeded), anything else Unavailable; never NotFound (which means
// "no export on this host" to the caller).
Status DecodeAnswer(const char* data, size_t bytes, std::string* text);

struct LocalExportOptions {
  std::vector<uid_t> allowed_uids;  // empty: this process's uid only
  std::string token;                // non-empty: a hello must carry it
  // Set: decides every hello instead of `token` (called on the socket's thread
  // with the credential the hello carries; a refusal's code and text are sent
  // back). The server's: a data-plane ticket of a tenant that may map it
  // (server/tenancy.h, MayMapExport), or its auth token.
  std::function<Status(const std::string& credential)> authorize;
  int handshake_timeout_ms = 2000;  // a client that says nothing this long is dropped
  int max_pending = 256;            // handshakes at once; more are refused (counted)
};

struct LocalExportStats {
  int64_t bytes = 0;          // of the exported memory
  int64_t handed = 0;         // descriptors handed to clients
  int64_t refused_uid = 0;    // peers whose uid is not allowed (refused at accept)
  int64_t refused_token = 0;  // hellos without the right token
  int64_t malformed = 0;      // junk, truncated or oversized hellos
  int64_t timed_out = 0;      // peers that said nothing in time, or never read the answer
  int64_t overloaded = 0;     // connections refused while max_pending handshakes ran
  int64_t accept_errors = 0;  // accept() failures (e.g. the descriptor limit)
  std::string last_refusal;   // the last refusal's message
};

// Exported memory as one side sees it: the layout and where it is mapped.
class ExportedMemory {
 public:
  const ExportLayout& layout() const { return layout_; }
  // Where array `kind` lies in this process's read-only mapping (null with
  // count 0 where it is empty or absent).
  const void* Data(ExportArray kind, uint64_t* count) const;
  const char* base() const { return base_; }

 protected:
  ExportedMemory() = default;
  ~ExportedMemory() = default;
  ExportLayout layout_;
  const char* base_ = nullptr;
};

// Sealed, read-only memory holding a partition's arrays, and the socket that
// hands it out.
class LocalExport : public ExportedMemory {
 public:
  struct Source {
    ExportArray kind;
    const void* data;
    uint64_t count;  // elements
  };
  // Copies `arrays` into new sealed memory. Empty arrays are recorded with
  // count 0. NotSupported where memfd sealing is not available.
  static Status Create(const std::string& dataset_id, int32_t partition, int64_t node_begin,
                       int64_t node_end, const std::vector<Source>& arrays,
                       std::unique_ptr<LocalExport>* out);
  ~LocalExport();
  LocalExport(const LocalExport&) = delete;
  LocalExport& operator=(const LocalExport&) = delete;

  // The disk tier: hands `fd` (the partition's feature file, opened
  // read-only; owned from here) to every client beside the memory, and
  // tells them the size of their own row cache. Before Listen.
  Status SetFeatureFile(int fd, int64_t cache_bytes);

  // Binds `path` (an existing socket file there is replaced when no server
  // answers on it; one that answers is an error) and serves hellos on a
  // thread of its own until Stop(). The folder must pass CheckSocketFolder.
  // The socket file is made 0600, or 0666 where options allow other uids
  // (their uid is checked on every connect), without following links.
  Status Listen(const std::string& path, const LocalExportOptions& options);
  // Idempotent: closes the socket and removes its file (only the file this
  // export bound: another server's socket at the path stays). Mappings
  // clients hold stay valid.
  void Stop();
  const std::string& path() const { return path_; }
  LocalExportStats Stats() const;

  struct Impl;

 private:
  LocalExport() = default;
  int fd_ = -1;
  std::string path_;
  ino_t inode_ = 0;  // of the socket file Listen bound
  dev_t device_ = 0;
  std::unique_ptr<Impl> impl_;
};

// What a client knows of an export before it maps it: what the server's
// PartitionInfo says (over its RPC connection, which the client trusts).
struct ExpectedExport {
  std::string dataset_id;
  int32_t partition = 0;
  int64_t node_begin = 0, node_end = 0;
  uint64_t export_id = 0;
  uint64_t bytes = 0;           // the export's exact size; 0 = not said (a server before it)
  uint64_t max_bytes = 0;       // where `bytes` is 0: the most it may be (0 = no bound)
  uid_t server_uid = 0;         // the uid that must hold the socket
  bool has_server_uid = false;  // false: this process's euid or root
  bool feature_file = false;    // the server's features are on disk: a feature file comes too
};

// A partition's exported memory mapped read-only in this process. Stays
// valid as long as this object lives, whatever happens to the server.
class LocalMapping : public ExportedMemory {
 public:
  ~LocalMapping();
  LocalMapping(const LocalMapping&) = delete;
  LocalMapping& operator=(const LocalMapping&) = delete;
  // Reads the whole mapping in ahead of use (no first-touch fault per page in
  // the first batches). Called once its contents were checked: a peer's
  // claimed size costs nothing before that.
  void Populate() const;
  // The feature file handed over beside the memory (layout().feature_file),
  // given to the caller once (who then owns it); -1 where none came.
  int TakeFeatureFile() {
    const int fd = feature_fd_;
    feature_fd_ = -1;
    return fd;
  }

 private:
  friend Status FetchLocalExport(const std::string&, const std::string&, int, const ExpectedExport&,
                                 std::shared_ptr<LocalMapping>*);
  LocalMapping() = default;
  size_t bytes_ = 0;
  int feature_fd_ = -1;
};

// Connects to a server's local socket, checks that the listening side runs as
// `expect`'s uid (before anything is sent: the hello carries `token`, empty
// where none is needed), and maps what it hands over once the layout record
// is `expect`'s (identity and size) and the memory is sealed and as large as
// the record says. Errors name the path and the reason: no such socket
// (NotFound: the server is on another host), a socket of another uid
// (Unauthenticated naming both uids), refused (the server's message,
// printable), the descriptor limit, a layout, identity or seals that do not
// hold (Corruption / InvalidArgument).
Status FetchLocalExport(const std::string& path, const std::string& token, int timeout_ms,
                        const ExpectedExport& expect, std::shared_ptr<LocalMapping>* out);

// The folder of default socket paths: $XDG_RUNTIME_DIR/fanout (else
// /run/fanout as root, /tmp/fanout-<euid> otherwise).
std::string DefaultLocalSocketDir();
// Makes `dir` when missing (0700; 0711 where `others_may_connect`: other uids
// may reach a socket by name but list or place nothing), then checks it with
// lstat: a folder, not a symlink, owned by this euid, no group or other bits
// but search where `others_may_connect`. The error says what is wrong (for
// example another uid made the folder first) and what to do.
Status PrepareLocalSocketDir(const std::string& dir, bool others_may_connect);
// The folder of an explicit socket path: a folder, not a symlink, owned by
// this euid or root, writable by no other uid unless sticky (as /tmp is).
Status CheckSocketFolder(const std::string& socket_path);
// The default socket path for a server: DefaultLocalSocketDir()/<dataset
// id>-p<partition>-<rpc port>.sock (PrepareLocalSocketDir makes the folder).
std::string DefaultLocalSocketPath(const std::string& dataset_id, int partition, int rpc_port);

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_LOCAL_EXPORT_H_
