#include_next "defs2.h"
__kernel void k(__global float *in, __global float *out) {
  STORE(in[0]);
}
