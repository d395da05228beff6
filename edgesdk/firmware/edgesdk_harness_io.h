/* Hardware-in-the-loop harness options (edgesdk hil, docs/renode.md).
 *
 * On the built-in emulator the host writes the inputs into the arena and reads the outputs back. A real
 * board or Renode has no such host, so a HIL build embeds the inputs in the firmware and prints the
 * outputs over the UART, where a Robot suite compares them with the reference:
 *
 *   EDGESDK_HARNESS_EMBEDDED_INPUTS  copy edgesdk_harness_inputs[] into their arena slots before the run
 *   EDGESDK_HARNESS_PRINT_OUTPUTS    after a successful run print one line per output:
 *                                    "edgesdk: output K <hex bytes>"
 *
 * `edgesdk hil` generates edgesdk_harness_config.h (the options) and edgesdk_harness_io.c (the tables,
 * from report.json's arena offsets) into the HIL build's sources. Without that config header neither
 * option is set and the harness is unchanged.
 */
#ifndef EDGESDK_HARNESS_IO_H
#define EDGESDK_HARNESS_IO_H

#include <stdint.h>

struct edgesdk_harness_tensor {
    uint32_t arena_offset; /* where the tensor lives in edgesdk_arena */
    uint32_t bytes;
    const uint8_t *data; /* inputs: the embedded bytes; outputs: NULL */
};

extern const struct edgesdk_harness_tensor edgesdk_harness_inputs[];
extern const uint32_t edgesdk_harness_num_inputs;
extern const struct edgesdk_harness_tensor edgesdk_harness_outputs[];
extern const uint32_t edgesdk_harness_num_outputs;

#endif /* EDGESDK_HARNESS_IO_H */
