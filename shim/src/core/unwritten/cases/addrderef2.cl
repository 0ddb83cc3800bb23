__kernel void k(__global int *in, __global int *out) {
int i = get_global_id(0); atomic_inc(&*(in + i)); out[i] = in[i];
}
