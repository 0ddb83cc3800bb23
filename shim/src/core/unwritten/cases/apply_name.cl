#define CLEAR(i) in[i] = 0.0f;
#define REPEAT4(M) M(0) M(1) M(2) M(3)
__kernel void k(__global float *in, __global float *out) {
  REPEAT4(CLEAR)
  out[0] = 1.0f;
}
#undef REPEAT4
