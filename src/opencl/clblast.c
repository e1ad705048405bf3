/*
 * CLBlast through dlopen (opencl/clblast.h): found at first use, the four
 * entry points deform_conv2d needs looked up by name. Their prototypes are
 * declared here (CLBlast's C enums are ints), so no CLBlast header is needed
 * to build.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "opencl/clblast.h"

enum { VO_CLBLAST_COL_MAJOR = 102, VO_CLBLAST_NO_TRANS = 111, VO_CLBLAST_TRANS = 112 };
enum { VO_CLBLAST_SUCCESS = 0 };

typedef int (*vo_clblast_sgemm_fn)(int, int, int, size_t, size_t, size_t, float, cl_mem, size_t,
                                   size_t, cl_mem, size_t, size_t, float, cl_mem, size_t, size_t,
                                   cl_command_queue *, cl_event *, cl_mem);
typedef int (*vo_clblast_dgemm_fn)(int, int, int, size_t, size_t, size_t, double, cl_mem, size_t,
                                   size_t, cl_mem, size_t, size_t, double, cl_mem, size_t, size_t,
                                   cl_command_queue *, cl_event *, cl_mem);
typedef int (*vo_clblast_temp_fn)(int, int, int, size_t, size_t, size_t, size_t, size_t, size_t,
                                  size_t, size_t, size_t, cl_command_queue *, size_t *);

static struct {
  int ok;
  const char *name; /* the library's name that loaded */
  char error[512];
  vo_clblast_sgemm_fn sgemm;
  vo_clblast_dgemm_fn dgemm;
  vo_clblast_temp_fn stemp, dtemp;
} vo_clblast;
static pthread_once_t vo_clblast_once = PTHREAD_ONCE_INIT;

static void vo_clblast_open(void) {
  static const char *const names[] = {"libclblast.so.1", "libclblast.so"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      vo_clblast.name = names[i];
    } else if (!vo_clblast.error[0]) {
      /* The first failure names the library we want most; keep that one. */
      const char *why = dlerror();
      snprintf(vo_clblast.error, sizeof vo_clblast.error, "%s", why ? why : names[i]);
    }
  }
  if (!lib) return;
  /* POSIX's dlsym returns object pointers; converting them to function
   * pointers is how every dlopen user does it. */
  *(void **)&vo_clblast.sgemm = dlsym(lib, "CLBlastSgemmWithTempBuffer");
  *(void **)&vo_clblast.dgemm = dlsym(lib, "CLBlastDgemmWithTempBuffer");
  *(void **)&vo_clblast.stemp = dlsym(lib, "CLBlastSGemmTempBufferSize");
  *(void **)&vo_clblast.dtemp = dlsym(lib, "CLBlastDGemmTempBufferSize");
  if (!vo_clblast.sgemm || !vo_clblast.dgemm || !vo_clblast.stemp || !vo_clblast.dtemp) {
    snprintf(vo_clblast.error, sizeof vo_clblast.error,
             "%s lacks CLBlastSgemmWithTempBuffer and its kin (CLBlast 1.5 or later is needed)",
             vo_clblast.name);
    return; /* the library stays loaded: unloading it buys nothing */
  }
  vo_clblast.ok = 1;
}

vo_status vo_clblast_load(const vo_exec *ex) {
  pthread_once(&vo_clblast_once, vo_clblast_open);
  if (vo_clblast.ok) return VO_OK;
  return vo_fail(VO_ERROR_BACKEND_UNAVAILABLE,
                 "%s: the OpenCL backend's matrix products need CLBlast, which could not be "
                 "loaded (%s): apt-get install libclblast1 (Debian's CLBlast runtime)",
                 ex->op_name, vo_clblast.error);
}

void vo_clblast_describe(char *out, size_t size) {
  pthread_once(&vo_clblast_once, vo_clblast_open);
  if (vo_clblast.ok)
    snprintf(out, size, "deform_conv2d GEMM CLBlast (%s)", vo_clblast.name);
  else
    snprintf(out, size,
             "deform_conv2d GEMM none, CLBlast did not load (apt-get install libclblast1): %s",
             vo_clblast.error);
}

static vo_status vo_clblast_failed(const vo_cl_call *c, const char *what, int status) {
  return vo_fail(status == -4 || status == -6 ? VO_ERROR_OUT_OF_MEMORY : VO_ERROR_BACKEND_FAILURE,
                 "%s: CLBlast %s failed with status %d", c->ex->op_name, what, status);
}

/* CLBlast takes sizes, offsets and leading dimensions as size_t but passes
 * them to its kernels as int. */
static vo_status vo_clblast_fits(const vo_cl_call *c, const vo_clblast_gemm *g) {
  const int64_t v[] = {g->m,        g->n,   g->k,        g->a_offset, g->lda,
                       g->b_offset, g->ldb, g->c_offset, g->ldc};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i] < 0 || v[i] > INT32_MAX)
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: a matrix product of %lld x %lld x %lld is too large for CLBlast",
                     c->ex->op_name, (long long)g->m, (long long)g->n, (long long)g->k);
  return VO_OK;
}

vo_status vo_clblast_temp_size(const vo_cl_call *c, int f64, const vo_clblast_gemm *g,
                               size_t *bytes) {
  vo_status st = vo_clblast_load(c->ex);
  if (st == VO_OK) st = vo_clblast_fits(c, g);
  if (st != VO_OK) return st;
  cl_command_queue q = c->queue;
  const int ta = g->trans_a ? VO_CLBLAST_TRANS : VO_CLBLAST_NO_TRANS;
  const int tb = g->trans_b ? VO_CLBLAST_TRANS : VO_CLBLAST_NO_TRANS;
  const int s = (f64 ? vo_clblast.dtemp : vo_clblast.stemp)(
      VO_CLBLAST_COL_MAJOR, ta, tb, (size_t)g->m, (size_t)g->n, (size_t)g->k, (size_t)g->a_offset,
      (size_t)g->lda, (size_t)g->b_offset, (size_t)g->ldb, (size_t)g->c_offset, (size_t)g->ldc, &q,
      bytes);
  return s == VO_CLBLAST_SUCCESS ? VO_OK : vo_clblast_failed(c, "temporary buffer query", s);
}

vo_status vo_clblast_run(const vo_cl_call *c, int f64, const vo_clblast_gemm *g, cl_mem temp) {
  vo_status st = vo_clblast_load(c->ex);
  if (st == VO_OK) st = vo_clblast_fits(c, g);
  if (st != VO_OK) return st;
  cl_command_queue q = c->queue;
  const int ta = g->trans_a ? VO_CLBLAST_TRANS : VO_CLBLAST_NO_TRANS;
  const int tb = g->trans_b ? VO_CLBLAST_TRANS : VO_CLBLAST_NO_TRANS;
  const int s =
      f64 ? vo_clblast.dgemm(VO_CLBLAST_COL_MAJOR, ta, tb, (size_t)g->m, (size_t)g->n, (size_t)g->k,
                             1.0, g->a, (size_t)g->a_offset, (size_t)g->lda, g->b,
                             (size_t)g->b_offset, (size_t)g->ldb, g->beta, g->c,
                             (size_t)g->c_offset, (size_t)g->ldc, &q, NULL, temp)
          : vo_clblast.sgemm(VO_CLBLAST_COL_MAJOR, ta, tb, (size_t)g->m, (size_t)g->n, (size_t)g->k,
                             1.0f, g->a, (size_t)g->a_offset, (size_t)g->lda, g->b,
                             (size_t)g->b_offset, (size_t)g->ldb, (float)g->beta, g->c,
                             (size_t)g->c_offset, (size_t)g->ldc, &q, NULL, temp);
  return s == VO_CLBLAST_SUCCESS ? VO_OK : vo_clblast_failed(c, f64 ? "DGEMM" : "SGEMM", s);
}
