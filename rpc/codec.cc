#include "rpc/codec.h"

// Templates only; this file keeps the library non-empty and the header compiled.
namespace fanout::rpc {
template std::string Pack<int64_t>(ArrayView<const int64_t>);
}  // namespace fanout::rpc
