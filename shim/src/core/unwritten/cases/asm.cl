__kernel void k(__global float *in, __global float *out) {
  int i = get_global_id(0);
  __asm__ volatile ("" : "+r"(in[i]));
}
