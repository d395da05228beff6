/*
 * edgesdk_kernels.h - the host C kernel library: one header per op, included here for generated code.
 *
 * Every kernel takes its constants as a const params struct (emitted by the compiler as static const
 * data in flash) followed by tensor pointers. Kernels never allocate and keep TFLite's reference
 * integer arithmetic; where a reference uses float (QUANTIZE, DEQUANTIZE, LiteRT's FULLY_CONNECTED
 * requantization) so do they, to stay bit-exact.
 */
#ifndef EDGESDK_KERNELS_H
#define EDGESDK_KERNELS_H

#include "edgesdk_add.h"
#include "edgesdk_batch_matmul.h"
#include "edgesdk_arg_min_max.h"
#include "edgesdk_arith.h"
#include "edgesdk_compare.h"
#include "edgesdk_broadcast_args.h"
#include "edgesdk_concatenation.h"
#include "edgesdk_conv2d.h"
#include "edgesdk_cumsum.h"
#include "edgesdk_depthwise_conv2d.h"
#include "edgesdk_dequantize.h"
#include "edgesdk_div.h"
#include "edgesdk_elementwise.h"
#include "edgesdk_dynamic_update_slice.h"
#include "edgesdk_fill.h"
#include "edgesdk_fully_connected.h"
#include "edgesdk_gather.h"
#include "edgesdk_gather_axes.h"
#include "edgesdk_hard_swish.h"
#include "edgesdk_logical.h"
#include "edgesdk_l2_normalization.h"
#include "edgesdk_log_softmax.h"
#include "edgesdk_logistic.h"
#include "edgesdk_lstm.h"
#include "edgesdk_detection_postprocess.h"
#include "edgesdk_lut.h"
#include "edgesdk_mathf.h"
#include "edgesdk_mean.h"
#include "edgesdk_mul.h"
#include "edgesdk_ort.h"
#include "edgesdk_pad.h"
#include "edgesdk_pool2d.h"
#include "edgesdk_prelu.h"
#include "edgesdk_quantize.h"
#include "edgesdk_reduce.h"
#include "edgesdk_relu.h"
#include "edgesdk_reshape.h"
#include "edgesdk_resize.h"
#include "edgesdk_softmax.h"
#include "edgesdk_svdf.h"
#include "edgesdk_unary.h"
#include "edgesdk_transpose_conv.h"
#include "edgesdk_select.h"
#include "edgesdk_squared_difference.h"
#include "edgesdk_sub.h"
#include "edgesdk_space_to_batch.h"

#endif /* EDGESDK_KERNELS_H */
