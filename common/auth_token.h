// Auth token files, read the same way by the server and every client: the
// token is the file's first line, trailing whitespace removed.
#ifndef FANOUT_COMMON_AUTH_TOKEN_H_
#define FANOUT_COMMON_AUTH_TOKEN_H_

#include <cstddef>
#include <string>

#include "common/status.h"

namespace fanout {

// Reads the token of `path` into *token. NotFound when the file cannot be
// read; InvalidArgument when the token is shorter than `min_length`
// characters (at least 1), the message saying how to make a good one.
Status ReadAuthTokenFile(const std::string& path, size_t min_length, std::string* token);

}  // namespace fanout

#endif  // FANOUT_COMMON_AUTH_TOKEN_H_
