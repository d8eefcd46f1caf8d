#include "python/core/common.h"

#include <cstring>
#include <memory>

#include "python/core/dlpack.h"

namespace fanout::python {

[[noreturn]] void Raise(const Status& st) {
  throw StatusError(st.ok() ? Status::Internal("an error without a message") : st);
}

namespace {

// Sets the Python error for `st` (GIL held: called by the translator).
void SetPythonError(const Status& st) {
  py::object cls = py::module_::import("fanout.errors").attr(Status::CodeName(st.code()));
  PyErr_SetString(cls.ptr(), st.message().c_str());
}

}  // namespace

void TranslateErrors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const StatusError& e) {
    SetPythonError(e.status());
  } catch (const client::LoaderError& e) {
    SetPythonError(e.status());
  } catch (const std::invalid_argument& e) {
    SetPythonError(Status::InvalidArgument(e.what()));
  }
}

std::atomic<int64_t> g_live{0};

namespace {

// What a capsule hands over: the DLPack tensor and, beside it, the shape
// and strides it points to and a share of the array's memory.
struct Managed {
  DLManagedTensor m;
  std::vector<int64_t> shape, strides;
  std::shared_ptr<void> owner;
};

void DeleteManaged(DLManagedTensor* m) {
  delete static_cast<Managed*>(m->manager_ctx);
  --g_live;
}

DLDataType DataTypeOf(client::DType t) {
  switch (t) {
    case client::DType::kInt64:
      return {kFanoutDLInt, 64, 1};
    case client::DType::kFloat32:
      return {kFanoutDLFloat, 32, 1};
    case client::DType::kFloat16:
      return {kFanoutDLFloat, 16, 1};
    case client::DType::kBFloat16:
      return {kFanoutDLBfloat, 16, 1};
  }
  return {kFanoutDLUInt, 8, 1};
}

}  // namespace

py::object ToCapsule(const client::Array& a) {
  if (!a.defined()) return py::none();
  auto* c = new Managed;
  c->shape = a.shape();
  c->strides = a.strides();
  c->owner = a.owner();
  DLTensor& t = c->m.dl_tensor;
  t.data = a.data();
  t.device = a.device() >= 0 ? DLDevice{kFanoutDLCUDA, a.device()} : DLDevice{kFanoutDLCPU, 0};
  t.ndim = static_cast<int32_t>(c->shape.size());
  t.dtype = DataTypeOf(a.dtype());
  t.shape = c->shape.data();
  t.strides = c->strides.empty() ? nullptr : c->strides.data();
  t.byte_offset = 0;
  c->m.manager_ctx = c;
  c->m.deleter = DeleteManaged;
  ++g_live;
  return py::capsule(&c->m, "dltensor", [](PyObject* cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {  // never consumed
      auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      if (mt != nullptr && mt->deleter != nullptr) mt->deleter(mt);
    }
  });
}

py::object Int64Capsule(std::vector<int64_t> v) {
  return ToCapsule(client::Array::Take(std::move(v)));
}

std::vector<int64_t> Int64List(const py::handle& obj, const char* what) {
  if (PyObject_CheckBuffer(obj.ptr()) && !py::isinstance<py::str>(obj) &&
      !py::isinstance<py::bytes>(obj)) {
    py::buffer_info info = py::reinterpret_borrow<py::buffer>(obj).request();
    if (info.ndim != 1)
      Raise(Status::InvalidArgument(std::string(what) + " must be one-dimensional, not " +
                                    std::to_string(info.ndim) + "-dimensional"));
    if (info.itemsize != 8 || (info.format != "l" && info.format != "q"))
      Raise(Status::InvalidArgument(std::string(what) + " must hold int64 ids (buffer format '" +
                                    info.format + "')"));
    std::vector<int64_t> out(static_cast<size_t>(info.shape[0]));
    const char* base = static_cast<const char*>(info.ptr);
    if (info.strides[0] == 8) {
      if (!out.empty()) std::memcpy(out.data(), base, out.size() * 8);
    } else {
      for (size_t i = 0; i < out.size(); ++i)
        std::memcpy(&out[i], base + static_cast<ptrdiff_t>(i) * info.strides[0], 8);
    }
    return out;
  }
  try {
    return obj.cast<std::vector<int64_t>>();
  } catch (const py::cast_error&) {
    Raise(Status::InvalidArgument(std::string(what) + " must be a sequence of integers"));
  }
}

// Per-replica health and counters as a list of dicts.
py::list HealthList(const std::vector<client::ReplicaHealth>& all) {
  py::list out;
  for (const client::ReplicaHealth& h : all) {
    py::dict d;
    d["partition"] = h.partition;
    d["address"] = h.address;
    d["healthy"] = h.healthy;
    d["checks"] = h.checks;
    d["checks_failed"] = h.checks_failed;
    d["failures"] = h.failures;
    d["failovers_to"] = h.failovers_to;
    d["last_error"] = h.last_error;
    out.append(d);
  }
  return out;
}

// Per partition and replica in use: its path (client::PartitionPath) as dicts.
py::list PathList(const std::vector<client::PartitionPath>& all) {
  py::list out;
  for (const client::PartitionPath& p : all) {
    py::dict d;
    d["partition"] = p.partition;
    d["replica"] = p.replica;
    d["path"] = p.path;
    d["sampling"] = p.sampling;
    d["sessions"] = p.sessions;
    out.append(d);
  }
  return out;
}

py::dict BatchDict(const client::Batch& b) {
  py::dict d;
  d["n_id"] = ToCapsule(b.n_id);
  d["x"] = ToCapsule(b.x);
  d["y"] = ToCapsule(b.y);
  d["edge_index"] = ToCapsule(b.edge_index);
  d["e_id"] = ToCapsule(b.edge_id);
  d["edge_weight"] = ToCapsule(b.edge_weight);
  d["original_id"] = ToCapsule(b.original_id);
  d["input_id"] = ToCapsule(b.input_id);
  d["batch"] = ToCapsule(b.batch);
  d["seed_time"] = ToCapsule(b.seed_time);
  d["node_type"] = ToCapsule(b.node_type);
  d["edge_type"] = ToCapsule(b.edge_type);
  d["edge_label_index"] = ToCapsule(b.edge_label_index);
  d["edge_label"] = ToCapsule(b.edge_label);
  d["src_index"] = ToCapsule(b.src_index);
  d["dst_pos_index"] = ToCapsule(b.dst_pos_index);
  d["dst_neg_index"] = ToCapsule(b.dst_neg_index);
  d["num_sampled_nodes"] = b.num_sampled_nodes;
  d["num_sampled_edges"] = b.num_sampled_edges;
  d["batch_size"] = b.batch_size;
  d["epoch"] = b.epoch;
  d["index"] = b.index;
  d["versions"] = b.versions;
  return d;
}

py::dict SplitDict(const client::Batch& b, const sampler::HeteroSchema& schema) {
  client::HeteroArrays h = client::SplitByType(b, schema);
  auto caps = [](const std::vector<client::Array>& v) {
    py::list out;
    for (const client::Array& a : v) out.append(ToCapsule(a));
    return out;
  };
  py::dict d;
  d["n_id"] = caps(h.n_id);
  d["x"] = caps(h.x);
  d["y"] = caps(h.y);
  d["index"] = caps(h.index);
  d["original_id"] = caps(h.original_id);
  d["batch"] = caps(h.batch);
  d["batch_size"] = h.batch_size;
  d["edge_index"] = caps(h.edge_index);
  d["e_id"] = caps(h.edge_id);
  d["type_index"] = ToCapsule(h.type_index);
  return d;
}

}  // namespace fanout::python
