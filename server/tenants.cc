#include "server/tenants.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "common/auth_token.h"
#include "common/byte_size.h"
#include "common/secret.h"

namespace fanout::server {

namespace {

// The words of a line: space-separated, double quotes group (no escapes);
// '#' outside quotes ends the line. False on an unterminated quote.
bool SplitWords(const std::string& line, std::vector<std::string>* out) {
  out->clear();
  std::string cur;
  bool in_word = false, quoted = false;
  for (char c : line) {
    if (quoted) {
      if (c == '"')
        quoted = false;
      else
        cur += c;
      continue;
    }
    if (c == '#') break;
    if (c == '"') {
      quoted = in_word = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) out->push_back(cur), cur.clear(), in_word = false;
      continue;
    }
    cur += c;
    in_word = true;
  }
  if (quoted) return false;
  if (in_word) out->push_back(cur);
  return true;
}

bool ParseDouble(const std::string& v, double* out) {
  try {
    size_t used = 0;
    *out = std::stod(v, &used);
    return used == v.size() && std::isfinite(*out);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::shared_ptr<const TenantTable> TenantTable::DefaultOnly() {
  auto t = std::make_shared<TenantTable>();
  Tenant d;
  d.name = "default";
  t->tenants_.push_back(d);
  t->default_ = 0;
  return t;
}

Status TenantTable::Parse(const std::string& text, const std::string& origin,
                          std::shared_ptr<const TenantTable>* out) {
  auto t = std::make_shared<TenantTable>();
  std::string folder = ".";
  if (const size_t slash = origin.find_last_of('/'); slash != std::string::npos)
    folder = origin.substr(0, slash);
  std::istringstream in(text);
  std::string line;
  int n = 0;
  std::set<std::string> names, tokens, subjects;
  t->default_ = -1;
  while (std::getline(in, line)) {
    ++n;
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument(origin + " line " + std::to_string(n) + ": " + why);
    };
    std::vector<std::string> w;
    if (!SplitWords(line, &w)) return bad("an unterminated quote");
    if (w.empty()) continue;
    if (w[0] != "tenant") return bad("expected 'tenant NAME key=value ...', not '" + w[0] + "'");
    if (w.size() < 2) return bad("a tenant needs a name");
    Tenant x;
    x.name = w[1];
    x.line = n;
    for (char c : x.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
        return bad("tenant name '" + x.name + "' has characters other than letters, digits, _ - .");
    if (x.name.empty() || x.name.size() > 64) return bad("a tenant name of 1 to 64 characters");
    if (!names.insert(x.name).second) return bad("tenant '" + x.name + "' is named twice");
    for (size_t i = 2; i < w.size(); ++i) {
      if (w[i] == "refuse") {
        if (x.name != "default") return bad("only the default tenant takes 'refuse'");
        x.refuse = true;
        continue;
      }
      const size_t eq = w[i].find('=');
      if (eq == std::string::npos) return bad("'" + w[i] + "' is not key=value");
      const std::string key = w[i].substr(0, eq), value = w[i].substr(eq + 1);
      double d = 0;
      int64_t bytes = 0;
      if (key == "token") {
        x.token = value;
      } else if (key == "token_file") {
        const std::string path = !value.empty() && value[0] == '/' ? value : folder + "/" + value;
        Status st = ReadAuthTokenFile(path, 1, &x.token);
        if (!st.ok()) return bad("token_file: " + st.message());
      } else if (key == "tls_subject") {
        x.tls_subject = value;
      } else if (key == "weight") {
        if (!ParseDouble(value, &d) || !(d > 0) || d > 1e6)
          return bad("weight must be a number in (0, 1e6], not '" + value + "'");
        x.weight = d;
      } else if (key == "class") {
        if (value != "batch" && value != "online")
          return bad("class must be batch or online, not '" + value + "'");
        x.online = value == "online";
      } else if (key == "local") {
        if (value != "yes" && value != "no")
          return bad("local must be yes or no, not '" + value + "'");
        x.local = value == "yes";
      } else if (key == "write") {
        if (value != "yes" && value != "no")
          return bad("write must be yes or no, not '" + value + "'");
        x.write = value == "yes";
      } else if (key == "max_inflight_bytes" || key == "max_feature_bytes_per_s" ||
                 key == "max_update_bytes_per_s") {
        if (value != "0") {
          Status st = ParseByteSize(value, &bytes);
          if (!st.ok()) return bad(key + ": " + st.message());
        }
        if (key == "max_inflight_bytes")
          x.max_inflight_bytes = bytes;
        else if (key == "max_feature_bytes_per_s")
          x.max_feature_bytes_per_s = static_cast<double>(bytes);
        else
          x.max_update_bytes_per_s = static_cast<double>(bytes);
      } else if (key == "max_requests_per_s") {
        if (!ParseDouble(value, &d) || d < 0)
          return bad("max_requests_per_s must be a number >= 0, not '" + value + "'");
        x.max_requests_per_s = d;
      } else {
        return bad("unknown key '" + key +
                   "' (known: token, token_file, tls_subject, weight, class, local, write, "
                   "max_inflight_bytes, max_requests_per_s, max_feature_bytes_per_s, "
                   "max_update_bytes_per_s)");
      }
    }
    if (!x.token.empty()) {
      if (x.token.size() < 16)
        return bad("tenant '" + x.name +
                   "': a token of at least 16 characters (e.g. head -c 32 "
                   "/dev/urandom | base64)");
      if (!tokens.insert(x.token).second) return bad("two tenants with one token");
      t->has_tokens_ = true;
    }
    if (!x.tls_subject.empty() && !subjects.insert(x.tls_subject).second)
      return bad("two tenants with one tls_subject");
    if (x.name == "default") {
      if (!x.token.empty() || !x.tls_subject.empty())
        return bad("the default tenant is the one without credentials: no token or tls_subject");
      t->default_ = static_cast<int>(t->tenants_.size());
    } else if (x.token.empty() && x.tls_subject.empty()) {
      return bad("tenant '" + x.name + "' has no token, token_file or tls_subject");
    }
    t->tenants_.push_back(std::move(x));
  }
  if (t->default_ < 0) {
    Tenant d;
    d.name = "default";
    t->default_ = static_cast<int>(t->tenants_.size());
    t->tenants_.push_back(d);
  }
  if (t->tenants_.size() > 1024)
    return Status::InvalidArgument(origin + ": more than 1024 tenants");
  *out = std::move(t);
  return Status::OK();
}

Status TenantTable::Load(const std::string& path, std::shared_ptr<const TenantTable>* out) {
  std::ifstream f(path);
  if (!f) return Status::NotFound(path + ": cannot read the tenants file");
  std::stringstream ss;
  ss << f.rdbuf();
  if (ss.str().size() > (1 << 20)) return Status::InvalidArgument(path + ": larger than 1 MiB");
  return Parse(ss.str(), path, out);
}

int TenantTable::ByToken(const std::string& token) const {
  int found = -1;
  for (size_t i = 0; i < tenants_.size(); ++i)  // every one compared: no early exit
    if (SameSecret(token, tenants_[i].token)) found = static_cast<int>(i);
  return found;
}

int TenantTable::ByTlsSubject(const std::string& subject) const {
  if (subject.empty()) return -1;
  for (size_t i = 0; i < tenants_.size(); ++i)
    if (tenants_[i].tls_subject == subject) return static_cast<int>(i);
  return -1;
}

int TenantTable::ByName(const std::string& name) const {
  for (size_t i = 0; i < tenants_.size(); ++i)
    if (tenants_[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace fanout::server
