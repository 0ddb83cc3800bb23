#ifdef DOWN
#define STEP(n) --
#else
#define STEP(n) ++
#endif
__kernel void k(__global float *in, __global float *out) {
  STEP(1) in[0];
  STEP(1) *in;
  STEP(1) (in[1]);
}
