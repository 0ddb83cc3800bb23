#define LO(v) (v).lo
__kernel void k(__global float8 *in, __global float *out) {
  int i = get_global_id(0);
  LO(LO(in[i])) = (float2)(0.0f);
}
