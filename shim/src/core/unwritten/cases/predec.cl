__kernel void k(__global float *in, __global float *out) {
int i = get_global_id(0); --*(in + i); out[i] = in[i];
}
