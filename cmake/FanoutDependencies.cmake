# How each dependency is found, the way its Debian 12 package supports it.
# Only what some built target uses is looked for; each target declares what it
# links in its own CMakeLists.txt.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)

# LibTorch (CPU-only on Debian; a CUDA LibTorch comes in via CMAKE_PREFIX_PATH),
# for the client's tensor layer only. Found before RocksDB: RocksDB's config
# puts its own Findgflags module on the module path, after which Caffe2's
# gflags link item resolves to gflags-NOTFOUND.
if(FANOUT_BUILD_CLIENT)
  find_package(Torch REQUIRED)
endif()

find_package(nlohmann_json CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
if(FANOUT_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()

# RocksDB ships a CMake config.
find_package(RocksDB CONFIG REQUIRED)

# Thrift: pkg-config only (find_package(Thrift) fails on Debian 12).
pkg_check_modules(THRIFT REQUIRED IMPORTED_TARGET thrift)
find_program(THRIFT_COMPILER thrift REQUIRED)

# liburing (the disk tier's reads; Debian liburing-dev): pkg-config.
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)

# cpp-httplib: the compiled build; the .pc file carries its defines.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

# METIS: no config file and no .pc.
find_path(METIS_INCLUDE_DIR metis.h REQUIRED)
find_library(METIS_LIBRARY metis REQUIRED)
if(NOT TARGET fanout_metis)
  add_library(fanout_metis INTERFACE)
  target_include_directories(fanout_metis INTERFACE ${METIS_INCLUDE_DIR})
  target_link_libraries(fanout_metis INTERFACE ${METIS_LIBRARY})
endif()

# CUDA: AUTO turns it on where nvcc is found (PATH or /usr/local/cuda).
set(FANOUT_CUDA_ENABLED OFF)
if(NOT FANOUT_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(FANOUT_NVCC nvcc HINTS /usr/local/cuda/bin)
    if(FANOUT_NVCC)
      set(CMAKE_CUDA_COMPILER ${FANOUT_NVCC})
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(FANOUT_CUDA_ENABLED ON)
  elseif(FANOUT_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FANOUT_WITH_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()

# The UCX data plane: AUTO turns it on where UCX (pkg-config ucx) is found.
# A UCX built with CUDA comes in through PKG_CONFIG_PATH.
set(FANOUT_UCX_ENABLED OFF)
if(NOT FANOUT_WITH_UCX STREQUAL "OFF")
  pkg_check_modules(UCX IMPORTED_TARGET ucx)
  if(UCX_FOUND)
    set(FANOUT_UCX_ENABLED ON)
  elseif(FANOUT_WITH_UCX STREQUAL "ON")
    message(FATAL_ERROR "FANOUT_WITH_UCX=ON but UCX was not found (apt-get install libucx-dev)")
  endif()
endif()

# libibverbs: only to describe the host's RDMA devices to operators (RDMA
# itself goes through UCX's verbs transport).
pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
