/* VendorX LUT-1 driver (see lutaccel.h). Polls; the device raises no interrupt. */
#include "lutaccel.h"

#include "board.h"

#define REG_ID 0x00u
#define REG_CTRL 0x04u
#define REG_STATUS 0x08u
#define REG_SRC 0x0Cu
#define REG_DST 0x10u
#define REG_LENGTH 0x14u
#define TABLE_OFFSET 0x100u
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

int32_t lutaccel_apply(const int8_t table[256], const int8_t *in, int8_t *out, uint32_t length)
{
    if (*lut_reg(REG_ID) != ID_VALUE) {
        return LUTACCEL_ERR_ID;
    }
    load_table(table);
    *lut_reg(REG_SRC) = (uint32_t)(uintptr_t)in;
    *lut_reg(REG_DST) = (uint32_t)(uintptr_t)out;
    *lut_reg(REG_LENGTH) = length;
    *lut_reg(REG_CTRL) = 1u;
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
