/* The NPU-1 compressed weight stream encoder in C (docs/npu-datasheet.md, "Compressed weight streams").
 *
 * The same bytes as the numpy encoder of edgesdk/targets/npu/hw/weight_codec.py, which stays the reference
 * and the fallback when no host C compiler is present (tests/test_npu_weight_codec.py compares the two):
 * codes per lane (literals zig-zag coded around the run value, runs of the run value of 2..MAX_RUN bytes that
 * never cross a lane), one canonical Huffman code limited to 15 bits for the whole stream with the numpy
 * encoder's tie-breaks (two-queue Huffman; package-merge when a code would be longer), each lane packed most
 * significant bit first and zero padded to a byte. One pass counts the symbols of every lane, which gives the
 * exact stream size; the bits are packed only when the caller wants a stream of that size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LANES 16
#define LITERALS 256
#define RUN_SYMBOLS 16
#define SYMBOLS (LITERALS + RUN_SYMBOLS)
#define MAX_LENGTH 15
#define MAX_RUN ((1u << (RUN_SYMBOLS + 1)) - 1u)
#define HEADER_BYTES (4 + 4 + 4 * LANES)
#define FORMAT 1

/* Error results (negative): the caller's buffer is too small, out of memory, the passes disagree (a bug). */
#define WC_SMALL_BUFFER (-1)
#define WC_NO_MEMORY (-2)
#define WC_LANE_MISMATCH (-3)

static unsigned zigzag(unsigned value, unsigned run_value) {
    int delta = (int)(int8_t)(uint8_t)(value - run_value);
    return delta >= 0 ? (unsigned)(2 * delta) : (unsigned)(-2 * delta - 1);
}

static int bit_length(uint32_t v) {
    int bits = 0;
    while (v) { bits++; v >>= 1; }
    return bits;
}

/* Runs ON_LITERAL (its symbol in `sym_`) or ON_RUN(length) for each code of the lane raw[0..len), in order:
 * a run is 2 or more run_value bytes, cut into pieces of at most MAX_RUN (a last piece of 1 byte borrows one
 * from the piece before); a lone run_value byte is literal 0. */
#define FOR_EACH_CODE(raw, len, run_value, symbol_of, ON_LITERAL, ON_RUN)                  \
    for (uint32_t i_ = 0; i_ < (len);) {                                                   \
        if ((raw)[i_] != (run_value)) {                                                    \
            unsigned sym_ = (symbol_of)[(raw)[i_]];                                        \
            ON_LITERAL;                                                                    \
            i_++;                                                                          \
            continue;                                                                      \
        }                                                                                  \
        uint32_t j_ = i_ + 1;                                                              \
        while (j_ < (len) && (raw)[j_] == (run_value)) j_++;                               \
        uint32_t left_ = j_ - i_;                                                          \
        i_ = j_;                                                                           \
        if (left_ == 1) {                                                                  \
            unsigned sym_ = 0;                                                             \
            ON_LITERAL;                                                                    \
            continue;                                                                      \
        }                                                                                  \
        while (left_ > 0) {                                                                \
            uint32_t piece_ = left_;                                                       \
            if (left_ > MAX_RUN) piece_ = left_ - MAX_RUN != 1 ? MAX_RUN : MAX_RUN - 1;    \
            left_ -= piece_;                                                               \
            ON_RUN(piece_);                                                                \
        }                                                                                  \
    }

/* -- code lengths --------------------------------------------------------------------------------------- */
typedef struct { uint64_t weight; int index; } item_t;

/* Items 0..n-1 in (weight, index) order, each item's index its position: a least significant digit first radix
 * sort of the weights, a byte at a time (stable, so equal weights stay in index order; a few times fewer
 * instructions than qsort's callbacks for the 272 symbols). */
static void sort_leaves(item_t *items, const uint64_t *weights, int n) {
    item_t scratch[SYMBOLS], *from = items, *to = scratch;
    uint64_t largest = 0;
    for (int i = 0; i < n; i++) {
        items[i].weight = weights[i];
        items[i].index = i;
        if (weights[i] > largest) largest = weights[i];
    }
    for (int shift = 0; shift < 64 && (largest >> shift); shift += 8) {
        int starts[257] = {0};
        for (int i = 0; i < n; i++) starts[((from[i].weight >> shift) & 255) + 1]++;
        for (int d = 0; d < 256; d++) starts[d + 1] += starts[d];
        for (int i = 0; i < n; i++) to[starts[(from[i].weight >> shift) & 255]++] = from[i];
        item_t *swap = from; from = to; to = swap;
    }
    if (from != items) memcpy(items, from, sizeof(item_t) * (size_t)n);
}

#define NEVER (UINT64_C(1) << 62)

/* Unlimited Huffman lengths of the n >= 2 used symbols (weights in symbol order): the two-queue merge, a leaf
 * first on equal weights, as weight_codec._huffman_lengths. Returns the longest length. */
static int huffman_lengths(const uint64_t *weights, int n, int *lengths) {
    item_t leaves[SYMBOLS];
    uint64_t merged[SYMBOLS + 1];
    int parent[2 * SYMBOLS], depth[SYMBOLS];
    sort_leaves(leaves, weights, n);
    for (int m = 0; m <= n; m++) merged[m] = NEVER;
    int next_leaf = 0, next_merged = 0;
    for (int m = 0; m < n - 1; m++) {
        uint64_t sum = 0;
        for (int take = 0; take < 2; take++) {
            uint64_t leaf = next_leaf < n ? leaves[next_leaf].weight : NEVER;
            if (leaf <= merged[next_merged]) {
                sum += leaf;
                parent[leaves[next_leaf++].index] = m;
            } else {
                sum += merged[next_merged];
                parent[n + next_merged++] = m;
            }
        }
        merged[m] = sum;
    }
    int longest = 0;
    depth[n - 2] = 0;
    for (int m = n - 3; m >= 0; m--) depth[m] = depth[parent[n + m]] + 1;
    for (int i = 0; i < n; i++) {
        lengths[i] = depth[parent[i]] + 1;
        if (lengths[i] > longest) longest = lengths[i];
    }
    return longest;
}

/* Length-limited lengths of n >= 2 symbols (weights in symbol order) by package-merge, with the numpy
 * encoder's order (weight_codec._package_merge): leaves sorted by (weight, symbol); each level the leaves
 * merged with the previous level's pairs, a leaf first on equal weights; the first 2n - 2 items of the last
 * level walked back down to the leaves they hold. */
static int package_merge(const uint64_t *weights, int n, int max_length, int *lengths) {
    item_t leaves[SYMBOLS];
    sort_leaves(leaves, weights, n);
    int cap = 2 * n;  /* a level holds n leaves and at most n - 1 packages */
    uint64_t *level = malloc(sizeof(uint64_t) * (size_t)cap), *next = malloc(sizeof(uint64_t) * (size_t)cap);
    int *refs = malloc(sizeof(int) * (size_t)cap * (size_t)max_length);  /* per level: >= 0 leaf, < 0 package ~p */
    int *sizes = malloc(sizeof(int) * (size_t)(max_length + 1));
    char *chosen = malloc((size_t)cap), *below = malloc((size_t)cap);
    int counts[SYMBOLS] = {0};
    if (!level || !next || !refs || !sizes || !chosen || !below) {
        free(level); free(next); free(refs); free(sizes); free(chosen); free(below);
        return WC_NO_MEMORY;
    }
    int size = n;
    for (int i = 0; i < n; i++) level[i] = leaves[i].weight;
    sizes[0] = n;
    for (int round = 1; round < max_length; round++) {
        int pairs = size / 2, a = 0, b = 0, k = 0;
        int *ref = refs + (size_t)cap * (size_t)round;
        while (a < n || b < pairs) {
            uint64_t package = b < pairs ? level[2 * b] + level[2 * b + 1] : NEVER;
            if (a < n && leaves[a].weight <= package) { next[k] = leaves[a].weight; ref[k++] = a++; }
            else { next[k] = package; ref[k++] = ~b; b++; }
        }
        uint64_t *swap = level; level = next; next = swap;
        size = sizes[round] = k;
    }
    memset(chosen, 0, (size_t)cap);
    memset(chosen, 1, (size_t)(2 * n - 2));
    for (int round = max_length - 1; round >= 1; round--) {
        const int *ref = refs + (size_t)cap * (size_t)round;
        memset(below, 0, (size_t)cap);
        for (int k = 0; k < sizes[round]; k++) {
            if (!chosen[k]) continue;
            if (ref[k] >= 0) counts[ref[k]]++;
            else { below[2 * ~ref[k]] = below[2 * ~ref[k] + 1] = 1; }
        }
        memcpy(chosen, below, (size_t)cap);
    }
    for (int k = 0; k < n; k++) counts[k] += chosen[k];
    for (int k = 0; k < n; k++) lengths[leaves[k].index] = counts[k];
    free(level); free(next); free(refs); free(sizes); free(chosen); free(below);
    return 0;
}

/* weight_codec.code_lengths: lengths (0 for unused symbols) of `freqs`, at most max_length bits; one used
 * symbol gets length 1. Returns 0, or WC_NO_MEMORY. */
int wc_code_lengths(const uint64_t *freqs, int symbols, int max_length, int32_t *out) {
    uint64_t weights[SYMBOLS];
    int used[SYMBOLS], lengths[SYMBOLS], n = 0;
    if (symbols > SYMBOLS) return WC_SMALL_BUFFER;
    for (int s = 0; s < symbols; s++) {
        out[s] = 0;
        if (freqs[s]) { used[n] = s; weights[n++] = freqs[s]; }
    }
    if (n == 1) out[used[0]] = 1;
    if (n <= 1) return 0;
    if (huffman_lengths(weights, n, lengths) > max_length) {
        int status = package_merge(weights, n, max_length, lengths);
        if (status) return status;
    }
    for (int i = 0; i < n; i++) out[used[i]] = lengths[i];
    return 0;
}

/* -- the stream ------------------------------------------------------------------------------------------- */
static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

/* Bits written most significant first: `count` (< 32) bits pending at the bottom of `bits`, stored 32 at a time. */
typedef struct { uint8_t *out; uint64_t bits; int count; } writer_t;

static inline void put_bits(writer_t *w, uint32_t value, int width) {  /* width <= 16 */
    w->bits = (w->bits << width) | value;
    w->count += width;
    if (w->count >= 32) {
        w->count -= 32;
        uint32_t word = (uint32_t)(w->bits >> w->count);
        w->out[0] = (uint8_t)(word >> 24); w->out[1] = (uint8_t)(word >> 16);
        w->out[2] = (uint8_t)(word >> 8); w->out[3] = (uint8_t)word;
        w->out += 4;
    }
}

static inline void flush_bits(writer_t *w) {  /* the pending bits, the last byte zero padded */
    for (; w->count >= 8; w->count -= 8) *w->out++ = (uint8_t)(w->bits >> (w->count - 8));
    if (w->count) *w->out++ = (uint8_t)(w->bits << (8 - w->count));
    w->count = 0;
}

/* The stream of raw[0..n) with run value `run_value` (-1: the commonest byte, the lowest of equals).
 * `limit` > 0: only a stream smaller than `limit` bytes is wanted; a larger one returns 0 and writes nothing.
 * Else the stream's size (> 0), written to `out` when it fits `capacity` (WC_SMALL_BUFFER if not). */
int64_t wc_encode(const uint8_t *raw, uint32_t n, int run_value, int64_t limit, uint8_t *out, uint64_t capacity) {
    uint32_t seg = n ? (n + LANES - 1) / LANES : 1;
    if (run_value < 0) {  /* four tables: equal bytes in a row do not wait on one counter */
        uint32_t bytes[4][256] = {{0}}, i = 0, best = 0;
        for (; i + 4 <= n; i += 4) {
            bytes[0][raw[i]]++; bytes[1][raw[i + 1]]++; bytes[2][raw[i + 2]]++; bytes[3][raw[i + 3]]++;
        }
        for (; i < n; i++) bytes[0][raw[i]]++;
        run_value = 0;
        for (int v = 0; v < 256; v++) {
            uint32_t count = bytes[0][v] + bytes[1][v] + bytes[2][v] + bytes[3][v];
            if (count > best) { best = count; run_value = v; }
        }
    }
    unsigned symbol_of[256];
    for (unsigned v = 0; v < 256; v++) symbol_of[v] = zigzag(v, (unsigned)run_value);

    /* pass 1: the symbol counts and extra bits of each lane */
    static const uint64_t zero[SYMBOLS];
    uint64_t counts[LANES][SYMBOLS], totals[SYMBOLS], extra[LANES];
    for (int lane = 0; lane < LANES; lane++) {
        memcpy(counts[lane], zero, sizeof zero);
        extra[lane] = 0;
        uint32_t start = (uint32_t)lane * seg < n ? (uint32_t)lane * seg : n;
        uint32_t end = start + seg < n ? start + seg : n;
        const uint8_t *p = raw + start;
        uint64_t *c = counts[lane];
#define COUNT_RUN(piece)                                          \
        do {                                                      \
            int k = bit_length(piece) - 2;                        \
            c[LITERALS + k]++;                                    \
            extra[lane] += (uint64_t)k + 1;                       \
        } while (0)
        FOR_EACH_CODE(p, end - start, (uint8_t)run_value, symbol_of, c[sym_]++, COUNT_RUN)
#undef COUNT_RUN
    }
    for (int s = 0; s < SYMBOLS; s++) {
        totals[s] = 0;
        for (int lane = 0; lane < LANES; lane++) totals[s] += counts[lane][s];
    }
    int32_t lengths[SYMBOLS];
    int status = wc_code_lengths(totals, SYMBOLS, MAX_LENGTH, lengths);
    if (status) return status;

    /* the exact size: header, code table (nibbles), lanes */
    int literal_count = 0;
    for (int s = 0; s < LITERALS; s++) if (lengths[s]) literal_count = s + 1;
    uint64_t lane_bytes[LANES], size = HEADER_BYTES + (uint64_t)(literal_count + RUN_SYMBOLS + 1) / 2;
    for (int lane = 0; lane < LANES; lane++) {
        uint64_t bits = extra[lane];
        for (int s = 0; s < SYMBOLS; s++) bits += counts[lane][s] * (uint64_t)lengths[s];
        lane_bytes[lane] = (bits + 7) / 8;
        size += lane_bytes[lane];
    }
    if (limit > 0 && (int64_t)size >= limit) return 0;
    if (size > capacity) return WC_SMALL_BUFFER;

    /* canonical codes: by (length, symbol), each the one before plus one, shifted to its length */
    uint32_t codes[SYMBOLS] = {0}, next_code = 0;
    int previous = 0;
    for (int length = 1; length <= MAX_LENGTH; length++) {
        for (int s = 0; s < SYMBOLS; s++) {
            if (lengths[s] != length) continue;
            if (previous) next_code <<= (length - previous);
            codes[s] = next_code++;
            previous = length;
        }
    }

    uint8_t *p = out;
    p[0] = FORMAT; p[1] = (uint8_t)run_value; p[2] = (uint8_t)literal_count; p[3] = (uint8_t)(literal_count >> 8);
    put_u32(p + 4, n);
    for (int lane = 0; lane < LANES; lane++) put_u32(p + 8 + 4 * lane, (uint32_t)lane_bytes[lane]);
    p += HEADER_BYTES;
    int table = literal_count + RUN_SYMBOLS;
    for (int i = 0; i < table; i += 2) {
        int lo = lengths[i < literal_count ? i : LITERALS + i - literal_count];
        int hi = i + 1 >= table ? 0 : lengths[i + 1 < literal_count ? i + 1 : LITERALS + i + 1 - literal_count];
        *p++ = (uint8_t)(lo | hi << 4);
    }

    /* pass 2: each lane's bits */
    for (int lane = 0; lane < LANES; lane++) {
        uint32_t start = (uint32_t)lane * seg < n ? (uint32_t)lane * seg : n;
        uint32_t end = start + seg < n ? start + seg : n;
        const uint8_t *q = raw + start;
        writer_t w = {p, 0, 0};
#define EMIT_LITERAL put_bits(&w, codes[sym_], lengths[sym_])
#define EMIT_RUN(piece)                                                                             \
        do {                                                                                        \
            int k = bit_length(piece) - 2;                                                          \
            put_bits(&w, codes[LITERALS + k], lengths[LITERALS + k]);                               \
            put_bits(&w, (piece) - (1u << (k + 1)), k + 1);                                         \
        } while (0)
        FOR_EACH_CODE(q, end - start, (uint8_t)run_value, symbol_of, EMIT_LITERAL, EMIT_RUN)
#undef EMIT_LITERAL
#undef EMIT_RUN
        flush_bits(&w);
        p += lane_bytes[lane];
        if (w.out != p) return WC_LANE_MISMATCH;  /* cannot happen: pass 2 wrote another size than pass 1 counted */
    }
    return (int64_t)size;
}
