# Layers of the library, enforced by include paths.
#
# Every layer's headers are reachable only through an include root of its own,
# ${PROJECT_BINARY_DIR}/layers/<layer>, which holds one link, <layer> -> src/<layer> (kernels/ for
# the kernels). A target sees the public API and exactly the roots it names, so `#include
# "tune/x.hpp"` from a layer below tune fails to compile: no file of that name is on its path.
# The order, bottom to top: kernels < core < cuda < tune < gemm, ops < api.

set(TUNABLE_LAYER_ROOT ${PROJECT_BINARY_DIR}/layers)

function(tunable_layer_root layer dir)
  set(link ${TUNABLE_LAYER_ROOT}/${layer}/${layer})
  if(NOT EXISTS ${link})
    file(MAKE_DIRECTORY ${TUNABLE_LAYER_ROOT}/${layer})
    file(CREATE_LINK ${dir} ${link} SYMBOLIC)
  endif()
endfunction()

# The public API, seen by every target.
add_library(tunable_public_headers INTERFACE)
target_include_directories(tunable_public_headers INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>)

# Device code: raw pointers and launchers returning cudaError_t. It sees nothing but itself.
tunable_layer_root(kernels ${PROJECT_SOURCE_DIR}/kernels)
add_library(tunable_kernels INTERFACE)
target_include_directories(tunable_kernels INTERFACE ${TUNABLE_LAYER_ROOT}/kernels)
target_link_libraries(tunable_kernels INTERFACE CUDA::cudart)

# The include roots (and so the headers) target `tgt` may use: the public API plus `layers`.
function(tunable_sees tgt)
  foreach(layer IN LISTS ARGN)
    if(layer STREQUAL "kernels")
      target_link_libraries(${tgt} PRIVATE tunable_kernels)
    else()
      target_include_directories(${tgt} PRIVATE ${TUNABLE_LAYER_ROOT}/${layer})
    endif()
  endforeach()
  target_link_libraries(${tgt} PRIVATE tunable_public_headers)
endfunction()

# tunable_layer(<name> SOURCES ... SEES <lower layers>): an object library of src/<name> that sees
# its own headers, the public API and the layers below it named in SEES.
function(tunable_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;SEES" ${ARGN})
  tunable_layer_root(${name} ${PROJECT_SOURCE_DIR}/src/${name})
  set(tgt tunable_${name})
  add_library(${tgt} OBJECT ${L_SOURCES})
  tunable_sees(${tgt} ${name} ${L_SEES})
  # fmt is used header-only so the library carries no runtime dependency on libfmt.
  target_link_libraries(${tgt} PRIVATE fmt::fmt-header-only CUDA::cudart CUDA::cublas CUDA::cublasLt)
  target_compile_options(${tgt} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -O3>
    $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo --expt-relaxed-constexpr -Xcompiler=-Wall>)
  set_target_properties(${tgt} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  set_property(GLOBAL APPEND PROPERTY TUNABLE_LAYERS ${name})
  set_property(GLOBAL PROPERTY TUNABLE_LAYER_SEES_${name} ${name} ${L_SEES})
endfunction()

# A one-line translation unit of layer `layer` that includes `header`, as an object library outside
# `all`: building it tells whether the layer may see that header (tests/layers).
function(tunable_layer_probe target layer header)
  # Device headers compile as CUDA; the rest as C++.
  if(header MATCHES "\\.cuh$")
    set(src ${PROJECT_BINARY_DIR}/layer_probes/${target}.cu)
  else()
    set(src ${PROJECT_BINARY_DIR}/layer_probes/${target}.cpp)
  endif()
  file(WRITE ${src} "#include \"${header}\"\n")
  add_library(${target} OBJECT EXCLUDE_FROM_ALL ${src})
  if(layer STREQUAL "kernels")
    target_link_libraries(${target} PRIVATE tunable_kernels)
  else()
    get_property(sees GLOBAL PROPERTY TUNABLE_LAYER_SEES_${layer})
    tunable_sees(${target} ${sees})
    target_link_libraries(${target} PRIVATE fmt::fmt-header-only CUDA::cudart CUDA::cublas)
  endif()
endfunction()

# Every layer's include root: for the tests and the lab, which may look inside the library.
function(tunable_sees_all tgt)
  get_property(layers GLOBAL PROPERTY TUNABLE_LAYERS)
  tunable_sees(${tgt} kernels ${layers})
endfunction()
