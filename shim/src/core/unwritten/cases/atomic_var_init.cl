__kernel void k(__global float *in, __global float *out) {
  int i = get_global_id(0);
  ATOMIC_VAR_INIT(in[i]) = 2.0f * out[i];
}
