#define UNUSED(code)
#define KERNEL(name) __kernel void name
UNUSED(__kernel void k(__global float *in, __global float *out) { out[0] = in[0]; })
KERNEL(k)(__global float *in, __global float *out) { in[0] = 1.0f; out[0] = 2.0f; }
