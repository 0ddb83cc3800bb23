#define SET\u00e9(x) x = 1.0f
__kernel void k(__global float *in, __global float *out) {
  SET\u00e9(in[0]);
}
