/* The fuzz target's one entry, shared by libFuzzer's driver and fuzz_replay. */
#ifndef VISIONOPS_FUZZ_RUN_H
#define VISIONOPS_FUZZ_RUN_H

#include <stddef.h>
#include <stdint.h>

#include <visionops/visionops.h>

/* Decodes and runs one input; *call_status is vo_call's status (an error
 * status when the input stopped before vo_call). Aborts on a broken promise. */
int fuzz_run(const uint8_t *data, size_t size, vo_status *call_status);

#endif /* VISIONOPS_FUZZ_RUN_H */
