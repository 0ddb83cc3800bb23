__kernel void k(__global float *in, __global float *out) {
#include "body.inc"
}
