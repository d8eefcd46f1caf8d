# How each dependency is found, the way its Debian 12 package supports it
# (see docs/TOOLCHAIN notes in README "Building by hand").
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)

# LibTorch (CPU-only on Debian; a CUDA LibTorch comes in via CMAKE_PREFIX_PATH).
# Found before RocksDB: RocksDB's config puts its own Findgflags module on the
# module path, after which Caffe2's gflags link item resolves to gflags-NOTFOUND.
find_package(Torch REQUIRED)

# Header/config packages.
find_package(nlohmann_json CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(GTest CONFIG REQUIRED)
find_package(benchmark CONFIG REQUIRED)

# RocksDB ships a CMake config.
find_package(RocksDB CONFIG REQUIRED)

# Thrift: pkg-config only (find_package(Thrift) fails on Debian 12). The
# non-blocking server needs libevent, which thrift-nb.pc does not pull in.
pkg_check_modules(THRIFT REQUIRED IMPORTED_TARGET thrift)
pkg_check_modules(THRIFT_NB REQUIRED IMPORTED_TARGET thrift-nb)
pkg_check_modules(LIBEVENT REQUIRED IMPORTED_TARGET libevent)
find_program(THRIFT_COMPILER thrift REQUIRED)

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

# RDMA: AUTO turns it on where libibverbs is found.
set(FANOUT_RDMA_ENABLED OFF)
if(NOT FANOUT_WITH_RDMA STREQUAL "OFF")
  pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
  pkg_check_modules(RDMACM IMPORTED_TARGET librdmacm)
  if(IBVERBS_FOUND)
    set(FANOUT_RDMA_ENABLED ON)
  elseif(FANOUT_WITH_RDMA STREQUAL "ON")
    message(FATAL_ERROR "FANOUT_WITH_RDMA=ON but libibverbs was not found (apt-get install libibverbs-dev)")
  endif()
endif()
