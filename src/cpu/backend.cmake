# The CPU backend's build: always built. Included by the top-level
# CMakeLists.txt for the VO_BACKEND(cpu, ...) line of src/backends.def.
set(VISIONOPS_HAVE_CPU ON)
set(VISIONOPS_CPU_SOURCES
    src/cpu/backend.c
    src/cpu/nms.c
    src/cpu/parallel.c
    src/cpu/box_iou.c
    src/cpu/roi_align.c
    src/cpu/multi_scale_roi_align.c
    src/cpu/ps_roi_align.c
    src/cpu/ps_roi_pool.c
    src/cpu/roi_pool.c
    src/cpu/deform_conv2d.c
    src/cpu/gemm.c)
function(vo_backend_cpu_setup target)
endfunction()
function(vo_backend_cpu_library lib)
endfunction()
