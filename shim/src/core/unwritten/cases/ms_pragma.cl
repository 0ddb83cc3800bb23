void STORE(__global float *p, float v) { p[0] = v; }
__pragma(push_macro("STORE"))
#define STORE(p, v) ((void)0)
__pragma(pop_macro("STORE"))
__kernel void k(__global float *in, __global float *out) {
  STORE(in, 1.0f);
}
