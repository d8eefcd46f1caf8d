#include "common/status.h"

namespace fanout {

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

const char* Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kNotFound:
      return "NotFound";
    case Code::kCorruption:
      return "Corruption";
    case Code::kIOError:
      return "IOError";
    case Code::kNotSupported:
      return "NotSupported";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kDeadlineExceeded:
      return "DeadlineExceeded";
    case Code::kInternal:
      return "Internal";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
    case Code::kAborted:
      return "Aborted";
    case Code::kUnauthenticated:
      return "Unauthenticated";
  }
  return "Unknown";
}

Status Status::FromCode(int code, std::string msg) {
  if (code == 0) return Status();
  if (code < 0 || code > static_cast<int>(Code::kUnauthenticated)) return Internal(std::move(msg));
  return Status(static_cast<Code>(code), std::move(msg));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = CodeName(rep_->code);
  s += ": ";
  s += rep_->message;
  return s;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return Status();
  return Status(rep_->code, context + ": " + rep_->message);
}

}  // namespace fanout
