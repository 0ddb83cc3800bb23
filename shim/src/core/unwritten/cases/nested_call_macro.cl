#define ID(x) x
__kernel void k(__global float *in, __global float *out) {
  ID(ID(in[0])) = 1.0f;
}
