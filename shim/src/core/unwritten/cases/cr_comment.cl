__kernel void k(__global float *in, __global float *out) {
  // note  in[0] = 1.0f;
}
