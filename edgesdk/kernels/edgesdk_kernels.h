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
#include "edgesdk_arith.h"
#include "edgesdk_concatenation.h"
#include "edgesdk_conv2d.h"
#include "edgesdk_depthwise_conv2d.h"
#include "edgesdk_dequantize.h"
#include "edgesdk_fully_connected.h"
#include "edgesdk_hard_swish.h"
#include "edgesdk_logistic.h"
#include "edgesdk_lut.h"
#include "edgesdk_mathf.h"
#include "edgesdk_mean.h"
#include "edgesdk_mul.h"
#include "edgesdk_pad.h"
#include "edgesdk_pool2d.h"
#include "edgesdk_quantize.h"
#include "edgesdk_relu.h"
#include "edgesdk_reshape.h"
#include "edgesdk_softmax.h"
#include "edgesdk_unary.h"

#endif /* EDGESDK_KERNELS_H */
