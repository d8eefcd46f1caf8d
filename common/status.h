// Status and StatusOr: the error type of Fanout's core (sampler, cache,
// datasets, transports). Cheap when OK (one null pointer); errors carry a code
// and a message that names the offending value.
//
// Thread safety: a Status is a value; distinct objects may be used from
// distinct threads without synchronisation.
#ifndef FANOUT_COMMON_STATUS_H_
#define FANOUT_COMMON_STATUS_H_

#include <cassert>
#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace fanout {

class [[nodiscard]] Status {
 public:
  enum class Code : int {
    kOk = 0,
    kInvalidArgument = 1,
    kNotFound = 2,
    kCorruption = 3,
    kIOError = 4,
    kNotSupported = 5,
    kUnavailable = 6,
    kDeadlineExceeded = 7,
    kInternal = 8,
    kResourceExhausted = 9,
    kAborted = 10,
    kUnauthenticated = 11,  // no, or a wrong, credential (auth token, TLS certificate)
  };

  Status() noexcept = default;
  Status(const Status& other) : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status NotSupported(std::string msg) {
    return Status(Code::kNotSupported, std::move(msg));
  }
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status DeadlineExceeded(std::string msg) {
    return Status(Code::kDeadlineExceeded, std::move(msg));
  }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }
  static Status ResourceExhausted(std::string msg) {
    return Status(Code::kResourceExhausted, std::move(msg));
  }
  static Status Aborted(std::string msg) { return Status(Code::kAborted, std::move(msg)); }
  static Status Unauthenticated(std::string msg) {
    return Status(Code::kUnauthenticated, std::move(msg));
  }
  // Builds a status from a wire code (e.g. an RPC exception); unknown codes map to kInternal.
  static Status FromCode(int code, std::string msg);

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  const std::string& message() const;
  bool IsInvalidArgument() const { return code() == Code::kInvalidArgument; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsIOError() const { return code() == Code::kIOError; }
  bool IsNotSupported() const { return code() == Code::kNotSupported; }

  // "InvalidArgument: seed 12 is outside [0, 10)".
  std::string ToString() const;
  static const char* CodeName(Code code);

  // Returns a copy with `context + ": "` prepended to the message.
  Status WithContext(const std::string& context) const;

 private:
  struct Rep {
    Code code;
    std::string message;
  };
  Status(Code code, std::string msg) : rep_(std::make_unique<Rep>(Rep{code, std::move(msg)})) {}
  std::unique_ptr<Rep> rep_;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // An OK status carries no value: it becomes an Internal error (as in
  // abseil), so that FANOUT_ASSIGN_OR_RETURN never "succeeds" unassigned.
  StatusOr(Status status)  // NOLINT: implicit by design
      : v_(status.ok() ? Status::Internal("StatusOr built from an OK status without a value")
                       : std::move(status)) {}
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(v_); }
  // REQUIRES: ok().
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace fanout

#define FANOUT_CONCAT_INNER_(a, b) a##b
#define FANOUT_CONCAT_(a, b) FANOUT_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define FANOUT_RETURN_IF_ERROR(expr)         \
  do {                                       \
    ::fanout::Status _fanout_st = (expr);    \
    if (!_fanout_st.ok()) return _fanout_st; \
  } while (0)

// `FANOUT_ASSIGN_OR_RETURN(auto x, Fn());`
#define FANOUT_ASSIGN_OR_RETURN(lhs, expr)                 \
  auto FANOUT_CONCAT_(_fanout_so_, __LINE__) = (expr);     \
  if (!FANOUT_CONCAT_(_fanout_so_, __LINE__).ok())         \
    return FANOUT_CONCAT_(_fanout_so_, __LINE__).status(); \
  lhs = std::move(FANOUT_CONCAT_(_fanout_so_, __LINE__)).value()

#endif  // FANOUT_COMMON_STATUS_H_
