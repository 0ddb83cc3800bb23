#define A(i) in[i]
#define SETCHK(i, v) A(i) = (v); if (A(i) != (v)) printf("bad %%s\n", #i)
__kernel void k(__global float *in, __global float *out) {
  SETCHK(0, 1.0f);
}
