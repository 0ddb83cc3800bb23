void STORE(__global float *p, float v) { p[0] = v; }
_Pragma("push_macro(\"STORE\")")
#define STORE(p, v) ((void)0)
_Pragma("pop_macro(\"STORE\")")
__kernel void k(__global float *in, __global float *out) {
  STORE(in, 1.0f);
}
