// The pieces of fanout._core every binding uses: Status errors raised as
// fanout.errors classes, ids from Python, and arrays handed to Python as
// DLPack capsules (client::Array, no copy: the capsule owns a share of the
// memory; fanout/__init__.py turns them into torch tensors with
// torch.utils.dlpack.from_dlpack, so the extension links no PyTorch and works
// with whichever torch the interpreter has).
#ifndef FANOUT_PYTHON_CORE_COMMON_H_
#define FANOUT_PYTHON_CORE_COMMON_H_

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <exception>
#include <string>
#include <vector>

#include "client/array.h"
#include "client/batch_loader.h"
#include "client/source.h"
#include "common/status.h"
#include "sampler/hetero.h"

namespace py = pybind11;

namespace fanout::python {

// A failed Status on its way to Python: the one exception translator
// (TranslateErrors, registered in the module) raises the fanout.errors class
// named after its code, so every binding - constructors and iteration
// included - raises the same classes.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status st) : st_(std::move(st)) {}
  const char* what() const noexcept override { return st_.message().c_str(); }
  const Status& status() const { return st_; }

 private:
  Status st_;
};

[[noreturn]] void Raise(const Status& st);
inline void Check(const Status& st) {
  if (!st.ok()) Raise(st);
}
void TranslateErrors(std::exception_ptr p);

// Arrays handed to Python and not yet freed (tests check that a batch's
// memory goes when the batch does).
extern std::atomic<int64_t> g_live;

// An Array as a "dltensor" capsule (None when undefined); its memory lives
// until the consumer's deleter runs (or the capsule dies unconsumed). Device
// arrays are ready on every stream when handed out (the loader synchronized
// the stream that filled them), as DLPack asks of a capsule without a
// stream exchange.
py::object ToCapsule(const client::Array& a);
py::object Int64Capsule(std::vector<int64_t> v);

// Integer ids from Python: a 1-D int64 buffer (a numpy array, or a CPU
// tensor's .numpy(): one memcpy, no Python int per id) or a sequence of ints.
std::vector<int64_t> Int64List(const py::handle& obj, const char* what);
// Per-replica health and per-partition paths as lists of dicts.
py::list HealthList(const std::vector<client::ReplicaHealth>& all);
py::list PathList(const std::vector<client::PartitionPath>& all);
// A batch as a dict of capsules and lists (fanout/__init__.py's Batch).
py::dict BatchDict(const client::Batch& b);
// A heterogeneous batch split by type (client::SplitByType): per node type
// lists n_id, x, y, index, original_id, batch_size; per edge type
// edge_index, e_id; and type_index (fanout/__init__.py's HeteroBatch).
py::dict SplitDict(const client::Batch& b, const sampler::HeteroSchema& schema);

}  // namespace fanout::python

#endif  // FANOUT_PYTHON_CORE_COMMON_H_
