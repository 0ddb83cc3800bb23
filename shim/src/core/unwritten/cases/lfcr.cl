#define W \
in[0] = 1.0f
__kernel void k(__global float *in, __global float *out) {
  W;
  out[0] = 0.0f;
}
