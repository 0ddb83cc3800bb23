#include "defs.h"
__kernel void k(__global float *in, __global float *out) {
  A(0) = 1.0f;
}
