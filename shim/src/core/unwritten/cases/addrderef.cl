__kernel void k(__global float *in, __global float *out) {
int i = get_global_id(0); __global float *q = &*in; q[i] = 1.0f; out[i] = in[i];
}
