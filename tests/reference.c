/* Plain scalar reference implementations of the box operators, written from
 * SPEC.md section 1 (expression order as torchvision's boxes.py / nms kernel). */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

/* Float arithmetic is emulated by rounding each double result to float: for
 * + - * / a double result rounded to float equals the float operation's
 * result exactly (double has more than 2*24+2 bits), so one code path serves
 * both precisions. */
static double r(double x, int single) { return single ? (double)(float)x : x; }

/* min/max that propagate NaN like torch.min/torch.max on tensors. */
static double vmin(double a, double b) { return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b); }
static double vmax(double a, double b) { return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b); }
static double clamp0(double x) { return isnan(x) ? x : (x < 0 ? 0 : x); }

static double area(const double *p, int s) { return r(r(p[2] - p[0], s) * r(p[3] - p[1], s), s); }

/* The "+0" intersection and union (no epsilon). */
static void inter_union(const double *p, const double *q, int s, double *inter, double *uni) {
  double w = clamp0(r(vmin(p[2], q[2]) - vmax(p[0], q[0]), s));
  double h = clamp0(r(vmin(p[3], q[3]) - vmax(p[1], q[1]), s));
  *inter = r(w * h, s);
  *uni = r(r(area(p, s) + area(q, s), s) - *inter, s);
}

/* 0/0 (two empty boxes) is NaN, which never suppresses. */
static double iou(const double *p, const double *q, int s) {
  double inter, uni;
  inter_union(p, q, s, &inter, &uni);
  return r(inter / uni, s);
}

static double pair(vr_iou_kind kind, const double *p, const double *q, double eps, int s) {
  double inter, uni;
  inter_union(p, q, s, &inter, &uni);
  double v_iou = r(inter / uni, s);
  if (kind == VR_IOU) return v_iou;

  /* Smallest enclosing box. */
  double cw = clamp0(r(vmax(p[2], q[2]) - vmin(p[0], q[0]), s));
  double ch = clamp0(r(vmax(p[3], q[3]) - vmin(p[1], q[1]), s));
  if (kind == VR_GIOU) {
    double enclosing = r(cw * ch, s);
    return r(v_iou - r(r(enclosing - uni, s) / enclosing, s), s);
  }

  double e = r(eps, s);
  double diag2 = r(r(r(cw * cw, s) + r(ch * ch, s), s) + e, s);
  double pcx = r(r(p[0] + p[2], s) / 2, s), pcy = r(r(p[1] + p[3], s) / 2, s);
  double qcx = r(r(q[0] + q[2], s) / 2, s), qcy = r(r(q[1] + q[3], s) / 2, s);
  double dx = r(pcx - qcx, s), dy = r(pcy - qcy, s);
  double rho2 = r(r(dx * dx, s) + r(dy * dy, s), s);
  double diou = r(v_iou - r(rho2 / diag2, s), s);
  if (kind == VR_DIOU) return diou;

  const double pi = 3.14159265358979323846;
  double ap = r(atan(r(r(p[2] - p[0], s) / r(p[3] - p[1], s), s)), s);
  double aq = r(atan(r(r(q[2] - q[0], s) / r(q[3] - q[1], s), s)), s);
  double d = r(ap - aq, s);
  double v = r(r(4 / (pi * pi), s) * r(d * d, s), s);
  double alpha = r(v / r(r(r(1 - v_iou, s) + v, s) + e, s), s);
  return r(diou - r(alpha * v, s), s);
}

void vr_pairwise_iou(vr_iou_kind kind, const double *a, int64_t n, const double *b, int64_t m,
                     double eps, int single, double *out) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) out[i * m + j] = pair(kind, a + 4 * i, b + 4 * j, eps, single);
}

/* Score descending with NaN above everything (as torch's descending sort),
 * ties by ascending index: together a stable descending sort. */
static const double *sort_scores;

static int by_score(const void *pa, const void *pb) {
  int64_t i = *(const int64_t *)pa, j = *(const int64_t *)pb;
  double a = sort_scores[i], b = sort_scores[j];
  int na = isnan(a), nb = isnan(b);
  if (na != nb) return na ? -1 : 1;
  if (!na && a != b) return a > b ? -1 : 1;
  return i < j ? -1 : (i > j ? 1 : 0);
}

static int64_t *sorted_order(const double *scores, int64_t n) {
  int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
  if (!order) abort();
  for (int64_t i = 0; i < n; i++) order[i] = i;
  sort_scores = scores;
  qsort(order, (size_t)n, sizeof *order, by_score);
  return order;
}

/* Greedy NMS over `order` restricted to boxes with idxs == category (all
 * boxes when idxs is NULL); marks kept boxes in `kept`. */
static void greedy(const double *boxes, const int64_t *order, int64_t n, const int64_t *idxs,
                   int64_t category, double thr, int single, unsigned char *suppressed,
                   unsigned char *kept) {
  for (int64_t a = 0; a < n; a++) {
    int64_t i = order[a];
    if (suppressed[i] || (idxs && idxs[i] != category)) continue;
    kept[i] = 1;
    for (int64_t b = a + 1; b < n; b++) {
      int64_t j = order[b];
      if (suppressed[j] || (idxs && idxs[j] != category)) continue;
      /* Strictly greater: NaN and equality never suppress. */
      if (iou(boxes + 4 * i, boxes + 4 * j, single) > thr) suppressed[j] = 1;
    }
  }
}

static int64_t collect(const int64_t *order, int64_t n, const unsigned char *kept, int64_t *keep) {
  int64_t k = 0;
  for (int64_t a = 0; a < n; a++)
    if (kept[order[a]]) keep[k++] = order[a];
  return k;
}

int64_t vr_nms(const double *boxes, const double *scores, int64_t n, double iou_threshold,
               int single, int64_t *keep) {
  int64_t *order = sorted_order(scores, n);
  unsigned char *suppressed = calloc((size_t)n + 1, 1);
  unsigned char *kept = calloc((size_t)n + 1, 1);
  if (!suppressed || !kept) abort();
  greedy(boxes, order, n, NULL, 0, iou_threshold, single, suppressed, kept);
  int64_t k = collect(order, n, kept, keep);
  free(order);
  free(suppressed);
  free(kept);
  return k;
}

int64_t vr_batched_nms(const double *boxes, const double *scores, const int64_t *idxs, int64_t n,
                       double iou_threshold, int single, int64_t *keep) {
  int64_t *order = sorted_order(scores, n);
  unsigned char *suppressed = calloc((size_t)n + 1, 1);
  unsigned char *kept = calloc((size_t)n + 1, 1);
  unsigned char *done = calloc((size_t)n + 1, 1); /* category of box i already run */
  if (!suppressed || !kept || !done) abort();
  for (int64_t i = 0; i < n; i++) {
    if (done[i]) continue;
    greedy(boxes, order, n, idxs, idxs[i], iou_threshold, single, suppressed, kept);
    for (int64_t j = i; j < n; j++)
      if (idxs[j] == idxs[i]) done[j] = 1;
  }
  /* Walking the global order gives score descending, ties by index. */
  int64_t k = collect(order, n, kept, keep);
  free(order);
  free(suppressed);
  free(kept);
  free(done);
  return k;
}
