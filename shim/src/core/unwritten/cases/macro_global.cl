#define GLOBAL __global
GLOBAL float *gptr;
__kernel void k0(__global float *p) { gptr = p; }
__kernel void k(__global float *in, __global float *out) {
  out[0] = in[0];
  gptr[0] = 1.0f;
}
