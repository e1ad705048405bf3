/* The `visionops demo` subcommand: its options and entry point. */
#ifndef VISIONOPS_TOOLS_DEMO_H
#define VISIONOPS_TOOLS_DEMO_H

#include <stdint.h>

typedef struct demo_options {
  const char *out_dir; /* where nms.svg goes */
  int64_t num_boxes;
  int num_classes;
  uint64_t seed;
  int num_threads; /* 0: all cores */
} demo_options;

#define DEMO_DEFAULT_BOXES 5000
#define DEMO_DEFAULT_CLASSES 80
#define DEMO_DEFAULT_SEED 1

/* Runs the demo and returns the process exit status. */
int demo_run(const demo_options *opt);

#endif /* VISIONOPS_TOOLS_DEMO_H */
