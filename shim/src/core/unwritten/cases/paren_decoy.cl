#define UNUSED(code)
UNUSED(__kernel void k(__global float *in, __global float *out) { out[0] = in[0]; })
__kernel void (k)(__global float *in, __global float *out) { in[0] = 1.0f; }
