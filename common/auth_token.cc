#include "common/auth_token.h"

#include <algorithm>
#include <cctype>
#include <fstream>

namespace fanout {

Status ReadAuthTokenFile(const std::string& path, size_t min_length, std::string* token) {
  std::ifstream f(path);
  if (!f) return Status::NotFound(path + ": cannot open the auth token file");
  std::string line;
  std::getline(f, line);
  if (f.bad()) return Status::NotFound(path + ": cannot read the auth token file");
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  min_length = std::max<size_t>(min_length, 1);
  if (line.empty())
    return Status::InvalidArgument(path + ": the auth token file's first line is empty");
  if (line.size() < min_length)
    return Status::InvalidArgument(path + ": the token (its first line) has " +
                                   std::to_string(line.size()) + " characters; use at least " +
                                   std::to_string(min_length) + " (e.g. openssl rand -hex 32)");
  *token = std::move(line);
  return Status::OK();
}

}  // namespace fanout
