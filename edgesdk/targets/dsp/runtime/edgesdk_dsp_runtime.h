/*
 * edgesdk_dsp_runtime.h - host runtime of the DSP-1 vector DSP: interprets a serialized DSP subgraph
 * (docs/dsp-datasheet.md, "Blob") and runs its nodes on the DSP, one START per node, by polling.
 *
 * The generated model.c calls edgesdk_dsp_run() once per DSP region with that region's blob (a const
 * array in flash) and the activation arena. The runtime checks the whole blob first - header, tables,
 * every tensor inside the arena or the blob, every record inside the blob - so a corrupt blob stops before
 * the DSP touches memory; the DSP itself then checks each record's contents (STATUS.ERROR_CODE).
 *
 * Register numbers equal edgesdk/targets/dsp/registers.py (names without EDGESDK_); a test compares them.
 * The peripheral base comes from the generated board.h (BOARD_DSP0_BASE).
 */
#ifndef EDGESDK_DSP_RUNTIME_H
#define EDGESDK_DSP_RUNTIME_H

#include <stdint.h>

/* identification */
#define EDGESDK_DSP_ID_VALUE 0x31505344u /* "DSP1" */
#define EDGESDK_DSP_VERSION_MAJOR 1

/* register offsets */
#define EDGESDK_DSP_REG_ID 0x000
#define EDGESDK_DSP_REG_VERSION 0x004
#define EDGESDK_DSP_REG_CTRL 0x008
#define EDGESDK_DSP_REG_STATUS 0x00C
#define EDGESDK_DSP_REG_OPCODE 0x010
#define EDGESDK_DSP_REG_SRC0_ADDR 0x014
#define EDGESDK_DSP_REG_SRC0_BYTES 0x018
#define EDGESDK_DSP_REG_SRC1_ADDR 0x01C
#define EDGESDK_DSP_REG_SRC1_BYTES 0x020
#define EDGESDK_DSP_REG_DST_ADDR 0x024
#define EDGESDK_DSP_REG_DST_BYTES 0x028
#define EDGESDK_DSP_REG_PARAM_ADDR 0x02C
#define EDGESDK_DSP_REG_PARAM_BYTES 0x030
#define EDGESDK_DSP_REG_CONST_BASE 0x034
#define EDGESDK_DSP_REG_CONST_BYTES 0x038
#define EDGESDK_DSP_REG_LAST_CYCLES 0x040

/* bit fields */
#define EDGESDK_DSP_CTRL_START 0x1u
#define EDGESDK_DSP_CTRL_RESET 0x2u
#define EDGESDK_DSP_STATUS_DONE 0x2u
#define EDGESDK_DSP_STATUS_ERROR 0x4u
#define EDGESDK_DSP_STATUS_ERROR_CODE_SHIFT 8
#define EDGESDK_DSP_STATUS_ERROR_CODE_MASK 0xFF00u

/* blob format */
#define EDGESDK_DSP_BLOB_MAGIC 0x50534445u /* "EDSP" */
#define EDGESDK_DSP_BLOB_VERSION 1u

/* edgesdk_dsp_run() results: 0, or one of these (the generated run function returns it unchanged). */
#define EDGESDK_DSP_OK 0
#define EDGESDK_DSP_ERR_DEVICE (-16)  /* the DSP reported an error: edgesdk_dsp_last_status(), _last_node() */
#define EDGESDK_DSP_ERR_TIMEOUT (-17) /* no DONE/ERROR within EDGESDK_DSP_POLL_LIMIT polls; DSP reset */
#define EDGESDK_DSP_ERR_ID (-18)      /* no DSP-1 with a supported version at BOARD_DSP0_BASE */
#define EDGESDK_DSP_ERR_BLOB (-19)    /* blob header: magic, version, entry sizes or total size wrong */
#define EDGESDK_DSP_ERR_TABLE (-20)   /* a table, record or tensor index outside the blob, or an unknown location */
#define EDGESDK_DSP_ERR_TENSOR (-21)  /* a tensor's bytes outside the arena (or, for a constant, the blob) */

#ifndef EDGESDK_DSP_POLL_LIMIT
#define EDGESDK_DSP_POLL_LIMIT 100000000u
#endif

/* Check `blob` and run its nodes in order on the DSP; arena tensors live at `arena` (arena_bytes long). */
int32_t edgesdk_dsp_run(const uint8_t *blob, uint32_t blob_bytes, uint8_t *arena, uint32_t arena_bytes);

/* STATUS and the index of the node that the last edgesdk_dsp_run() stopped at (or ran last). */
uint32_t edgesdk_dsp_last_status(void);
uint32_t edgesdk_dsp_last_node(void);

#endif /* EDGESDK_DSP_RUNTIME_H */
