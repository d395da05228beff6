/*
 * lut1_model.c - the VendorX LUT-1 in C (see lut1_model.h and device.py).
 *
 * On START it maps LENGTH bytes at SRC through its 256-entry table into DST, at once (a synchronous run), and
 * leaves that run's cycle count in CYCLES: startup + ceil(LENGTH / lookups_per_cycle), plus
 * ceil(256 / table_dma_bytes_per_cycle) when CTRL's LOAD_TABLE bit first fetches the table from TABLE_SRC.
 */
#include "lut1_model.h"

#include <stdlib.h>
#include <string.h>

#define ID_VALUE 0x4C555431u /* "LUT1" */
#define REG_ID 0x00u
#define REG_CTRL 0x04u
#define REG_STATUS 0x08u
#define REG_SRC 0x0Cu
#define REG_DST 0x10u
#define REG_LENGTH 0x14u
#define REG_CYCLES 0x18u
#define REG_TABLE_SRC 0x1Cu
#define TABLE_OFFSET 0x100u
#define TABLE_BYTES 256u
#define CTRL_START 1u
#define CTRL_LOAD_TABLE 2u
#define STATUS_DONE (1u << 1)
#define ERROR_SHIFT 8
#define ERR_BUS 1u
#define ERR_LENGTH 2u
#define MAX_LENGTH (1u << 24)
#define CHUNK_BYTES 256u /* the DMA moves the buffer in chunks; each is read before it is written */

struct lut1_device {
    uint8_t table[TABLE_BYTES];
    uint32_t status, src, dst, length, cycles, table_src;
    uint32_t lookups_per_cycle, startup_cycles, table_dma_bytes_per_cycle;
    lut1_bus_read_fn bus_read;
    lut1_bus_write_fn bus_write;
    void *bus_ctx;
    lut1_command_observer_fn observer;
    void *observer_ctx;
};

lut1_device_t *lut1_create(void)
{
    lut1_device_t *dev = calloc(1, sizeof(*dev));
    if (dev != NULL) { /* the datasheet's figures until the board says otherwise */
        dev->lookups_per_cycle = 4u;
        dev->startup_cycles = 16u;
        dev->table_dma_bytes_per_cycle = 4u;
    }
    return dev;
}

void lut1_destroy(lut1_device_t *dev)
{
    free(dev);
}

void lut1_set_bus(lut1_device_t *dev, lut1_bus_read_fn read, lut1_bus_write_fn write, void *ctx)
{
    dev->bus_read = read;
    dev->bus_write = write;
    dev->bus_ctx = ctx;
}

void lut1_set_command_observer(lut1_device_t *dev, lut1_command_observer_fn observer, void *ctx)
{
    dev->observer = observer;
    dev->observer_ctx = ctx;
}

int lut1_configure(lut1_device_t *dev, const uint32_t *words, uint32_t count)
{
    if (count != 3u || words[0] == 0u || words[1] == 0u || words[2] == 0u) {
        return 1;
    }
    dev->lookups_per_cycle = words[0];
    dev->startup_cycles = words[1];
    dev->table_dma_bytes_per_cycle = words[2];
    return 0;
}

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
    return a / b + (a % b != 0u ? 1u : 0u);
}

/* Map the buffer chunk by chunk; 0, or the error code of a refused bus access. */
static uint32_t map_buffer(lut1_device_t *dev)
{
    uint8_t chunk[CHUNK_BYTES];
    for (uint32_t done = 0; done < dev->length; done += CHUNK_BYTES) {
        const uint32_t n = dev->length - done < CHUNK_BYTES ? dev->length - done : CHUNK_BYTES;
        if (dev->bus_read == NULL || dev->bus_read(dev->bus_ctx, dev->src + done, chunk, n) != 0) {
            return ERR_BUS;
        }
        for (uint32_t i = 0; i < n; ++i) {
            chunk[i] = dev->table[chunk[i]];
        }
        if (dev->bus_write == NULL || dev->bus_write(dev->bus_ctx, dev->dst + done, chunk, n) != 0) {
            return ERR_BUS;
        }
    }
    return 0u;
}

static void run(lut1_device_t *dev, int load_table)
{
    uint32_t error = 0u;
    dev->cycles = 0u; /* a refused run costs nothing (the emulator sums CYCLES after every START) */
    if (dev->length == 0u || dev->length > MAX_LENGTH) {
        error = ERR_LENGTH;
    } else if (load_table && (dev->bus_read == NULL ||
                              dev->bus_read(dev->bus_ctx, dev->table_src, dev->table, TABLE_BYTES) != 0)) {
        error = ERR_BUS;
    } else {
        error = map_buffer(dev);
    }
    if (error == 0u) {
        dev->cycles = dev->startup_cycles + ceil_div(dev->length, dev->lookups_per_cycle) +
                      (load_table ? ceil_div(TABLE_BYTES, dev->table_dma_bytes_per_cycle) : 0u);
        if (dev->observer != NULL) {
            dev->observer(dev->observer_ctx, 0u, dev->cycles); /* a run is one job: command 0 */
        }
    }
    dev->status = STATUS_DONE | (error << ERROR_SHIFT);
}

uint32_t lut1_reg_read(lut1_device_t *dev, uint32_t offset)
{
    if (offset >= TABLE_OFFSET && offset + 4u <= TABLE_OFFSET + TABLE_BYTES) {
        uint32_t word;
        memcpy(&word, &dev->table[offset - TABLE_OFFSET], 4u); /* little-endian host and guest */
        return word;
    }
    switch (offset) {
    case REG_ID: return ID_VALUE;
    case REG_STATUS: return dev->status;
    case REG_SRC: return dev->src;
    case REG_DST: return dev->dst;
    case REG_LENGTH: return dev->length;
    case REG_CYCLES: return dev->cycles;
    case REG_TABLE_SRC: return dev->table_src;
    default: return 0u;
    }
}

void lut1_reg_write(lut1_device_t *dev, uint32_t offset, uint32_t value)
{
    if (offset >= TABLE_OFFSET && offset + 4u <= TABLE_OFFSET + TABLE_BYTES) {
        memcpy(&dev->table[offset - TABLE_OFFSET], &value, 4u);
        return;
    }
    switch (offset) {
    case REG_CTRL:
        if ((value & CTRL_START) != 0u) {
            run(dev, (value & CTRL_LOAD_TABLE) != 0u);
        }
        break;
    case REG_SRC: dev->src = value; break;
    case REG_DST: dev->dst = value; break;
    case REG_LENGTH: dev->length = value; break;
    case REG_TABLE_SRC: dev->table_src = value; break;
    default: break;
    }
}
