// Byte sizes as people write them on command lines and in config files.
#ifndef FANOUT_COMMON_BYTE_SIZE_H_
#define FANOUT_COMMON_BYTE_SIZE_H_

#include <cstdint>
#include <string>

#include "common/status.h"

namespace fanout {

// "4G", "512M", "1.5GiB", "65536" (bytes); K/M/G/T are powers of 1024.
// InvalidArgument naming the text where it is not a positive size below 8 EiB.
Status ParseByteSize(const std::string& text, int64_t* bytes);

}  // namespace fanout

#endif  // FANOUT_COMMON_BYTE_SIZE_H_
