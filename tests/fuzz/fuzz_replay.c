/*
 * Runs the fuzz target over files or directories without libFuzzer (any
 * compiler): fuzz_replay [--expect-ok] PATH... With --expect-ok every input
 * must be a valid call (vo_call returns VO_OK): the seeds are checked so.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_run.h"

static int expect_ok, failures, runs, accepted;

static void replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
    failures++;
    return;
  }
  uint8_t *buf = NULL;
  size_t size = 0, cap = 0, n;
  uint8_t chunk[4096];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (size + n > cap) {
      cap = (size + n) * 2;
      uint8_t *grown = realloc(buf, cap);
      if (!grown) abort();
      buf = grown;
    }
    memcpy(buf + size, chunk, n);
    size += n;
  }
  fclose(f);
  vo_status st;
  fuzz_run(buf, size, &st);
  runs++;
  accepted += st == VO_OK;
  if (expect_ok && st != VO_OK) {
    fprintf(stderr, "fuzz_replay: %s is not a valid call: %s\n", path, vo_last_error());
    failures++;
  }
  free(buf);
}

static void replay(const char *path) {
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char full[4096];
      snprintf(full, sizeof full, "%s/%s", path, e->d_name);
      replay(full);
    }
    if (d) closedir(d);
  } else {
    replay_file(path);
  }
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--expect-ok"))
      expect_ok = 1;
    else
      replay(argv[i]);
  }
  printf("fuzz_replay: %d inputs (%d valid calls), %d failed\n", runs, accepted, failures);
  return failures || runs == 0 ? 1 : 0;
}
