__kernel void k(__global float *in, __global float *out) {
  _Generic(0, int: in[0]) = 1.0f;
}
