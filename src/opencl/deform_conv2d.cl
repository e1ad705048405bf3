/*
 * deform_conv2d and deform_conv2d_backward's OpenCL C entry points: the
 * portable work items of kernels/deform_conv2d.h per storage dtype (the
 * matrices of a column tile, the deformable im2col, the epilogue, the offset
 * and mask gradients, the atomic col2im and the deterministic col2im's keys
 * and gather), as src/cuda/deform_conv2d.cu runs them around its products;
 * here the products are CLBlast's (opencl/deform_conv2d.c). Columns and
 * matrices are in the compute type T (float32 for the half types). The
 * deterministic col2im sorts its entries by key with a stable merge sort
 * (vo_cl_dcn_merge, a pass per run width) where CUDA uses CUB's radix sort.
 */
#include "opencl/portable.clh"
#include "kernels/deform_conv2d.h"

/* Element i of a storage pointer as the compute type. */
#define vo_cl_dcn_load_f32(p, i) ((p)[i])
#define vo_cl_dcn_load_f64(p, i) ((p)[i])
#define vo_cl_dcn_load_f16(p, i) vo_k_f16_to_f32((p)[i])
#define vo_cl_dcn_load_bf16(p, i) vo_k_bf16_to_f32((p)[i])

/* The work-group size of vo_cl_dcn_bias_grad_*: the host launches at most
 * this many work items per group (vo_cl_launch_run's 256, halved to fit). */
#define VO_CL_DCN_BIAS_GROUP 256

#define VO_CL_DCN(SFX, S, T, STORE)                                                                \
  /* The weight as a contiguous [Cout, Cin/groups * kh * kw] matrix. */                            \
  __kernel void vo_cl_dcn_weight_##SFX(vo_k_dcn_geom a, VO_CL_TENSOR(weight), long n,              \
                                       VO_CL_TENSOR(out)) {                                        \
    const __global S *weight = VO_CL_AT(const S, weight);                                          \
    __global T *out = VO_CL_AT(T, out);                                                            \
    VO_CL_FOR(i, n) vo_k_dcn_weight_run_##SFX(&a, weight, i, 1, out + i);                          \
  }                                                                                                \
  /* The tile's incoming gradient as a [Cout, len] matrix. */                                      \
  __kernel void vo_cl_dcn_grad_##SFX(vo_k_dcn_geom a, VO_CL_TENSOR(grad), long n,                  \
                                     VO_CL_TENSOR(out)) {                                          \
    const __global S *grad = VO_CL_AT(const S, grad);                                              \
    __global T *out = VO_CL_AT(T, out);                                                            \
    VO_CL_FOR(i, n) vo_k_dcn_grad_run_##SFX(&a, grad, i / a.len, i % a.len, 1, out + i);           \
  }                                                                                                \
  __kernel void vo_cl_dcn_im2col_##SFX(vo_k_dcn_geom a, VO_CL_TENSOR(input), VO_CL_TENSOR(offset), \
                                       VO_CL_TENSOR(mask), long n, VO_CL_TENSOR(cols)) {           \
    const __global S *input = VO_CL_AT(const S, input);                                            \
    const __global S *offset = VO_CL_AT(const S, offset), *mask = VO_CL_AT(const S, mask);         \
    __global T *cols = VO_CL_AT(T, cols);                                                          \
    VO_CL_FOR(i, n) cols[i] = vo_k_dcn_im2col_at_##SFX(&a, input, offset, mask, i);                \
  }                                                                                                \
  /* out[image, co, pixel] of column l = obuf[co, l] + bias[co]. */                                \
  __kernel void vo_cl_dcn_epilogue_##SFX(vo_k_dcn_geom a, VO_CL_TENSOR(obuf), VO_CL_TENSOR(bias),  \
                                         long n, VO_CL_TENSOR(out)) {                              \
    const __global T *obuf = VO_CL_AT(const T, obuf);                                              \
    const __global S *bias = VO_CL_AT(const S, bias);                                              \
    __global S *out = VO_CL_AT(S, out);                                                            \
    VO_CL_FOR(i, n) vo_k_dcn_epilogue_run_##SFX(&a, obuf, bias, i / a.len, i % a.len, 1, out);     \
  }                                                                                                \
  __kernel void vo_cl_dcn_offset_grad_##SFX(                                                       \
      vo_k_dcn_geom a, VO_CL_TENSOR(input), VO_CL_TENSOR(offset), VO_CL_TENSOR(mask),              \
      VO_CL_TENSOR(dcol), long n, VO_CL_TENSOR(grad_offset), VO_CL_TENSOR(grad_mask)) {            \
    const __global S *input = VO_CL_AT(const S, input);                                            \
    const __global S *offset = VO_CL_AT(const S, offset), *mask = VO_CL_AT(const S, mask);         \
    const __global T *dcol = VO_CL_AT(const T, dcol);                                              \
    __global S *grad_offset = VO_CL_AT(S, grad_offset), *grad_mask = VO_CL_AT(S, grad_mask);       \
    VO_CL_FOR(i, n) {                                                                              \
      vo_k_dcn_offset_grad_at_##SFX(&a, input, offset, mask, dcol, i, grad_offset, grad_mask);     \
    }                                                                                              \
  }                                                                                                \
  /* Fast col2im: atomic adds into acc, the tile's images' [Cin, H, W]. */                         \
  __kernel void vo_cl_dcn_col2im_atomic_##SFX(vo_k_dcn_geom a, VO_CL_TENSOR(offset),               \
                                              VO_CL_TENSOR(mask), VO_CL_TENSOR(dcol), long n,      \
                                              VO_CL_TENSOR(acc)) {                                 \
    const __global S *offset = VO_CL_AT(const S, offset), *mask = VO_CL_AT(const S, mask);         \
    const __global T *dcol = VO_CL_AT(const T, dcol);                                              \
    __global T *acc = VO_CL_AT(T, acc);                                                            \
    VO_CL_FOR(i, n) vo_k_dcn_col2im_at_##SFX(&a, offset, mask, dcol, i, acc);                      \
  }                                                                                                \
  /* Deterministic col2im, step 1: entry 4 * i + k's key and its own index. */                     \
  __kernel void vo_cl_dcn_col2im_keys_##SFX(vo_k_dcn_geom a, VO_CL_TENSOR(offset),                 \
                                            VO_CL_TENSOR(mask), long g, long n,                    \
                                            VO_CL_TENSOR(keys), VO_CL_TENSOR(vals)) {              \
    const __global S *offset = VO_CL_AT(const S, offset), *mask = VO_CL_AT(const S, mask);         \
    __global ulong *keys = VO_CL_AT(ulong, keys);                                                  \
    __global uint *vals = VO_CL_AT(uint, vals);                                                    \
    VO_CL_FOR(i, n) {                                                                              \
      int64_t k[4];                                                                                \
      vo_k_dcn_col2im_keys_at_##SFX(&a, offset, mask, g, i, k);                                    \
      for (int j = 0; j < 4; j++) {                                                                \
        keys[4 * i + j] = (ulong)k[j];                                                             \
        vals[4 * i + j] = (uint)(4 * i + j);                                                       \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  /* Deterministic col2im, step 3: one work item per (channel of offset group                      \
   * g, plane element of the tile's images) adds the element's sorted                              \
   * contributions to acc. */                                                                      \
  __kernel void vo_cl_dcn_col2im_gather_##SFX(vo_k_dcn_geom a, VO_CL_TENSOR(offset),               \
                                              VO_CL_TENSOR(mask), VO_CL_TENSOR(dcol), long g,      \
                                              VO_CL_TENSOR(vals), VO_CL_TENSOR(run_begin),         \
                                              VO_CL_TENSOR(run_end), long n, VO_CL_TENSOR(acc)) {  \
    const __global S *offset = VO_CL_AT(const S, offset), *mask = VO_CL_AT(const S, mask);         \
    const __global T *dcol = VO_CL_AT(const T, dcol);                                              \
    const __global uint *vals = VO_CL_AT(const uint, vals);                                        \
    const __global uint *run_begin = VO_CL_AT(const uint, run_begin);                              \
    const __global uint *run_end = VO_CL_AT(const uint, run_end);                                  \
    __global T *acc = VO_CL_AT(T, acc);                                                            \
    VO_CL_FOR(i, n) {                                                                              \
      vo_k_dcn_col2im_gather_item_at_##SFX(&a, offset, mask, dcol, g, vals, run_begin, run_end, i, \
                                           acc);                                                   \
    }                                                                                              \
  }                                                                                                \
  /* grad_bias[co] = the sum of grad[:, co]: a work group per channel, a                           \
   * fixed per-item order and a fixed tree, so the same bits every run. */                         \
  __kernel void vo_cl_dcn_bias_grad_##SFX(vo_k_dcn_geom a, VO_CL_TENSOR(grad),                     \
                                          VO_CL_TENSOR(grad_bias)) {                               \
    __local T part[VO_CL_DCN_BIAS_GROUP];                                                          \
    const __global S *grad = VO_CL_AT(const S, grad);                                              \
    __global S *grad_bias = VO_CL_AT(S, grad_bias);                                                \
    const int64_t plane = a.out_h * a.out_w, total = a.batch * plane;                              \
    const int64_t *gs = a.grad_stride;                                                             \
    const int64_t lid = (int64_t)get_local_id(0), size = (int64_t)get_local_size(0);               \
    for (int64_t co = (int64_t)get_group_id(0); co < a.out_channels;                               \
         co += (int64_t)get_num_groups(0)) {                                                       \
      T s = 0;                                                                                     \
      for (int64_t i = lid; i < total; i += size) {                                                \
        const int64_t n = i / plane, pix = i % plane;                                              \
        s += vo_cl_dcn_load_##SFX(                                                                 \
            grad, n * gs[0] + co * gs[1] + (pix / a.out_w) * gs[2] + (pix % a.out_w) * gs[3]);     \
      }                                                                                            \
      part[lid] = s;                                                                               \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
      for (int64_t w = size / 2; w > 0; w /= 2) {                                                  \
        if (lid < w) part[lid] += part[lid + w];                                                   \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
      }                                                                                            \
      if (lid == 0) STORE(grad_bias, co, part[0]);                                                 \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    }                                                                                              \
  }                                                                                                \
  /* dst = src rounded to the storage type. */                                                     \
  __kernel void vo_cl_dcn_store_##SFX(VO_CL_TENSOR(src), long n, VO_CL_TENSOR(dst)) {              \
    const __global T *src = VO_CL_AT(const T, src);                                                \
    __global S *dst = VO_CL_AT(S, dst);                                                            \
    VO_CL_FOR(i, n) STORE(dst, i, src[i]);                                                         \
  }
VO_CL_EACH_DTYPE(VO_CL_DCN)

/* Deterministic col2im, step 2: one pass of a stable merge sort of (key,
 * entry) pairs by key, merging runs [2r * width, (2r + 1) * width) and
 * [(2r + 1) * width, (2r + 2) * width) of the input into the output. Each
 * item finds its place by a binary search in the other run: before equal
 * keys of the right run when it is in the left one, after those of the left
 * run when in the right one, so equal keys keep their order. */
__kernel void vo_cl_dcn_merge(VO_CL_TENSOR(keys_in), VO_CL_TENSOR(vals_in), long n, long width,
                              VO_CL_TENSOR(keys_out), VO_CL_TENSOR(vals_out)) {
  const __global ulong *ki = VO_CL_AT(const ulong, keys_in);
  const __global uint *vi = VO_CL_AT(const uint, vals_in);
  __global ulong *ko = VO_CL_AT(ulong, keys_out);
  __global uint *vo = VO_CL_AT(uint, vals_out);
  VO_CL_FOR(i, n) {
    const int64_t run = i / width, start = run * width, left = (run & 1) == 0;
    const int64_t other = left ? start + width : start - width;
    int64_t lo = other < n ? other : n, hi = other + width < n ? other + width : n;
    const int64_t first = lo;
    const ulong k = ki[i];
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (left ? ki[mid] < k : ki[mid] <= k)
        lo = mid + 1;
      else
        hi = mid;
    }
    const int64_t at = (run - (run & 1)) * width + (i - start) + (lo - first);
    ko[at] = k;
    vo[at] = vi[i];
  }
}

/* Deterministic col2im, step 2b: where each target's run of sorted entries
 * begins and ends (the host zeroes both first; the sentinel key `none`,
 * corners outside the map, has no run). */
__kernel void vo_cl_dcn_segments(VO_CL_TENSOR(keys), long n, ulong none, VO_CL_TENSOR(run_begin),
                                 VO_CL_TENSOR(run_end)) {
  const __global ulong *keys = VO_CL_AT(const ulong, keys);
  __global uint *run_begin = VO_CL_AT(uint, run_begin), *run_end = VO_CL_AT(uint, run_end);
  VO_CL_FOR(i, n) {
    const ulong k = keys[i];
    if (k == none) continue;
    if (i == 0 || keys[i - 1] != k) run_begin[k] = (uint)i;
    if (i == n - 1 || keys[i + 1] != k) run_end[k] = (uint)(i + 1);
  }
}
