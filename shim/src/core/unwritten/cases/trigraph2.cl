#define CLEAR(p, i) out[i] = p[i]; ??/
  p[i] = 0.0f;
__kernel void k(__global float *in, __global float *out) {
  CLEAR(in, get_global_id(0));
}
