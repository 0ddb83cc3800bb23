#ifndef POST
#define POST(x) (x)
#endif
__kernel void k(__global float *in, __global float *out) {
  int i = get_global_id(0);
  POST(in[i]);
  out[i] = in[i];
}
