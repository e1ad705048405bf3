# The CPU backend's build: always built. Included by the top-level
# CMakeLists.txt for the VO_BACKEND(cpu, ...) line of src/backends.def.
set(VISIONOPS_HAVE_CPU ON)
# Every .c file of the folder (one per op, docs/ADDING_AN_OP.md): a new op's
# CPU file needs no edit here.
file(GLOB VISIONOPS_CPU_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/cpu/*.c)
function(vo_backend_cpu_setup target)
endfunction()
function(vo_backend_cpu_library lib)
endfunction()
