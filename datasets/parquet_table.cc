// A Parquet table read through pyarrow in a child process (table_source.h).
// Why a child process and not Arrow's C++ library: docs/DESIGN.md ("Any graph
// in"). The child is datasets/parquet_reader.py, compiled in as text; its
// stream is checked as any peer's bytes are (sizes bounded, offsets
// monotone), so a reader that dies or lies gives an error, not a crash.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "datasets/line_reader.h"
#include "datasets/parquet_reader_py.h"  // kParquetReaderPy (generated from parquet_reader.py)
#include "datasets/progress.h"
#include "datasets/table_source.h"

extern char** environ;

namespace fanout::datasets {

namespace {

enum Kind : uint8_t { kInt = 1, kFloat = 2, kBool = 3, kString = 4, kList = 5 };
constexpr uint64_t kMaxBatchRows = uint64_t{1} << 20;
constexpr uint64_t kMaxBatchBytes = uint64_t{1} << 31;
constexpr uint32_t kMaxNameBytes = 1 << 16;

const char* KindName(uint8_t k) {
  switch (k) {
    case kInt:
      return "an integer";
    case kFloat:
      return "a floating-point";
    case kBool:
      return "a boolean";
    case kString:
      return "a string";
    default:
      return "a list";
  }
}

struct ColumnData {
  std::string name, role;
  uint8_t kind = 0;
  std::vector<uint8_t> valid;
  std::vector<int64_t> ints;     // kInt
  std::vector<double> floats;    // kFloat; kList: the values
  std::vector<uint8_t> bools;    // kBool
  std::vector<int64_t> offsets;  // kString, kList: n + 1 from 0
  std::string bytes;             // kString
};

class ParquetTable final : public TableSource {
 public:
  ParquetTable(std::string path, bool quiet, const ParquetRange& range)
      : path_(std::move(path)), quiet_(quiet), range_(range), file_row_(range.first_row) {}
  ~ParquetTable() override { (void)Reap(true); }

  Status Column(const std::string& name, const std::string& role, size_t* index) override {
    if (started_)
      return Status::Internal(path_ + ": column '" + name + "' asked for after reading began");
    for (size_t i = 0; i < cols_.size(); ++i)
      if (cols_[i].name == name) {
        *index = i;
        return Status::OK();
      }
    cols_.emplace_back();
    cols_.back().name = name;
    cols_.back().role = role;
    *index = cols_.size() - 1;
    return Status::OK();
  }

  bool Next(Status* st) override {
    *st = Status::OK();
    if (done_) return false;
    if (!started_) {
      started_ = true;
      *st = Start();
      if (!st->ok()) return Fail();
    }
    while (++row_ >= batch_rows_) {
      *st = ReadBatch();
      if (!st->ok()) return Fail();
      if (done_) return false;
    }
    ++file_row_;
    return true;
  }

  bool Empty(size_t c) const override {
    const ColumnData& d = cols_[c];
    if (!d.valid[row_]) return true;
    return d.kind == kString && d.offsets[row_ + 1] == d.offsets[row_];
  }

  Status Int(size_t c, int64_t* out) const override {
    const ColumnData& d = cols_[c];
    if (!d.valid[row_]) return Status::InvalidArgument(Where(c) + "a null value, not an integer");
    switch (d.kind) {
      case kInt:
        *out = d.ints[row_];
        return Status::OK();
      case kBool:
        *out = d.bools[row_];
        return Status::OK();
      case kFloat: {
        const double v = d.floats[row_];
        if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18) {
          *out = static_cast<int64_t>(v);
          return Status::OK();
        }
        return Status::InvalidArgument(Where(c) + std::to_string(v) + " is not an integer");
      }
      case kString: {
        const std::string t = Text(c);
        if (ParseInt64(t, out)) return Status::OK();
        return Status::InvalidArgument(Where(c) + "'" + t.substr(0, 40) + "' is not an integer");
      }
      default:
        return Status::InvalidArgument(Where(c) + "a list column, not an integer");
    }
  }

  Status Float(size_t c, float* out) const override {
    const ColumnData& d = cols_[c];
    if (!d.valid[row_]) return Status::InvalidArgument(Where(c) + "a null value, not a number");
    double v = 0;
    switch (d.kind) {
      case kInt:
        v = static_cast<double>(d.ints[row_]);
        break;
      case kBool:
        v = d.bools[row_];
        break;
      case kFloat:
        v = d.floats[row_];
        break;
      case kString: {
        const std::string t = Text(c);
        if (!ParseFloat(t, out) || !std::isfinite(*out))
          return Status::InvalidArgument(Where(c) + "'" + t.substr(0, 40) +
                                         "' is not a finite number");
        return Status::OK();
      }
      default:
        return Status::InvalidArgument(Where(c) + "a list column, not one number");
    }
    *out = static_cast<float>(v);
    if (!std::isfinite(*out))
      return Status::InvalidArgument(Where(c) + std::to_string(v) + " is not a finite float32");
    return Status::OK();
  }

  Status FloatList(size_t c, std::vector<float>* out) const override {
    const ColumnData& d = cols_[c];
    if (d.kind != kList)
      return Status::InvalidArgument(Where(c) + "the column is " + KindName(d.kind) +
                                     " column, not a list (give scalar feature columns as a list "
                                     "of names)");
    if (!d.valid[row_]) return Status::InvalidArgument(Where(c) + "a null feature list");
    out->clear();
    for (int64_t k = d.offsets[row_]; k < d.offsets[row_ + 1]; ++k) {
      const float v = static_cast<float>(d.floats[k]);
      if (!std::isfinite(v))
        return Status::InvalidArgument(Where(c) + "value " + std::to_string(k - d.offsets[row_]) +
                                       " of the list (" + std::to_string(d.floats[k]) +
                                       ") is not a finite float32");
      out->push_back(v);
    }
    return Status::OK();
  }

  std::string_view TextView(size_t c) const override {
    const ColumnData& d = cols_[c];
    if (d.kind == kString && d.valid[row_])
      return std::string_view(d.bytes.data() + d.offsets[row_],
                              static_cast<size_t>(d.offsets[row_ + 1] - d.offsets[row_]));
    text_ = Text(c);
    return text_;
  }

  std::string Text(size_t c) const override {
    const ColumnData& d = cols_[c];
    if (!d.valid[row_]) return std::string();
    switch (d.kind) {
      case kString:
        return d.bytes.substr(static_cast<size_t>(d.offsets[row_]),
                              static_cast<size_t>(d.offsets[row_ + 1] - d.offsets[row_]));
      case kInt:
        return std::to_string(d.ints[row_]);
      case kBool:
        return d.bools[row_] ? "true" : "false";
      case kFloat: {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.17g", d.floats[row_]);
        return buf;
      }
      default:
        return "[list]";
    }
  }

  bool Truthy(size_t c) const override {
    const ColumnData& d = cols_[c];
    if (!d.valid[row_]) return false;
    switch (d.kind) {
      case kInt:
        return d.ints[row_] != 0;
      case kBool:
        return d.bools[row_] != 0;
      case kFloat:
        return d.floats[row_] != 0;
      case kString: {
        const std::string t = Text(c);
        return t == "1" || t == "true" || t == "True" || t == "yes";
      }
      default:
        return false;
    }
  }

  std::string Where(size_t c) const override {
    return path_ + ": row " + std::to_string(file_row_) + " (row group " +
           std::to_string(row_group_) + "): column '" + cols_[c].name + "': ";
  }

 private:
  bool Fail() {
    done_ = true;
    (void)Reap(true);
    return false;
  }

  Status Start() {
    if (cols_.empty()) return Status::InvalidArgument(path_ + ": no column asked for");
    const char* env = std::getenv("FANOUT_PYTHON");
    python_ = env != nullptr && *env != '\0' ? env : "python3";
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return Status::IOError("pipe: " + std::string(strerror(errno)));
    FILE* err = std::tmpfile();
    if (err == nullptr) {
      ::close(fds[0]), ::close(fds[1]);
      return Status::IOError("a temporary file for the Parquet reader's messages: " +
                             std::string(strerror(errno)));
    }
    err_ = err;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, ::fileno(err), 2);
    std::vector<std::string> args = {python_, "-c", kParquetReaderPy};
    if (range_.first_group != 0 || range_.end_group >= 0)
      args.push_back("--row-groups=" + std::to_string(range_.first_group) + ":" +
                     std::to_string(range_.end_group));
    args.push_back(path_);
    for (const ColumnData& d : cols_) args.push_back(d.name);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, python_.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fds[0]);
      return Status::NotFound(path_ + ": reading Parquet runs Python with pyarrow, and '" +
                              python_ + "' cannot be run (" + strerror(rc) +
                              "); set FANOUT_PYTHON to a Python that has pyarrow");
    }
    pid_ = pid;
    fd_ = fds[0];
    char magic[8];
    uint32_t ncols = 0, groups = 0;
    uint64_t rows = 0;
    if (!Read(magic, 8) || std::memcmp(magic, "FNPQ0001", 8) != 0 || !Read(&ncols, 4) ||
        !Read(&groups, 4) || !Read(&rows, 8))
      return ChildError("no header");
    if (ncols != cols_.size()) return ChildError("a header of the wrong column count");
    for (ColumnData& d : cols_) {
      uint32_t len = 0;
      if (!Read(&d.kind, 1) || !Read(&len, 4) || len > kMaxNameBytes) return ChildError("header");
      std::string name(len, '\0');
      if (!Read(name.data(), len) || name != d.name || d.kind < kInt || d.kind > kList)
        return ChildError("a header naming other columns");
    }
    progress_ =
        std::make_unique<Progress>("reading " + path_, " rows", static_cast<int64_t>(rows), quiet_);
    return Status::OK();
  }

  // Reads one batch (or the end) from the child.
  Status ReadBatch() {
    uint32_t tag = 0, group = 0;
    uint64_t n = 0;
    if (!Read(&tag, 4) || !Read(&group, 4) || !Read(&n, 8)) return ChildError("a cut stream");
    if (tag == 2) {
      done_ = true;
      FANOUT_RETURN_IF_ERROR(Reap(false));
      progress_->Update(file_row_);
      progress_->Done(std::to_string(file_row_) + " rows");
      return Status::OK();
    }
    if (tag != 1 || n > kMaxBatchRows) return ChildError("a damaged batch header");
    row_group_ = group;
    for (ColumnData& d : cols_) {
      d.valid.resize(n);
      if (!Read(d.valid.data(), n)) return ChildError("a cut batch");
      bool ok = true;
      switch (d.kind) {
        case kInt:
          d.ints.resize(n);
          ok = Read(d.ints.data(), n * 8);
          break;
        case kFloat:
          d.floats.resize(n);
          ok = Read(d.floats.data(), n * 8);
          break;
        case kBool:
          d.bools.resize(n);
          ok = Read(d.bools.data(), n);
          break;
        default: {
          d.offsets.resize(n + 1);
          ok = Read(d.offsets.data(), (n + 1) * 8);
          if (!ok) break;
          if (d.offsets[0] != 0) return ChildError("offsets not from 0");
          for (uint64_t k = 0; k < n; ++k)
            if (d.offsets[k + 1] < d.offsets[k]) return ChildError("decreasing offsets");
          const uint64_t total = static_cast<uint64_t>(d.offsets[n]);
          if (total > kMaxBatchBytes / (d.kind == kList ? 8 : 1))
            return ChildError("a batch past " + std::to_string(kMaxBatchBytes) + " bytes");
          if (d.kind == kString) {
            d.bytes.resize(total);
            ok = Read(d.bytes.data(), total);
          } else {
            d.floats.resize(total);
            ok = Read(d.floats.data(), total * 8);
          }
        }
      }
      if (!ok) return ChildError("a cut batch");
    }
    batch_rows_ = static_cast<int64_t>(n);
    row_ = -1;
    progress_->Update(file_row_);
    return Status::OK();
  }

  bool Read(void* dst, uint64_t n) {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      if (buf_at_ == buf_end_) {
        const ssize_t r = ::read(fd_, buf_.data(), buf_.size());
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        buf_at_ = 0, buf_end_ = static_cast<size_t>(r);
      }
      const size_t k = std::min<uint64_t>(n, buf_end_ - buf_at_);
      std::memcpy(p, buf_.data() + buf_at_, k);
      buf_at_ += k, p += k, n -= k;
    }
    return true;
  }

  // Ends the child: the pipe closed (a child still writing then stops on
  // EPIPE), killed where `kill` or when it has not exited within 10 s, and
  // reaped; its messages kept. OK for a clean exit.
  Status Reap(bool kill) {
    if (fd_ >= 0) ::close(fd_), fd_ = -1;
    if (pid_ <= 0) return Status::OK();
    if (kill) ::kill(pid_, SIGKILL);
    int ws = 0;
    for (int waited_ms = 0;;) {
      const pid_t r = ::waitpid(pid_, &ws, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) break;
      if (r == 0 && waited_ms >= 10000) ::kill(pid_, SIGKILL);
      ::usleep(2000);
      waited_ms += 2;
    }
    pid_ = -1;
    exit_ = ws;
    if (err_ != nullptr) {
      std::rewind(err_);
      char line[4096];
      while (std::fgets(line, sizeof(line), err_) != nullptr && messages_.size() < 16384)
        messages_ += line;
      std::fclose(err_);
      err_ = nullptr;
    }
    if (!kill && (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)) return ChildError("an unclean exit");
    return Status::OK();
  }

  // The error of a child that stopped early (its message line names what).
  Status ChildError(const std::string& what) {
    if (pid_ > 0) (void)Reap(false);  // its exit status and message say why it stopped
    std::string msg = messages_;
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
    const size_t last_line = msg.find_last_of('\n');
    const std::string line = last_line == std::string::npos ? msg : msg.substr(last_line + 1);
    std::vector<std::string_view> parts;
    SplitFields(line, "\t", false, &parts);
    const std::vector<std::string> f(parts.begin(), parts.end());
    auto role = [&](const std::string& name) {
      for (const ColumnData& d : cols_)
        if (d.name == name) return d.role;
      return std::string("a column");
    };
    if (f.size() >= 3 && f[0] == "MISSING")
      return Status::InvalidArgument(path_ + ": no column '" + f[1] + "' (the " + role(f[1]) +
                                     "); its columns: " + f[2]);
    if (f.size() >= 3 && f[0] == "TYPE")
      return Status::InvalidArgument(path_ + ": column '" + f[1] + "' (the " + role(f[1]) +
                                     ") is of type " + f[2] +
                                     ", which tables do not take (integers, timestamps, floats, "
                                     "booleans, strings, lists of numbers)");
    if (f.size() >= 4 && f[0] == "VALUE")
      return Status::InvalidArgument(path_ + ": row group " + f[2] + ": column '" + f[1] +
                                     "': " + f[3]);
    if (f.size() >= 2 && f[0] == "NOPYARROW")
      return Status::NotFound(path_ + ": reading Parquet needs pyarrow in '" + python_ +
                              "' (pip install pyarrow, or set FANOUT_PYTHON to a Python that has "
                              "it): " +
                              f[1]);
    if (f.size() >= 2 && f[0] == "BADFILE")
      return Status::InvalidArgument(path_ + ": not a Parquet file pyarrow can read: " + f[1]);
    std::string how;
    if (WIFSIGNALED(exit_))
      how = "killed by signal " + std::to_string(WTERMSIG(exit_));
    else
      how = "exit " + std::to_string(WEXITSTATUS(exit_));
    return Status::Corruption(path_ + ": the pyarrow reader ('" + python_ + "') stopped (" + how +
                              ") with " + what + (msg.empty() ? "" : ": " + msg.substr(0, 2000)));
  }

  const std::string path_;
  const bool quiet_;
  const ParquetRange range_;
  std::string python_, messages_;
  mutable std::string text_;  // TextView of a column that is not a string one
  std::vector<ColumnData> cols_;
  std::unique_ptr<Progress> progress_;
  std::vector<char> buf_ = std::vector<char>(1 << 20);
  size_t buf_at_ = 0, buf_end_ = 0;
  FILE* err_ = nullptr;
  pid_t pid_ = -1;
  int fd_ = -1, exit_ = 0;
  bool started_ = false, done_ = false;
  int64_t row_ = -1, batch_rows_ = 0, file_row_;
  uint32_t row_group_ = 0;
};

}  // namespace

bool IsParquetPath(const std::string& path) {
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
  };
  return ends(".parquet") || ends(".pq");
}

Status OpenParquetTable(const std::string& path, bool quiet, std::unique_ptr<TableSource>* out,
                        const ParquetRange& range) {
  if (::access(path.c_str(), R_OK) != 0)
    return Status::NotFound(path + ": cannot be read (" + strerror(errno) + ")");
  if (range.first_group < 0 || range.first_row < 0 ||
      (range.end_group >= 0 && range.end_group < range.first_group))
    return Status::InvalidArgument(path + ": bad row group range");
  *out = std::make_unique<ParquetTable>(path, quiet, range);
  return Status::OK();
}

}  // namespace fanout::datasets
