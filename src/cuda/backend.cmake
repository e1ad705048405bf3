# The CUDA backend's build: found when nvcc is (VISIONOPS_CUDA=AUTO) or
# required (ON). Included by the top-level CMakeLists.txt for the
# VO_BACKEND(cuda, ...) line of src/backends.def; sets VISIONOPS_HAVE_CUDA
# and VISIONOPS_CUDA_SOURCES, and defines vo_backend_cuda_setup(target).
set(VISIONOPS_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON, OFF")
set_property(CACHE VISIONOPS_CUDA PROPERTY STRINGS AUTO ON OFF)
set(VISIONOPS_HAVE_CUDA OFF)
if(VISIONOPS_CUDA STREQUAL "ON" OR VISIONOPS_CUDA STREQUAL "AUTO")
  if(NOT CMAKE_CUDA_COMPILER)
    check_language(CUDA)
  endif()
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Machine code (SASS) for Turing (the oldest CUDA 13 targets), Ampere
      # (A100; A10/RTX 30), Ada (L4/RTX 40) and Hopper (H100/H200), so none
      # of them compiles PTX at its first launch; PTX for sm_90 only, which
      # newer GPUs (Blackwell) compile at load. Each architecture adds ~15 s
      # of CUDA compile on 2 cores; pass -DCMAKE_CUDA_ARCHITECTURES=<yours>
      # for a quicker build.
      set(CMAKE_CUDA_ARCHITECTURES "75-real;80-real;86-real;89-real;90")
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(VISIONOPS_HAVE_CUDA ON)
  elseif(VISIONOPS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "VISIONOPS_CUDA=ON but no CUDA compiler (nvcc) was found")
  else()
    message(STATUS "visionops: nvcc not found, building without the CUDA backend")
  endif()
elseif(NOT VISIONOPS_CUDA STREQUAL "OFF")
  message(FATAL_ERROR "VISIONOPS_CUDA must be AUTO, ON or OFF, got '${VISIONOPS_CUDA}'")
endif()

# Every .cu file of the folder (one per op, docs/ADDING_AN_OP.md): a new op's
# CUDA file needs no edit here.
file(GLOB VISIONOPS_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/*.cu)

if(VISIONOPS_HAVE_CUDA)
  # The static runtime keeps libvisionops loadable where no CUDA is installed;
  # the driver itself is looked up at run time and its absence is reported.
  # The CUDA objects are C++ (CUB), so static users need libstdc++ too.
  # cuBLAS (deform_conv2d) is dlopen'ed at first use, never linked.
  list(APPEND VISIONOPS_LINK_LIBS CUDA::cudart_static stdc++ ${CMAKE_DL_LIBS})
  string(APPEND VISIONOPS_PC_BACKEND_LIBS
         " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt -lstdc++")
endif()

function(vo_backend_cuda_setup target)
  target_include_directories(${target} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set_target_properties(${target} PROPERTIES CUDA_VISIBILITY_PRESET hidden)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-ffp-contract=off --Werror=all-warnings --fmad=false>)
  # Line tables in the device code (no change to the generated code), so that
  # compute-sanitizer and cuda-gdb name the source line of a fault.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
endfunction()

# Whole-program CUDA compilation: no device link step is needed.
function(vo_backend_cuda_library lib)
  set_target_properties(${lib} PROPERTIES LINKER_LANGUAGE C CUDA_RESOLVE_DEVICE_SYMBOLS OFF)
endfunction()
