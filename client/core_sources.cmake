# The client library's core sources (no LibTorch, no dataset library; the
# loaders' batches are client::Arrays):
# client/CMakeLists.txt builds fanout_client_core from them, and the fuzzing
# build (which has no client/ folder build) does the same for the cluster
# file fuzzer. LocalSource (a whole dataset read from its store) is
# fanout_local_source, the one client piece that links the dataset library.
set(FANOUT_CLIENT_CORE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/cluster.cc
  ${CMAKE_CURRENT_LIST_DIR}/cluster_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/replica_health.cc
  ${CMAKE_CURRENT_LIST_DIR}/local_reports.cc
  ${CMAKE_CURRENT_LIST_DIR}/cluster_session.cc
  ${CMAKE_CURRENT_LIST_DIR}/cluster_session_link.cc
  ${CMAKE_CURRENT_LIST_DIR}/cluster_session_local.cc
  ${CMAKE_CURRENT_LIST_DIR}/local_partition.cc
  ${CMAKE_CURRENT_LIST_DIR}/cached_source.cc
  ${CMAKE_CURRENT_LIST_DIR}/device_features.cc
  ${CMAKE_CURRENT_LIST_DIR}/walks.cc
  ${CMAKE_CURRENT_LIST_DIR}/ppr.cc
  ${CMAKE_CURRENT_LIST_DIR}/array.cc
  ${CMAKE_CURRENT_LIST_DIR}/buffer_pool.cc
  ${CMAKE_CURRENT_LIST_DIR}/batch_loader.cc
  ${CMAKE_CURRENT_LIST_DIR}/batch_sampling.cc
  ${CMAKE_CURRENT_LIST_DIR}/loader_options_map.cc
  ${CMAKE_CURRENT_LIST_DIR}/update_writer.cc
  ${CMAKE_CURRENT_LIST_DIR}/online.cc)
