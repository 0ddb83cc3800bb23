__kernel void k(__global float *in, __global float *out) {
#if 0
}
void other(__global float *in) {
#endif
  in[0] = 1.0f;
}
