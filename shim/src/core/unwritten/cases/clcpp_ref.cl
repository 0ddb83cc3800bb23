__kernel void k(__global float *in, __global float *out) {
  float &r = in[0];
  r = 1.0f;
  out[0] = 0.0f;
}
