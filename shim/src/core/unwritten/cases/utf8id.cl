#define é(x) x = 1.0f
__kernel void k(__global float *in, __global float *out) {
  é(in[0]);
}
