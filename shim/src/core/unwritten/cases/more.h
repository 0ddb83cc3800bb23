) { in[0] = 1.0f; }
void other(__global float *in, __global float *out
