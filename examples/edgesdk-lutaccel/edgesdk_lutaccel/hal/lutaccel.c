/* VendorX LUT-1 driver (see lutaccel.h). Polls; the device raises no interrupt. */
#include "lutaccel.h"

#include "board.h"

#define REG_ID 0x00u
#define REG_CTRL 0x04u
#define REG_STATUS 0x08u
#define REG_SRC 0x0Cu
#define REG_DST 0x10u
#define REG_LENGTH 0x14u
#define REG_TABLE_SRC 0x1Cu
#define TABLE_OFFSET 0x100u
#define CTRL_START 1u
#define CTRL_LOAD_TABLE 2u
#define ID_VALUE 0x4C555431u
#define STATUS_DONE (1u << 1)
#define STATUS_ERROR(s) (((s) >> 8) & 0xFFu)
#define POLL_LIMIT 1000000u

static volatile uint32_t *lut_reg(uint32_t offset)
{
    return (volatile uint32_t *)(uintptr_t)(BOARD_LUT0_BASE + offset);
}

static void load_table(const int8_t table[256])
{
    for (uint32_t word = 0; word < 64u; ++word) {
        const uint8_t *b = (const uint8_t *)&table[4u * word];
        *lut_reg(TABLE_OFFSET + 4u * word) =
            (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
    }
}

static int32_t last_failed_layer = -1;

static int32_t wait_done(void)
{
    for (uint32_t poll = 0; poll < POLL_LIMIT; ++poll) {
        const uint32_t status = *lut_reg(REG_STATUS);
        if ((status & STATUS_DONE) == 0u) {
            continue;
        }
        switch (STATUS_ERROR(status)) {
        case 0u:
            return LUTACCEL_OK;
        case 1u:
            return LUTACCEL_ERR_BUS;
        default:
            return LUTACCEL_ERR_LENGTH;
        }
    }
    return LUTACCEL_ERR_TIMEOUT;
}

/* Start a run (the table is loaded, or CTRL_LOAD_TABLE with TABLE_SRC set) and wait for it. */
static int32_t start(const int8_t *in, int8_t *out, uint32_t length, uint32_t ctrl)
{
    *lut_reg(REG_SRC) = (uint32_t)(uintptr_t)in;
    *lut_reg(REG_DST) = (uint32_t)(uintptr_t)out;
    *lut_reg(REG_LENGTH) = length;
    *lut_reg(REG_CTRL) = ctrl;
    return wait_done();
}

int32_t lutaccel_apply(const int8_t table[256], const int8_t *in, int8_t *out, uint32_t length)
{
    if (*lut_reg(REG_ID) != ID_VALUE) {
        return LUTACCEL_ERR_ID;
    }
    load_table(table);
    return start(in, out, length, CTRL_START);
}

int32_t lutaccel_run_jobs(const uint8_t *tables, uint8_t *arena, const struct lutaccel_job *jobs, uint32_t count)
{
    if (*lut_reg(REG_ID) != ID_VALUE) {
        last_failed_layer = count > 0u ? (int32_t)jobs[0].layer : -1;
        return LUTACCEL_ERR_ID;
    }
    for (uint32_t i = 0; i < count; ++i) {
        const struct lutaccel_job *job = &jobs[i];
        const int8_t *table = (const int8_t *)(tables + job->table_offset);
        uint32_t ctrl = CTRL_START;
        if ((job->flags & LUTACCEL_JOB_DMA_TABLE) != 0u) {
            *lut_reg(REG_TABLE_SRC) = (uint32_t)(uintptr_t)table;
            ctrl |= CTRL_LOAD_TABLE;
        } else {
            load_table(table);
        }
        const int32_t status = start((const int8_t *)(arena + job->src_offset), (int8_t *)(arena + job->dst_offset),
                                     job->length, ctrl);
        if (status != LUTACCEL_OK) {
            last_failed_layer = (int32_t)job->layer;
            return status;
        }
    }
    return LUTACCEL_OK;
}

int32_t lutaccel_last_failed_layer(void)
{
    return last_failed_layer;
}
