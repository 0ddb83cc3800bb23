__kernel void k(__global float *in, __global float *out)
#include "attr.h"
{
  out[0] = in[0];
}
