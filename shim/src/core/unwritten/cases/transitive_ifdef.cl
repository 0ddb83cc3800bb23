#define IN(i) in[i]
#ifdef SCALE
#define UPDATE(i) IN(i) *= 2.0f
#else
#define UPDATE(i) IN(i) += 1.0f
#endif
__kernel void k(__global float *in, __global float *out) {
  int i = get_global_id(0);
  UPDATE(i);
  out[i] = 0.0f;
}
