// The same-host export's three decoders (rpc/local_export.h): what a local
// peer sends a server (hello) and what a client reads from whatever answers
// on a socket path (answer, layout record). Each must refuse junk by name.
#include <cstddef>
#include <cstdint>
#include <string>

#include "rpc/local_export.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* p = reinterpret_cast<const char*>(data);
  std::string token, text;
  (void)fanout::rpc::DecodeHello(p, size, &token);
  if (fanout::rpc::DecodeAnswer(p, size, &text).ok()) {
    fanout::rpc::ExportLayout l;
    if (fanout::rpc::DecodeLayout(text, &l).ok()) {
      // A decoded layout's arrays lie inside its memory.
      for (const auto& a : l.arrays)
        if (a.offset + a.count * fanout::rpc::ExportArrayElementBytes(a.kind) > l.bytes)
          __builtin_trap();
    }
  }
  fanout::rpc::ExportLayout l;
  (void)fanout::rpc::DecodeLayout(std::string(p, size), &l);
  return 0;
}
