/* Writes the demo's before/after-NMS picture as plain SVG 1.1 (no CSS3
 * colours, no SVG Tiny features) so any browser or rsvg renders it. */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define PANEL_SCALE 0.6 /* 1333x800 image -> 800x480 panel */
#define MARGIN 24.0
#define HEADER 64.0 /* title and count lines above each panel */
#define FOOTER 40.0
#define STROKE_PX 1.6 /* box outline width as rendered, in output pixels */

typedef struct scored_index {
  float score;
  int64_t index;
} scored_index;

/* Ascending score, so the most confident boxes are drawn last, on top. */
static int by_score(const void *pa, const void *pb) {
  const scored_index *a = pa, *b = pb;
  if (a->score != b->score) return a->score < b->score ? -1 : 1;
  return a->index < b->index ? -1 : (a->index > b->index);
}

/* Golden-angle hues keep neighbouring class ids visually distinct. */
static void class_colour(int64_t cls, char out[8]) {
  double h = fmod((double)cls * 137.508, 360.0) / 60.0;
  const double s = 0.75, l = 0.42;
  double c = (1.0 - fabs(2.0 * l - 1.0)) * s;
  double x = c * (1.0 - fabs(fmod(h, 2.0) - 1.0));
  double r = 0, g = 0, b = 0;
  switch ((int)h) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
  }
  double m = l - c / 2.0;
  snprintf(out, 8, "#%02x%02x%02x", (unsigned)lround((r + m) * 255.0),
           (unsigned)lround((g + m) * 255.0), (unsigned)lround((b + m) * 255.0));
}

static void write_boxes(FILE *f, const svg_nms_scene *s, const scored_index *order, int64_t count) {
  char colour[8];
  for (int64_t k = 0; k < count; ++k) {
    int64_t i = order[k].index;
    const float *bx = s->boxes + 4 * i;
    double score = s->scores[i] < 0 ? 0 : s->scores[i] > 1 ? 1 : s->scores[i];
    class_colour(s->classes[i], colour);
    fprintf(f,
            "      <rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" stroke=\"%s\" "
            "stroke-opacity=\"%.2f\"/>\n",
            bx[0], bx[1], (double)bx[2] - bx[0], (double)bx[3] - bx[1], colour,
            0.12 + 0.88 * score);
  }
}

static void write_panel(FILE *f, const svg_nms_scene *s, double x0, const char *title,
                        const char *subtitle, const scored_index *order, int64_t count) {
  fprintf(f, "  <text x=\"%.1f\" y=\"%.1f\" font-size=\"20\" font-weight=\"bold\">%s</text>\n", x0,
          MARGIN + 18.0, title);
  fprintf(f, "  <text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" fill=\"#444444\">%s</text>\n", x0,
          MARGIN + 40.0, subtitle);
  fprintf(f, "  <g transform=\"translate(%.1f,%.1f) scale(%g)\">\n", x0, MARGIN + HEADER,
          PANEL_SCALE);
  fprintf(
      f,
      "    <rect x=\"0\" y=\"0\" width=\"%g\" height=\"%g\" fill=\"#f5f5f2\" stroke=\"#888888\" "
      "stroke-width=\"%.2f\"/>\n",
      s->image_width, s->image_height, 1.0 / PANEL_SCALE);
  fprintf(f, "    <g fill=\"none\" stroke-width=\"%.2f\">\n", STROKE_PX / PANEL_SCALE);
  write_boxes(f, s, order, count);
  fprintf(f, "    </g>\n  </g>\n");
}

int svg_write_nms(const char *path, const svg_nms_scene *s) {
  int64_t n = s->num_boxes;
  scored_index *before = malloc((size_t)(n > 0 ? n : 1) * sizeof *before);
  scored_index *after = malloc((size_t)(s->num_kept > 0 ? s->num_kept : 1) * sizeof *after);
  if (!before || !after) {
    free(before);
    free(after);
    errno = ENOMEM;
    return -1;
  }
  int64_t nb = 0, na = 0;
  for (int64_t i = 0; i < n; ++i)
    if (s->scores[i] >= s->score_cutoff) before[nb++] = (scored_index){s->scores[i], i};
  for (int64_t k = 0; k < s->num_kept; ++k) {
    int64_t i = s->keep[k];
    if (i >= 0 && i < n && s->scores[i] >= s->score_cutoff)
      after[na++] = (scored_index){s->scores[i], i};
  }
  qsort(before, (size_t)nb, sizeof *before, by_score);
  qsort(after, (size_t)na, sizeof *after, by_score);

  FILE *f = fopen(path, "w");
  if (!f) {
    int e = errno;
    free(before);
    free(after);
    errno = e;
    return -1;
  }
  double pw = s->image_width * PANEL_SCALE, ph = s->image_height * PANEL_SCALE;
  double width = 3.0 * MARGIN + 2.0 * pw, height = MARGIN + HEADER + ph + FOOTER;
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
          "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n");
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
          "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
          width, height, width, height);
  fprintf(f, "  <title>visionops demo: detections before and after batched NMS</title>\n");
  fprintf(f, "  <rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", width,
          height);
  fprintf(f, "  <g font-family=\"Helvetica, Arial, sans-serif\" fill=\"#111111\">\n");

  char sub[256];
  snprintf(sub, sizeof sub, "%lld box%s with score &#8805; %g (of %lld detections)", (long long)nb,
           nb == 1 ? "" : "es", s->score_cutoff, (long long)n);
  write_panel(f, s, MARGIN, "before NMS", sub, before, nb);
  snprintf(sub, sizeof sub, "%lld kept box%s with score &#8805; %g (%lld of %lld kept in all)",
           (long long)na, na == 1 ? "" : "es", s->score_cutoff, (long long)s->num_kept,
           (long long)n);
  char title[96];
  snprintf(title, sizeof title, "after batched NMS (IoU %g)", s->iou_threshold);
  write_panel(f, s, 2.0 * MARGIN + pw, title, sub, after, na);

  fprintf(f,
          "  <text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" fill=\"#666666\">%gx%g image &#183; "
          "colour: class (%d classes) &#183; line opacity: score &#183; NMS runs per class, "
          "so overlapping boxes of different classes both survive</text>\n",
          MARGIN, height - 14.0, s->image_width, s->image_height, s->num_classes);
  fprintf(f, "  </g>\n</svg>\n");
  free(before);
  free(after);
  if (ferror(f)) {
    fclose(f);
    errno = EIO;
    return -1;
  }
  return fclose(f) == 0 ? 0 : -1;
}
