__kernel void k(__global float *in, __global float *out) {
#if 0
  old.
#endif
  in[0] = 1.0f;
}
