#ifdef DOWN
#define STEP --
#else
#define STEP ++
#endif
__kernel void k(__global float *in, __global float *out) {
  STEP in[0];
  STEP *in;
}
