# The OpenCL backend's build: found when the OpenCL headers (CL/cl.h) are
# (VISIONOPS_OPENCL=AUTO) or required (ON). Included by the top-level
# CMakeLists.txt for the VO_BACKEND(opencl, ...) line of src/backends.def;
# sets VISIONOPS_HAVE_OPENCL and VISIONOPS_OPENCL_SOURCES. The ICD loader
# (libOpenCL.so.1) is dlopen'ed at run time, never linked, so the library
# loads where no OpenCL is installed; the build only needs the headers, and
# AUTO also wants the loader present so that `make test` runs the backend.
set(VISIONOPS_OPENCL "AUTO" CACHE STRING
    "Build the OpenCL backend: AUTO (when the OpenCL headers and loader are found), ON, OFF")
set_property(CACHE VISIONOPS_OPENCL PROPERTY STRINGS AUTO ON OFF)
set(VISIONOPS_HAVE_OPENCL OFF)
if(VISIONOPS_OPENCL STREQUAL "ON" OR VISIONOPS_OPENCL STREQUAL "AUTO")
  find_path(VISIONOPS_OPENCL_INCLUDE_DIR CL/cl.h)
  find_library(VISIONOPS_OPENCL_LOADER NAMES OpenCL libOpenCL.so.1)
  if(VISIONOPS_OPENCL_INCLUDE_DIR AND (VISIONOPS_OPENCL_LOADER OR VISIONOPS_OPENCL STREQUAL "ON"))
    set(VISIONOPS_HAVE_OPENCL ON)
  elseif(VISIONOPS_OPENCL STREQUAL "ON")
    message(FATAL_ERROR "VISIONOPS_OPENCL=ON but the OpenCL headers (CL/cl.h) were not found: "
                        "apt-get install opencl-headers ocl-icd-opencl-dev")
  else()
    message(STATUS "visionops: OpenCL headers or loader not found (apt-get install opencl-headers "
                   "ocl-icd-opencl-dev), building without the OpenCL backend")
  endif()
elseif(NOT VISIONOPS_OPENCL STREQUAL "OFF")
  message(FATAL_ERROR "VISIONOPS_OPENCL must be AUTO, ON or OFF, got '${VISIONOPS_OPENCL}'")
endif()

# Every .c file of the folder (one per op, docs/ADDING_AN_OP.md), plus the
# generated table of embedded kernel sources.
file(GLOB VISIONOPS_OPENCL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/opencl/*.c)

if(VISIONOPS_HAVE_OPENCL)
  # The kernel sources the programs are compiled from at run time: the
  # portable headers and the folder's OpenCL C files, embedded as a string
  # table (src/opencl/embed_sources.cmake) so that nothing is read from disk.
  file(GLOB vo_opencl_embedded CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/*.h ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/*.inc
       ${CMAKE_CURRENT_SOURCE_DIR}/src/opencl/*.cl ${CMAKE_CURRENT_SOURCE_DIR}/src/opencl/*.clh)
  set(vo_opencl_table ${CMAKE_CURRENT_BINARY_DIR}/opencl_sources.c)
  # "|"-separated: a ";" list would become several command-line words.
  string(REPLACE ";" "|" vo_opencl_embedded_arg "${vo_opencl_embedded}")
  add_custom_command(OUTPUT ${vo_opencl_table}
    COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/src -DOUT=${vo_opencl_table}
            "-DFILES=${vo_opencl_embedded_arg}"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/src/opencl/embed_sources.cmake
    DEPENDS ${vo_opencl_embedded} ${CMAKE_CURRENT_SOURCE_DIR}/src/opencl/embed_sources.cmake
    COMMENT "Embedding the OpenCL kernel sources" VERBATIM)
  list(APPEND VISIONOPS_OPENCL_SOURCES ${vo_opencl_table})
  list(APPEND VISIONOPS_LINK_LIBS ${CMAKE_DL_LIBS})
  string(APPEND VISIONOPS_PC_BACKEND_LIBS " -ldl")
endif()

function(vo_backend_opencl_setup target)
  target_include_directories(${target} PRIVATE ${VISIONOPS_OPENCL_INCLUDE_DIR})
  # OpenCL 1.2 entry points only (clCreateCommandQueue, not its 2.0 successor).
  target_compile_definitions(${target} PRIVATE CL_TARGET_OPENCL_VERSION=120
                             CL_USE_DEPRECATED_OPENCL_1_2_APIS)
endfunction()
function(vo_backend_opencl_library lib)
endfunction()
