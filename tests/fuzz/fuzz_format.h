/*
 * The byte format the vo_call fuzz target reads (fuzz_call.c) and the seed
 * writer produces (fuzz_seeds.c): one op, then each argument in schema order.
 * Everything past the end of the input reads as zero bytes.
 *
 *   u8 op index (mod vo_op_count)   u8 argument count delta   u8 context
 *   per argument: u8 kind override (< FUZZ_KIND_OVERRIDE: the schema's kind)
 *     tensor:  u8 flags, u8 dtype, u8 ndim, ndim x u8 size code,
 *              [ndim x u8 stride code if FUZZ_T_STRIDES], [u8 byte offset if FUZZ_T_OFFSET],
 *              then the elements' raw little-endian bytes
 *     float:   8 bytes (a double)     int: 8 bytes (int64)     bool: u8
 *     list:    u8 count, then count items as above
 *   u8 output mode (0: outputs exactly as vo_infer describes them)
 */
#ifndef VISIONOPS_FUZZ_FORMAT_H
#define VISIONOPS_FUZZ_FORMAT_H

#include <stdint.h>

/* Context byte: bits 0-1 thread count - 1 (capped at 3), bits 2-3 workspace limit. */
#define FUZZ_CTX_THREADS(b) (1 + ((b)&3) % 3)
#define FUZZ_CTX_WORKSPACE(b) (((b) >> 2) & 3) /* 0 default, 1: 1 KiB, 2: 64 KiB, 3: 1 MiB */

/* Argument count delta byte: 0 gives the schema's count; others perturb it. */
#define FUZZ_NARGS_EXACT 0

/* Kind override byte: below this the argument has the kind its schema names. */
#define FUZZ_KIND_OVERRIDE 0xF0

/* Tensor flags. */
#define FUZZ_T_NONE 0x01    /* pass no tensor (None for "Tensor?", NULL otherwise) */
#define FUZZ_T_STRIDES 0x02 /* explicit strides follow the sizes */
#define FUZZ_T_OFFSET 0x04  /* a byte offset follows */
#define FUZZ_T_NODATA 0x08  /* NULL data pointer */
#define FUZZ_T_DEVICE 0x70  /* bits 4-6: the device code, below */
#define FUZZ_T_LANES 0x80   /* two lanes: an invalid DLPack dtype */

/* Device codes: 0 CPU, 1 CUDA, 2 OpenCL, 3 CUDA host, 6 OpenCL in a buffer
 * one byte too small (the call must fail where OpenCL runs), others CPU. */
#define FUZZ_DEV_OPENCL_SHORT 6

/* Dtype codes (index into the harness's table; others wrap around). */
enum {
  FUZZ_F32 = 0,
  FUZZ_F64,
  FUZZ_F16,
  FUZZ_BF16,
  FUZZ_I64,
  FUZZ_I32,
  FUZZ_I16,
  FUZZ_U8,
  FUZZ_BOOL,
  FUZZ_C64,
  FUZZ_DTYPE_COUNT
};

/* Size codes: below FUZZ_SIZE_SPECIAL the size is the code; from there:
 * 2^31, 2^62, -1, 2^32 + 1, 1000, 2^40. */
#define FUZZ_SIZE_SPECIAL 0xF0
/* Stride codes: a signed byte, except 0x7F (2^40) and 0x80 (-2^40). */

/* Output mode: 0 exact; 1 one output with the wrong dtype; 2 one output
 * aliasing the first input; 3 one output non-contiguous; 4 NULL output;
 * 5 the last of several outputs NULL (omitted where the op allows it,
 * refused elsewhere). */
#define FUZZ_OUT_MODES 6

/* Largest tensor the harness allocates (elements); larger tensors get NULL data. */
#define FUZZ_MAX_ELEMENTS (1 << 16)
/* The harness bounds its own time, not the library's: a call runs only when
 * its outputs have at most FUZZ_MAX_OUTPUT_ELEMENTS elements in all and
 * (input elements + 1) x (output elements + 1) is at most FUZZ_MAX_WORK.
 * Legal calls can cost up to 16,384 samples per output element (the roi_align
 * family's bound) or a RoI-count x map-size integration, which under ASan
 * runs for longer than libFuzzer's timeout at large sizes; calls above the
 * bounds stop after vo_infer (shapes, and argument checks that need no data,
 * are still fuzzed). A work-setting argument the library failed to bound
 * still hangs a small call, which the timeout reports. */
#define FUZZ_MAX_OUTPUT_ELEMENTS (1 << 14)
#define FUZZ_MAX_WORK ((int64_t)1 << 22)

#endif /* VISIONOPS_FUZZ_FORMAT_H */
