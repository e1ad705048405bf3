/*
 * The one per-op registry of sample inputs: for every op of src/ops/ops.def,
 * boxed arguments (vo_value) over host tensors for a given variant, dtype and
 * seed, and the op's tolerances per dtype. The cross-backend harness
 * (tests/test_backend_ops.c), the fuzz seed writer (tests/fuzz/fuzz_seeds.c)
 * and the listing gpu_compare.py reads (samples_export.c) all take their
 * inputs from here. samples.c builds its builder table from ops.def, so an
 * op added there without a sample_<name> builder fails to build.
 * Tensors are test_util.h's vt_tensor: programs linking this library
 * compile tests/test_util.c themselves.
 */
#ifndef VISIONOPS_TEST_SAMPLES_H
#define VISIONOPS_TEST_SAMPLES_H

#include <stdint.h>

#include "test_util.h"

#define VS_MAX_ARGS 24
#define VS_MAX_TENSORS 24

typedef enum vs_variant {
  /* Realistic random inputs of odd sizes; seed % VS_RANDOM_SEEDS picks the
   * problem (seed 2: strided tensors with a byte offset; seed 3: channels-last
   * maps of enough channels for the CPU's vectorised paths). */
  VS_RANDOM,
  /* Edge cases: seed % VS_EDGE_SEEDS is 0 for empty inputs (no boxes, no
   * RoIs), 1 for degenerate ones (zero-area and reversed boxes and RoIs,
   * RoIs on the border or outside the map, offsets far outside). */
  VS_EDGE,
  /* A tiny float32 call: the fuzz corpus's seed (every size below 240, a
   * few KiB of data, within the fuzz harness's work bounds). */
  VS_SMALL,
  /* Model-sized (a detector's second stage on an 800x1088 image): what
   * gpu_compare.py times against torchvision. */
  VS_MODEL,
  VS_NUM_VARIANTS
} vs_variant;

#define VS_RANDOM_SEEDS 4
#define VS_EDGE_SEEDS 2

typedef enum vs_layout {
  VS_CONTIGUOUS,
  VS_STRIDED,       /* every other innermost element, one element of byte offset */
  VS_CHANNELS_LAST, /* 4-d tensors [N,C,H,W] with NHWC strides */
  VS_FLIPPED,       /* every stride negative: the first element is the last in memory */
  VS_SEED_LAYOUT    /* vs_build_as: the layout vs_build gives the seed */
} vs_layout;

/* One call of an op: its arguments, whose tensors (host) the sample owns,
 * so a runner can place them on any device. */
typedef struct vs_sample {
  const vo_op_info *op;
  char label[128];
  int num_args;
  vo_value args[VS_MAX_ARGS];
  int tensor_of[VS_MAX_ARGS]; /* index into tensors for a tensor argument, else -1 */
  int list_arg;               /* the Tensor[] argument, or -1 */
  int list_count;
  int list_of[VO_MAX_LIST];
  const DLTensor *host_list[VO_MAX_LIST];
  double floats[VO_MAX_LIST]; /* storage of the float[] argument */
  int num_tensors;
  vt_tensor *tensors[VS_MAX_TENSORS];
  int num_outputs;  /* the schema's count, or the list output's length */
  int rois_tensor;  /* tensor index of the RoIs, or -1 */
  int shape_tensor; /* a tensor whose wrong shape is an argument error, or -1 */
  vs_layout layout; /* of the tensors the sample makes */
  const char *note; /* what the variant is about, for tables */
} vs_sample;

/* Builds op `op_index`'s sample; every op has every variant (VS_SMALL and
 * VS_MODEL in float32 and the half types only matter to their users, but
 * build for any float dtype). Exits the program on an internal failure (out
 * of memory, a forward the sample needs failing). */
void vs_build(vs_sample *s, int op_index, vs_variant variant, DLDataType dtype, uint64_t seed);
/* The same sample (the same logical values) with its tensors in `layout`. */
void vs_build_as(vs_sample *s, int op_index, vs_variant variant, DLDataType dtype, uint64_t seed,
                 vs_layout layout);
void vs_free(vs_sample *s);
const char *vs_variant_name(vs_variant variant);

/* How far a backend's output may be from the reference's (the CPU plain
 * path): relative to max(1, |reference|), or within `half_ulps` units in the
 * last place for float16 / bfloat16 outputs. Integer outputs (indices,
 * argmax, channel_mapping) must match exactly. */
typedef struct vs_tolerance {
  double rel;
  int half_ulps;
} vs_tolerance;

/* Output `output`'s tolerance for op `op_index` given its dtype. */
vs_tolerance vs_tolerance_of(int op_index, int output, DLDataType output_dtype);

/* The float dtypes every op is sampled in, in the harness's order. */
#define VS_NUM_DTYPES 4
extern const DLDataType *const vs_dtypes[VS_NUM_DTYPES];

#endif /* VISIONOPS_TEST_SAMPLES_H */
