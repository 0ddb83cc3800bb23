__kernel void k(__global float *in, __global float *out) {
  __extension__ (in[0]) = 1.0f;
}
