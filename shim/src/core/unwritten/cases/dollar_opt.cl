__kernel void k(__global float *in, __global float *out) {
  W$(in[0]);
}
