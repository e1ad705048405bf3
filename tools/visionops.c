/* The `visionops` command: `info` (what this build of the library has and
 * can run), `demo` (runs every op on synthetic detections and feature maps),
 * `help`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"
#include "visionops/visionops.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: visionops <command> [options]\n"
          "\n"
          "commands:\n"
          "  info      library version, operators with their schemas, backends and the CPU ISA\n"
          "  demo      run every operator on synthetic detections (RoI ops: the best 300 on\n"
          "            synthetic feature maps), time it on each available backend, and draw\n"
          "            nms.svg (before / after batched NMS)\n"
          "  help      this message\n"
          "\n"
          "demo options:\n"
          "  --out DIR      directory for nms.svg (default: current directory)\n"
          "  --boxes N      number of detections (default %d)\n"
          "  --classes C    number of classes (default %d)\n"
          "  --seed S       random seed, any 64-bit unsigned integer (default %d)\n"
          "  --threads T    CPU threads, 0 = all cores (default 0)\n",
          DEMO_DEFAULT_BOXES, DEMO_DEFAULT_CLASSES, DEMO_DEFAULT_SEED);
}

static int cmd_info(void) {
  printf("visionops %s", vo_version());
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", VISIONOPS_VERSION_MAJOR, VISIONOPS_VERSION_MINOR,
           VISIONOPS_VERSION_PATCH);
  /* a stale shared library next to a newer command is worth pointing out */
  if (strcmp(header, vo_version()) != 0) printf(" (this command was built against %s)", header);
  printf("\n\n");

  int num_ops = vo_op_count(), width = 0;
  for (int i = 0; i < num_ops; ++i) {
    const vo_op_info *op = vo_op_get(i);
    if (op && (int)strlen(op->name) > width) width = (int)strlen(op->name);
  }
  printf("operators (%d):\n", num_ops);
  for (int i = 0; i < num_ops; ++i) {
    const vo_op_info *op = vo_op_get(i);
    if (!op) {
      fprintf(stderr, "visionops: vo_op_get(%d) returned NULL: %s\n", i, vo_last_error());
      return 1;
    }
    printf("  %-*s  %s\n", width, op->name, op->schema);
    if (op->backward) printf("  %-*s  backward: %s\n", width, "", op->backward);
  }

  int num_backends = vo_backend_count();
  printf("\nbackends (%d):\n", num_backends);
  for (int b = 0; b < num_backends; ++b) {
    vo_backend_info info;
    vo_status st = vo_backend_status(b, &info);
    if (st != VO_OK) {
      fprintf(stderr, "visionops: vo_backend_status(%d) failed: %s: %s\n", b, vo_status_string(st),
              vo_last_error());
      return 1;
    }
    printf("  %-6s built %-3s  available %-3s  %s\n", info.name, info.built ? "yes" : "no",
           info.available ? "yes" : "no", info.detail);
  }
  printf("\nCPU ISA in use: %s\n", vo_cpu_isa(NULL));
  return 0;
}

/* Strict: the whole argument must be a number in [lo, hi]. */
static int parse_int(const char *flag, const char *text, long long lo, long long hi,
                     long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) {
    fprintf(stderr, "visionops demo: %s wants an integer in [%lld, %lld], got '%s'\n", flag, lo, hi,
            text);
    return -1;
  }
  *out = v;
  return 0;
}

static int cmd_demo(int argc, char **argv) {
  demo_options opt = {NULL, DEMO_DEFAULT_BOXES, DEMO_DEFAULT_CLASSES, DEMO_DEFAULT_SEED, 0};
  for (int i = 0; i < argc; ++i) {
    const char *flag = argv[i];
    if (strcmp(flag, "-h") == 0 || strcmp(flag, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    static const char *const known[] = {"--out", "--boxes", "--classes", "--seed", "--threads"};
    int is_known = 0;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; ++k) is_known |= !strcmp(flag, known[k]);
    if (!is_known) {
      fprintf(stderr, "visionops demo: unknown option '%s'\n\n", flag);
      usage(stderr);
      return 2;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "visionops demo: %s needs a value\n", flag);
      return 2;
    }
    const char *value = argv[++i];
    long long v;
    if (strcmp(flag, "--out") == 0) {
      opt.out_dir = value;
    } else if (strcmp(flag, "--boxes") == 0) {
      if (parse_int(flag, value, 1, 10000000, &v)) return 2;
      opt.num_boxes = v;
    } else if (strcmp(flag, "--classes") == 0) {
      if (parse_int(flag, value, 1, 100000, &v)) return 2;
      opt.num_classes = (int)v;
    } else if (strcmp(flag, "--threads") == 0) {
      if (parse_int(flag, value, 0, 4096, &v)) return 2;
      opt.num_threads = (int)v;
    } else {
      char *end;
      errno = 0;
      unsigned long long s = strtoull(value, &end, 10);
      if (errno || end == value || *end || value[0] == '-') {
        fprintf(stderr, "visionops demo: --seed wants an unsigned integer, got '%s'\n", value);
        return 2;
      }
      opt.seed = s;
    }
  }
  return demo_run(&opt);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "info") == 0) {
    if (argc > 2) {
      fprintf(stderr, "visionops info: takes no arguments\n");
      return 2;
    }
    return cmd_info();
  }
  if (strcmp(argv[1], "demo") == 0) return cmd_demo(argc - 2, argv + 2);
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf("visionops %s\n", vo_version());
    return 0;
  }
  fprintf(stderr, "visionops: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
