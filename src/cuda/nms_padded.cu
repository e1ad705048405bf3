// CUDA batched_nms_padded and onnx_nms (vo_nms_padded_params), the same
// steps as src/opencl/nms_padded.c / .cl (whose tests vouch for the logic:
// the kernels are line for line the OpenCL ones): per chunk of (image,
// class) problems one thread a problem doing the candidate scan into its
// scratch slot, a stable bottom-up merge sort of (score key, item) pairs
// (cpu/sort.h's keys, so ties keep the lower item as the CPU's radix sort
// does) and the greedy pass with kernels/nms_padded.h's box conversion and
// test; then the padded ranks (binary searches in the other classes'
// key-sorted lists, ties to the lower class) and padding, or the onnx
// prefix offsets (one thread) and rows. The chunk is as many problems as
// the context's workspace limit holds slots for beyond the selections kept
// for every problem (at least one). Everything is queued on the call's
// stream; nothing waits for it.

#include "cuda/portable.cuh"
#include "kernels/nms_padded.h"

namespace {

constexpr int kThreads = 256;
// Problems are long sequential work: small blocks spread them over the SMs.
constexpr int kProblemThreads = 64;

// A (score key, item) pair of the sort.
struct Pair {
  uint64_t key;
  int64_t item;
};

// cpu/sort.h's score keys: ascending key is score descending, NaN first
// (key 0), -0 and +0 one key.
__device__ __forceinline__ uint64_t score_key(float s) {
  if (isnan(s)) return 0;
  if (s == 0) s = 0;
  uint32_t u = __float_as_uint(s);
  u = (u >> 31) ? ~u : u | 0x80000000u;
  return (uint64_t)(uint32_t)~u;
}
__device__ __forceinline__ uint64_t score_key(double s) {
  if (isnan(s)) return 0;
  if (s == 0) s = 0;
  uint64_t u = (uint64_t)__double_as_longlong(s);
  u = (u >> 63) ? ~u : u | (1ull << 63);
  return ~u;
}

// kernels/nms_padded.h's box and test per compute type.
template <typename T>
struct np_box;
template <>
struct np_box<float> {
  typedef vo_k_nms_box_f32 type;
};
template <>
struct np_box<double> {
  typedef vo_k_nms_box_f64 type;
};
__device__ __forceinline__ bool np_suppresses(int kind, const vo_k_nms_box_f32 &i,
                                              const vo_k_nms_box_f32 &j, float thr) {
  return vo_k_np_suppresses_f32(kind, &i, &j, thr);
}
__device__ __forceinline__ bool np_suppresses(int kind, const vo_k_nms_box_f64 &i,
                                              const vo_k_nms_box_f64 &j, double thr) {
  return vo_k_np_suppresses_f64(kind, &i, &j, thr);
}

// What the problems kernel needs beyond the tensors.
struct ProblemArgs {
  int64_t m_count, classes, items, max_candidates, cap, q0, nq;
  int agnostic, kind, fmt, has_thr;
  double score_thr;
  float score_thr_f32;
};

// The candidates of classes [c0, c1) of image b (item (c - c0) * M + m) as
// pairs in a; returns how many. float64 scores compare in double, the
// others in float.
__device__ int64_t np_scan(const vo_cuda_view &sv, const ProblemArgs &a, int64_t b, int64_t c0,
                           int64_t c1, Pair *out) {
  int64_t n = 0;
  for (int64_t c = c0; c < c1; ++c) {
    const int64_t item0 = (c - c0) * a.m_count;
    for (int64_t m = 0; m < a.m_count; ++m) {
      const int64_t at = b * sv.stride[0] + c * sv.stride[1] + m * sv.stride[2];
      if (sv.dtype == VO_F64) {
        const double v = static_cast<const double *>(sv.data)[at];
        if (!a.has_thr || v > a.score_thr) out[n++] = Pair{score_key(v), item0 + m};
      } else {
        const float v = vo_cuda_load_as<float>(sv, at);
        if (!a.has_thr || v > a.score_thr_f32) out[n++] = Pair{score_key(v), item0 + m};
      }
    }
  }
  return n;
}

// Stable bottom-up merge sort of a[0..n) by key, ping-ponging with tmp;
// returns the array holding the result.
__device__ Pair *np_sort(Pair *a, Pair *tmp, int64_t n) {
  Pair *src = a, *dst = tmp;
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = lo + width < n ? lo + width : n;
      const int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t i = lo, j = mid;
      for (int64_t k = lo; k < hi; ++k)
        dst[k] = i < mid && (j >= hi || src[i].key <= src[j].key) ? src[i++] : src[j++];
    }
    Pair *t = src;
    src = dst;
    dst = t;
  }
  return src;
}

// Problems [q0, q0 + nq): thread e owns problem q0 + e and scratch slot e
// (two pair arrays of `items`, then the cap selected boxes at kept_at).
// Problem q is image q (class-agnostic: item c * M + m) or (image q / C,
// class q % C). Writes its selections, their keys and count.
template <int DT>
__global__ void problems_kernel(vo_cuda_view bx, int per_class, vo_cuda_view sv, ProblemArgs a,
                                typename vo_k_dtype<DT>::T thr, int64_t *sel_all, uint64_t *key_all,
                                int64_t *count_all, char *scratch, size_t slot_bytes,
                                size_t kept_at) {
  typedef typename vo_k_dtype<DT>::T T;
  typedef typename np_box<T>::type Box;
  const int64_t sk = bx.stride[per_class ? 3 : 2], sc = per_class ? bx.stride[2] : 0;
  VO_CUDA_GRID_STRIDE(e, a.nq) {
    char *slot = scratch + (size_t)e * slot_bytes;
    Pair *pairs = reinterpret_cast<Pair *>(slot);
    Box *kept = reinterpret_cast<Box *>(slot + kept_at);
    const int64_t q = a.q0 + e;
    const int64_t b = a.agnostic ? q : q / a.classes, c0 = a.agnostic ? 0 : q % a.classes;
    int64_t n = np_scan(sv, a, b, c0, a.agnostic ? a.classes : c0 + 1, pairs);
    const Pair *sorted = np_sort(pairs, pairs + a.items, n);
    if (n > a.max_candidates) n = a.max_candidates;
    int64_t *sel = sel_all + q * a.cap;
    uint64_t *key = key_all + q * a.cap;
    int64_t count = 0;
    for (int64_t r = 0; r < n && count < a.cap; ++r) {
      const int64_t item = sorted[r].item;
      const int64_t c = c0 + item / a.m_count, m = item % a.m_count;
      const int64_t at = b * bx.stride[0] + m * bx.stride[1] + c * sc;
      Box box;
      VO_K_SET(box, DT, vo_k_np_box_of, a.kind, a.fmt, vo_cuda_load_as<T>(bx, at),
               vo_cuda_load_as<T>(bx, at + sk), vo_cuda_load_as<T>(bx, at + 2 * sk),
               vo_cuda_load_as<T>(bx, at + 3 * sk));
      bool suppressed = false;
      for (int64_t k = 0; k < count && !suppressed; ++k)
        suppressed = np_suppresses(a.kind, kept[k], box, thr);
      if (suppressed) continue;
      kept[count] = box;
      key[count] = sorted[r].key;
      sel[count++] = item;
    }
    count_all[q] = count;
  }
}

// Element k of a scores-dtype tensor copied from element i of another, as
// bits, or zeroed (i < 0).
__device__ __forceinline__ void np_copy_score(void *dst, int64_t k, const void *src, int64_t i,
                                              vo_dtype dt) {
  switch (dt) {
    case VO_F64:
      static_cast<uint64_t *>(dst)[k] = i < 0 ? 0 : static_cast<const uint64_t *>(src)[i];
      break;
    case VO_F16:
    case VO_BF16:
      static_cast<uint16_t *>(dst)[k] = i < 0 ? 0 : static_cast<const uint16_t *>(src)[i];
      break;
    default: static_cast<uint32_t *>(dst)[k] = i < 0 ? 0 : static_cast<const uint32_t *>(src)[i];
  }
}

// How many of the n ascending keys of list are < key, or <= key.
__device__ __forceinline__ int64_t np_below(const uint64_t *list, int64_t n, uint64_t key,
                                            bool or_equal) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (list[mid] < key || (or_equal && list[mid] == key))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// padded: selection e = q * cap + r at its rank in image b's order (score
// key, then class, then selection) when below k_max.
__global__ void rank_kernel(vo_cuda_view sv, int64_t m_count, int64_t classes, int agnostic,
                            int64_t cap, int64_t problems, int64_t k_max, const int64_t *sel,
                            const uint64_t *key, const int64_t *count, int64_t *keep,
                            int64_t *labels, void *scores_out) {
  VO_CUDA_GRID_STRIDE(e, problems * cap) {
    const int64_t q = e / cap, r = e % cap;
    if (r >= count[q]) continue;
    const int64_t b = agnostic ? q : q / classes, c = agnostic ? sel[e] / m_count : q % classes;
    const int64_t m = agnostic ? sel[e] % m_count : sel[e];
    int64_t rank = r;
    for (int64_t o = 0; !agnostic && o < classes && rank < k_max; ++o)
      if (o != c) {
        const int64_t qo = b * classes + o;
        rank += np_below(key + qo * cap, count[qo], key[e], o < c);
      }
    if (rank >= k_max) continue;
    keep[b * k_max + rank] = m;
    labels[b * k_max + rank] = c;
    np_copy_score(scores_out, b * k_max + rank, sv.data,
                  b * sv.stride[0] + c * sv.stride[1] + m * sv.stride[2], sv.dtype);
  }
}

// padded: item e = b * (k_max + 1) + k: the padding of slot k of image b
// past n = min(its selections, k_max), or (k = k_max) num[b] = n. Without
// boxes there are no problems (problems = 0): padding only.
__global__ void finish_kernel(vo_dtype s_dtype, int64_t classes, int agnostic, int64_t problems,
                              int64_t k_max, int64_t batches, const int64_t *count, int64_t *keep,
                              int64_t *labels, void *scores_out, int64_t *num) {
  VO_CUDA_GRID_STRIDE(e, batches * (k_max + 1)) {
    const int64_t b = e / (k_max + 1), k = e % (k_max + 1);
    const int64_t per_image = problems == 0 ? 0 : agnostic ? 1 : classes;
    int64_t n = 0;
    for (int64_t o = 0; o < per_image; ++o) n += count[b * per_image + o];
    if (n > k_max) n = k_max;
    if (k == k_max) {
      num[b] = n;
    } else if (k >= n) {
      keep[b * k_max + k] = -1;
      labels[b * k_max + k] = -1;
      np_copy_score(scores_out, b * k_max + k, nullptr, -1, s_dtype);
    }
  }
}

// onnx: offset[q] the first row of problem q, offset[problems] (and
// num_selected) the total; one thread.
__global__ void offsets_kernel(int64_t problems, const int64_t *count, int64_t *offset,
                               int64_t *num_selected) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int64_t total = 0;
  for (int64_t q = 0; q < problems; ++q) {
    offset[q] = total;
    total += count[q];
  }
  offset[problems] = total;
  *num_selected = total;
}

// onnx: item e = q * cap + r: row offset[q] + r of a selection, or one of
// the problem's -1 rows from total + q * cap - offset[q].
__global__ void rows_kernel(int64_t classes, int64_t cap, int64_t problems, const int64_t *sel,
                            const int64_t *count, const int64_t *offset, int64_t *rows) {
  const int64_t total = offset[problems];
  VO_CUDA_GRID_STRIDE(e, problems * cap) {
    const int64_t q = e / cap, r = e % cap, n = count[q];
    if (r < n) {
      int64_t *row = rows + 3 * (offset[q] + r);
      row[0] = q / classes;
      row[1] = q % classes;
      row[2] = sel[e];
    } else {
      int64_t *row = rows + 3 * (total + q * cap - offset[q] + (r - n));
      row[0] = row[1] = row[2] = -1;
    }
  }
}

template <int DT>
vo_status problems_launch(const vo_exec *ex, cudaStream_t stream, const ProblemArgs &a,
                          int64_t *sel, uint64_t *key, int64_t *count, char *scratch,
                          size_t slot_bytes, size_t kept_at) {
  const vo_nms_padded_params &p = ex->p.nms_padded;
  typedef typename vo_k_dtype<DT>::T T;
  const T thr = DT == VO_DT_F64 ? (T)p.iou_threshold : (T)p.iou_threshold_f32;
  problems_kernel<DT><<<vo_cuda_blocks(a.nq, kProblemThreads), kProblemThreads, 0, stream>>>(
      vo_cuda_view_of(p.boxes), p.per_class_boxes, vo_cuda_view_of(p.scores), a, thr, sel, key,
      count, scratch, slot_bytes, kept_at);
  return vo_cuda_check_launch(ex);
}

vo_status nms_padded_run(const vo_exec *ex, cudaStream_t stream) {
  const vo_nms_padded_params &p = ex->p.nms_padded;
  const int64_t problems = p.problems;  // 0 without boxes
  const int64_t items = p.items;
  const int64_t cap = p.max_selected;
  const size_t np = (size_t)problems, ucap = (size_t)cap;
  // Kept for every problem: selections [problems, cap], their keys, counts,
  // onnx's offsets. Sizes cannot overflow: problems * cap and items are at
  // most the scores' element count (B * C * M).
  const size_t a_key = vo_cuda_align(np * ucap * sizeof(int64_t));
  const size_t a_count = a_key + vo_cuda_align(np * ucap * sizeof(uint64_t));
  const size_t a_offset = a_count + vo_cuda_align(np * sizeof(int64_t));
  const size_t total = a_offset + (np + 1) * sizeof(int64_t);
  // A scratch slot: two pair arrays of `items`, then cap boxes.
  const size_t box_bytes =
      p.boxes->dtype == VO_F64 ? sizeof(vo_k_nms_box_f64) : sizeof(vo_k_nms_box_f32);
  const size_t kept_at = vo_cuda_align(2 * (size_t)items * sizeof(Pair));
  const size_t slot_bytes = kept_at + vo_cuda_align(ucap * box_bytes);
  const size_t limit = ex->ctx->workspace_limit;
  const size_t budget = limit > total ? limit - total : 0;
  // slot_bytes is 0 only when cap and items are (no problem to run).
  int64_t chunk = slot_bytes ? (int64_t)(budget / slot_bytes) : problems;
  if (chunk < 1) chunk = 1;
  if (chunk > problems) chunk = problems;

  vo_cuda_workspace ws_state(ex), ws_scratch(ex);
  char *w = static_cast<char *>(ws_state.alloc(total));
  if (!w) return VO_ERROR_OUT_OF_MEMORY;
  int64_t *sel = reinterpret_cast<int64_t *>(w);
  uint64_t *key = reinterpret_cast<uint64_t *>(w + a_key);
  int64_t *count = reinterpret_cast<int64_t *>(w + a_count);
  int64_t *offset = reinterpret_cast<int64_t *>(w + a_offset);
  vo_status st = VO_OK;
  if (cap > 0 && problems > 0) {
    char *scratch = static_cast<char *>(ws_scratch.alloc((size_t)chunk * slot_bytes));
    if (!scratch) return VO_ERROR_OUT_OF_MEMORY;
    ProblemArgs a;
    a.m_count = p.boxes_per_image;
    a.classes = p.classes;
    a.items = items;
    a.max_candidates = p.max_candidates;
    a.cap = cap;
    a.agnostic = p.class_agnostic;
    a.kind = p.kind;
    a.fmt = p.format;
    a.has_thr = p.has_score_threshold;
    a.score_thr = p.score_threshold;
    a.score_thr_f32 = p.score_threshold_f32;
    for (int64_t q0 = 0; st == VO_OK && q0 < problems; q0 += chunk) {
      a.q0 = q0;
      a.nq = problems - q0 < chunk ? problems - q0 : chunk;
      switch (p.boxes->dtype) {
        case VO_F64:
          st = problems_launch<VO_DT_F64>(ex, stream, a, sel, key, count, scratch, slot_bytes,
                                          kept_at);
          break;
        case VO_F16:
          st = problems_launch<VO_DT_F16>(ex, stream, a, sel, key, count, scratch, slot_bytes,
                                          kept_at);
          break;
        case VO_BF16:
          st = problems_launch<VO_DT_BF16>(ex, stream, a, sel, key, count, scratch, slot_bytes,
                                           kept_at);
          break;
        default:
          st = problems_launch<VO_DT_F32>(ex, stream, a, sel, key, count, scratch, slot_bytes,
                                          kept_at);
          break;
      }
    }
  } else if (problems > 0) {
    st = vo_cuda_check(ex, cudaMemsetAsync(count, 0, np * sizeof(int64_t), stream));
  }
  if (st != VO_OK) return st;
  if (p.onnx) {
    offsets_kernel<<<1, 1, 0, stream>>>(problems, count, offset,
                                        static_cast<int64_t *>(vo_view_addr(p.num_selected)));
    if ((st = vo_cuda_check_launch(ex)) != VO_OK || problems * cap == 0) return st;
    rows_kernel<<<vo_cuda_blocks(problems * cap, kThreads), kThreads, 0, stream>>>(
        p.classes, cap, problems, sel, count, offset,
        static_cast<int64_t *>(vo_view_addr(p.selected)));
    return vo_cuda_check_launch(ex);
  }
  int64_t *keep = static_cast<int64_t *>(vo_view_addr(p.keep));
  int64_t *labels = static_cast<int64_t *>(vo_view_addr(p.labels));
  void *scores_out = vo_view_addr(p.scores_out);
  if (problems * cap > 0) {
    rank_kernel<<<vo_cuda_blocks(problems * cap, kThreads), kThreads, 0, stream>>>(
        vo_cuda_view_of(p.scores), p.boxes_per_image, p.classes, p.class_agnostic, cap, problems,
        p.max_per_image, sel, key, count, keep, labels, scores_out);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  if (p.batches == 0) return VO_OK;
  finish_kernel<<<vo_cuda_blocks(p.batches * (p.max_per_image + 1), kThreads), kThreads, 0,
                  stream>>>(p.scores->dtype, p.classes, p.class_agnostic, problems, p.max_per_image,
                            p.batches, count, keep, labels, scores_out,
                            static_cast<int64_t *>(vo_view_addr(p.num)));
  return vo_cuda_check_launch(ex);
}

}  // namespace

extern "C" vo_status vo_cuda_nms_padded(const vo_exec *ex) {
  return vo_k_on_device(ex, nullptr,
                        [&](cudaStream_t stream) { return nms_padded_run(ex, stream); });
}
