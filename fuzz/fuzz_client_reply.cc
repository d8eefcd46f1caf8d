// libFuzzer target: every reply a client decodes from a server, as a rogue
// server could send it. The first byte picks the kind:
//   0: a Thrift sample reply (the sample_neighbors result, read through the
//      client's own transport and protocol), then
//      the checks RpcClient::ReceiveSample and a session's merge run
//      (CheckSampleReply, CheckSampleCounts with the request's fanout,
//      CheckNeighborIds); what passes must be safe to merge.
//   1: a Thrift lookup reply (features, labels, degrees: a binary result),
//      checked for its size against the request as the clients do.
//   2: a data-plane sample reply (DecodeSampleReply), then the same merge checks.
//   3: a same-host export answer (DecodeAnswer, DecodeLayout, PrintableText).
//   4: a Thrift ppr_push reply (byte 1: the entries sent), then
//      CheckPprPushReply as RpcClient::ReceivePprPush runs it; what passes
//      must be safe for the session and client/ppr.h to use.
// Bytes 1-2 are the node count and flags; the rest is the reply.
#include <arpa/inet.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gen-cpp/Fanout.h"
#include "rpc/codec.h"
#include "rpc/framed_transport.h"
#include "rpc/local_export.h"
#include "rpc/rpc_client.h"
#include "sampler/ppr_push.h"

namespace {

using namespace fanout::rpc;  // NOLINT: fuzzer-local

constexpr int64_t kNodes = 1000;

// A reply that passed the checks, merged as ClusterSession::FetchHop does:
// every count within the fanout, every run inside the neighbors.
void Merge(const int32_t* counts, size_t nodes, const int64_t* nbr, int64_t fanout) {
  int64_t total = 0;
  if (!CheckSampleCounts(counts, nodes, fanout, &total).ok()) return;
  if (!CheckNeighborIds(nbr, total, kNodes).ok()) return;
  std::vector<int64_t> out(static_cast<size_t>(total));
  int64_t at = 0;
  for (size_t j = 0; j < nodes; ++j) {
    if (counts[j] < 0 || (fanout >= 0 && counts[j] > fanout)) __builtin_trap();
    if (counts[j] > 0) std::memcpy(out.data() + at, nbr + at, static_cast<size_t>(counts[j]) * 8);
    at += counts[j];
  }
  for (int64_t v : out)
    if (v < 0 || v >= kNodes) __builtin_trap();
}

// Reads the bytes as the body of one reply frame through the client's own
// stack (ResettingFramedTransport, FrameBoundedProtocolFactory): a field
// declaring more bytes than the frame holds is refused before any allocation.
template <typename T>
bool ReadThrift(const uint8_t* data, size_t size, T* out) {
  std::string frame(4, '\0');
  const uint32_t be = htonl(static_cast<uint32_t>(size));
  std::memcpy(frame.data(), &be, 4);
  frame.append(reinterpret_cast<const char*>(data), size);
  auto mem = std::make_shared<apache::thrift::transport::TMemoryBuffer>(
      reinterpret_cast<uint8_t*>(frame.data()), static_cast<uint32_t>(frame.size()));
  auto framed = std::make_shared<ResettingFramedTransport>(mem, MakeThriftConfig(int64_t{1} << 30));
  auto proto = FrameBoundedProtocolFactory().getProtocol(framed);
  try {
    out->read(proto.get());
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const int kind = data[0] % 5;
  const size_t nodes = data[1];
  const uint8_t flags = data[2];
  data += 3;
  size -= 3;
  SampleCall call;
  call.fanout = (flags & 1) ? -1 : flags >> 4;
  call.with_edge_ids = flags & 2;
  call.labor = flags & 4;
  switch (kind) {
    case 0: {
      gen::SampleResponse r;
      gen::Fanout_sample_neighbors_presult result;
      result.success = &r;
      if (!ReadThrift(data, size, &result)) return 0;
      SampleReply reply;
      reply.counts = r.counts;
      reply.neighbors = r.neighbors;
      reply.edge_ids = r.edge_ids;
      reply.edge_types = r.__isset.edge_types ? r.edge_types : std::string();
      reply.edge_weights = r.__isset.edge_weights ? r.edge_weights : std::string();
      if (!CheckSampleReply("fuzz", nodes, call, r.__isset.walk_step && r.walk_step,
                            r.__isset.edge_types, reply)
               .ok())
        return 0;
      if (reply.counts.size() != nodes * 4) __builtin_trap();
      // Thrift's strings are not aligned for int64: the merge reads copies.
      std::vector<int32_t> counts(nodes);
      if (nodes > 0) std::memcpy(counts.data(), reply.counts.data(), nodes * 4);
      std::vector<int64_t> nbr(reply.neighbors.size() / 8);
      if (!nbr.empty()) std::memcpy(nbr.data(), reply.neighbors.data(), nbr.size() * 8);
      Merge(counts.data(), nodes, nbr.data(), call.labor ? -1 : call.fanout);
      return 0;
    }
    case 1: {
      gen::Fanout_lookup_features_presult r;
      std::string rows;
      r.success = &rows;
      if (!ReadThrift(data, size, &r)) return 0;
      // The clients accept a lookup reply only of exactly nodes x row bytes.
      const size_t row = 8;
      if (rows.size() == nodes * row) {
        std::vector<int64_t> out(nodes);
        if (nodes > 0) std::memcpy(out.data(), rows.data(), nodes * row);
      }
      return 0;
    }
    case 2: {
      std::vector<uint64_t> aligned((size + 7) / 8);
      if (size > 0) std::memcpy(aligned.data(), data, size);
      SampleReplyView v;
      if (!DecodeSampleReply(reinterpret_cast<const char*>(aligned.data()), size, nodes,
                             call.with_edge_ids, &v, call.labor)
               .ok())
        return 0;
      Merge(v.counts, nodes, v.neighbors, call.labor ? -1 : call.fanout);
      return 0;
    }
    case 4: {
      gen::PprPushResponse r;
      gen::Fanout_ppr_push_presult result;
      result.success = &r;
      if (!ReadThrift(data, size, &result)) return 0;
      PprPushReply reply;
      reply.done = r.done;
      reply.pushed = r.pushed;
      reply.degrees = r.degrees;
      reply.out_queries = r.out_queries;
      reply.out_nodes = r.out_nodes;
      reply.out_mass = r.out_mass;
      const PprReplyBounds bounds{kNodes, fanout::sampler::kMaxPprQueries,
                                  fanout::sampler::kPprOne};
      if (!CheckPprPushReply("fuzz", nodes, bounds, reply).ok()) return 0;
      // As the session takes it: `done` of the entries sent, and pairs
      // whose every value is in range (read through copies: Thrift's strings
      // are not aligned for them).
      if (reply.done < (nodes > 0 ? 1 : 0) || static_cast<size_t>(reply.done) > nodes)
        __builtin_trap();
      const size_t k = reply.num_out();
      std::vector<int32_t> q(k);
      std::vector<int64_t> v(k), degrees(static_cast<size_t>(reply.done));
      std::vector<uint64_t> mass(k);
      if (k > 0) {
        std::memcpy(q.data(), reply.out_queries.data(), k * 4);
        std::memcpy(v.data(), reply.out_nodes.data(), k * 8);
        std::memcpy(mass.data(), reply.out_mass.data(), k * 8);
      }
      if (!degrees.empty()) std::memcpy(degrees.data(), reply.degrees.data(), degrees.size() * 8);
      for (size_t j = 0; j < k; ++j)
        if (q[j] < 0 || q[j] >= bounds.max_query || v[j] < 0 || v[j] >= kNodes ||
            mass[j] > bounds.max_mass)
          __builtin_trap();
      for (int64_t d : degrees)
        if (d < 0) __builtin_trap();
      return 0;
    }
    default: {
      std::string text;
      const fanout::Status st = DecodeAnswer(reinterpret_cast<const char*>(data), size, &text);
      if (!st.ok()) {
        if (st.code() == fanout::Status::Code::kNotFound) __builtin_trap();  // never "not here"
        for (char c : st.message())
          if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            __builtin_trap();  // a peer's text is printable when it reaches a log
        return 0;
      }
      ExportLayout l;
      if (DecodeLayout(text, &l).ok()) {
        // Every array inside the memory, none overlapping, the memory no
        // larger than the page after the last array.
        uint64_t end = 0;
        for (const ExportedArray& a : l.arrays) {
          const uint64_t e = a.offset + a.count * ExportArrayElementBytes(a.kind);
          if (e > l.bytes || e < a.offset) __builtin_trap();
          end = std::max(end, e);
        }
        if (l.bytes > std::max<uint64_t>((end + 4095) / 4096 * 4096, 4096)) __builtin_trap();
      }
      return 0;
    }
  }
}
