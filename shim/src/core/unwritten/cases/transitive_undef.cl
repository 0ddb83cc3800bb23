#define A(i) in[i]
#define SET(i, v) A(i) = (v)
__kernel void k(__global float *in, __global float *out) {
  SET(get_global_id(0), 1.0f);
  out[0] = A(1);
}
#undef SET
