// fanout._core: the C++ client (Cluster, NodeLoader) for Python, over
// pybind11 (python/core/: errors and capsules, the cluster, the loader).
// Arrays leave as DLPack capsules that own their memory; fanout/__init__.py
// turns them into torch tensors with torch.utils.dlpack.from_dlpack, so the
// extension links no PyTorch and one build works with any current torch.
// Errors are fanout.errors exceptions named after the Status code. The GIL
// is released while waiting on servers.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/random.h"
#include "common/version.h"
#include "python/core/cluster.h"
#include "python/core/common.h"
#include "python/core/dlpack.h"
#include "python/core/loader.h"

PYBIND11_MODULE(_core, m) {
  using namespace fanout::python;  // NOLINT
  m.doc() = "Fanout's C++ client (Cluster, NodeLoader); use the fanout package, not this module.";
  py::register_exception_translator(&TranslateErrors);
  m.def(
      "live_tensors", [] { return g_live.load(); }, "Tensors handed to Python and not yet freed");
  m.def(
      "capsule_data_ptr",
      [](const py::capsule& cap) {
        if (!PyCapsule_IsValid(cap.ptr(), "dltensor"))
          Raise(fanout::Status::InvalidArgument("not an unconsumed dltensor capsule"));
        auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
        return reinterpret_cast<intptr_t>(static_cast<char*>(m->dl_tensor.data) +
                                          m->dl_tensor.byte_offset);
      },
      "The address of an unconsumed capsule's tensor data (tests of zero-copy)");
  m.def(
      "batch_request_seed",
      [](uint64_t seed, uint64_t epoch, uint64_t batch) {
        return fanout::NodeKey(seed, epoch, batch);
      },
      py::arg("seed"), py::arg("epoch"), py::arg("batch"),
      "The request seed NodeLoader/LinkLoader use for batch `batch` of epoch `epoch` (world size "
      "1)");
  m.attr("__version__") = fanout::VersionString();
  m.attr("release") = std::string(fanout::Release());
  m.attr("build_commit") = std::string(fanout::BuildCommit());
  py::class_<PyCluster>(m, "Cluster")
      .def_static("from_partitions", &PyCluster::FromPartitions, py::arg("partitions"),
                  py::arg("data_plane"), py::arg("connect_timeout_ms"), py::arg("call_timeout_ms"),
                  py::arg("local_sampling") = "auto", py::arg("health_check_ms") = 1000,
                  py::arg("auth_token") = "")
      .def_static("from_file", &PyCluster::FromFile, py::arg("path"), py::arg("data_plane"),
                  py::arg("connect_timeout_ms"), py::arg("call_timeout_ms"),
                  py::arg("local_sampling") = "auto", py::arg("health_check_ms") = 1000)
      .def_property_readonly("local_partitions",
                             [](const PyCluster& c) {
                               std::vector<bool> out;
                               for (int p = 0; p < c.get()->num_parts(); ++p)
                                 out.push_back(c.get()->local(p) != nullptr);
                               return out;
                             })
      .def("with_data_plane", &PyCluster::WithDataPlane)
      .def_property_readonly("num_nodes", [](const PyCluster& c) { return c.get()->num_nodes(); })
      .def_property_readonly("feature_dim",
                             [](const PyCluster& c) { return c.get()->feature_dim(); })
      .def_property_readonly("num_classes",
                             [](const PyCluster& c) { return c.get()->num_classes(); })
      .def_property_readonly("num_partitions",
                             [](const PyCluster& c) { return c.get()->num_parts(); })
      .def_property_readonly("addresses", &PyCluster::Addresses)
      .def_property_readonly(
          "data_plane",
          [](const PyCluster& c) {
            return std::string(fanout::rpc::DataPlaneModeName(c.get()->requested_data_plane()));
          })
      .def_property_readonly("ucx_available",
                             [](const PyCluster& c) {
                               return c.get()->data_plane() != fanout::rpc::DataPlaneMode::kTcp;
                             })
      .def_property_readonly("local_sampling",
                             [](const PyCluster& c) { return c.get()->local_sampling(); })
      .def("paths", &PyCluster::Paths)
      .def_property_readonly("description",
                             [](const PyCluster& c) { return c.get()->description(); })
      .def("split_nodes", &PyCluster::SplitNodes)
      .def("health", &PyCluster::Health)
      .def_property_readonly("node_types", &PyCluster::NodeTypes)
      .def_property_readonly("edge_types", &PyCluster::EdgeTypes)
      .def_property_readonly("node_type_feature_dims", &PyCluster::NodeTypeFeatureDims)
      .def("nodes_of_type", &PyCluster::NodesOfType)
      .def("node_type_of", &PyCluster::NodeTypeOf)
      .def("original_ids", &PyCluster::OriginalIds)
      .def("original_names", &PyCluster::OriginalNames)
      .def("edge_type_index", &PyCluster::EdgeTypeIndex)
      .def("forget_after_fork", &PyCluster::ForgetAfterFork)
      .def("features", &PyCluster::Features, py::arg("ids"))
      .def("features_into", &PyCluster::FeaturesInto, py::arg("ids"), py::arg("out"))
      .def("labels", &PyCluster::Labels, py::arg("ids"))
      .def("query", &PyCluster::Query, py::arg("seeds"), py::arg("num_neighbors"),
           py::arg("features"), py::arg("labels"), py::arg("edge_ids"), py::arg("deadline_ms"),
           py::arg("request_seed"), py::arg("workers"), py::arg("ppr"), py::arg("ppr_alpha"),
           py::arg("ppr_eps"))
      .def("sample_batch", &SampleBatchOf, py::arg("options"), py::arg("nodes"), py::arg("link"),
           py::arg("times"), py::arg("request_seed"))
      .def("random_walks", &RandomWalksOf, py::arg("seeds"), py::arg("options"),
           py::arg("request_seed"))
      .def("ppr", &PprOf, py::arg("seeds"), py::arg("top_k"), py::arg("alpha"), py::arg("eps"),
           py::arg("max_rounds"), py::arg("type_budgets"))
      .def("update", &UpdateOf, py::arg("updates"), py::arg("undirected"))
      .def("compact", &CompactOf, py::arg("partition"));
  py::class_<PyLoader>(m, "NodeLoader")
      .def(py::init<const PyCluster&, const py::object&, const py::dict&, const py::object&>(),
           py::arg("cluster"), py::arg("input_nodes"), py::arg("options"),
           py::arg("link") = py::none())
      .def("close", &PyLoader::Close)
      .def("next", &PyLoader::Next)
      .def("set_epoch", &PyLoader::SetEpoch)
      .def("epoch_seeds", &PyLoader::EpochSeeds)
      .def("run_for", &PyLoader::RunFor)
      .def("stats", &PyLoader::Stats)
      .def("__len__", &PyLoader::Len)
      .def_property_readonly("rank", &PyLoader::Rank)
      .def_property_readonly("world_size", &PyLoader::WorldSize);
}
