/*
 * edgesdk_sigmoid16.c - int16 LOGISTIC and TANH, bit-exact with TFLite's reference kernels (LiteRT and TFLite
 * Micro run the same int16 code: an interpolated lookup in a table of sigmoid(i / 24)).
 */
#include "edgesdk_logistic.h"

/* sigmoid(i / 24) in Q0.16 (65535 for the last entries), i = 0..255: the values of TFLite's
 * sigmoid_table_uint16, which the reference's results depend on bit for bit (they are not exactly
 * round(65536 * sigmoid(i / 24)), so they are data here, not a formula). tanh(x) = 2 sigmoid(2x) - 1 reads
 * the same table. */
static const uint16_t sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535
};

/* The input in the table's units (1/(3 * 4096) per step for logistic, half that for tanh), rounded to
 * nearest: (x * multiplier + round) >> shift. */
static inline int32_t sigmoid16_input(const edgesdk_sigmoid16_params *p, int16_t x)
{
    int32_t multiplier = p->input_multiplier;
    int32_t shift = p->input_left_shift;
    if (multiplier == 0) { /* power-of-two input scale */
        multiplier = 3 << shift;
        shift = 0;
    }
    const int32_t round = shift > 0 ? (int32_t)1 << (shift - 1) : 0;
    return ((int32_t)x * multiplier + round) >> shift; /* arithmetic shift, as TFLite on x86 */
}

void edgesdk_logistic_s16(const edgesdk_sigmoid16_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const int32_t x = sigmoid16_input(p, input[i]);
        const uint32_t magnitude = x < 0 ? (uint32_t)(-x) : (uint32_t)x;
        const uint32_t index = magnitude >> 9;
        uint32_t result;
        if (index >= 255) {
            result = 0x7fffu << 10;
        } else {
            const uint32_t a = sigmoid_table[index];
            const uint32_t b = sigmoid_table[index + 1];
            result = (a << 9) + (magnitude & 0x1ffu) * (b - a); /* Q0.25 */
        }
        result = x >= 0 ? result + (1u << 9) : (1u << 25) - result + (1u << 9) - 1u;
        output[i] = (int16_t)(result >> 10); /* Q0.15, at most 32767 */
    }
}

void edgesdk_tanh_s16(const edgesdk_sigmoid16_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const int32_t x = sigmoid16_input(p, input[i]);
        const uint32_t magnitude = x < 0 ? (uint32_t)(-x) : (uint32_t)x;
        const uint32_t index = magnitude >> 8;
        int32_t result;
        if (index >= 255) {
            result = (int32_t)(0xffffu << 8);
        } else {
            const uint32_t a = sigmoid_table[index];
            const uint32_t b = sigmoid_table[index + 1];
            result = (int32_t)((a << 8) + (magnitude & 0xffu) * (b - a)); /* sigmoid(2|x|) in Q0.24 */
        }
        /* 2 sigmoid - 1, with the sign of x, rounded to Q0.15 (arithmetic shift, as TFLite on x86) */
        result = x >= 0 ? result - (1 << 23) + (1 << 7) : -result + (1 << 23) + (1 << 7) - 1;
        output[i] = (int16_t)(result >> 8);
    }
}
