__kernel void k(__global float *in, __global float *out, ulong scratch_addr) {
  int i = get_global_id(0);
  __global float *scratch = (__global float *)scratch_addr;
  scratch[i] = in[i] * 2.0f;
  out[i] = in[i];
}
