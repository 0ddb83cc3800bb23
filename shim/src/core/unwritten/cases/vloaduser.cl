float4 vload_and_clear(size_t o, __global float *p) { float4 v = vload4(o, p); vstore4((float4)(0.0f), o, p); return v; }
__kernel void k(__global float *in, __global float *out) {
int i = get_global_id(0); float4 v = vload_and_clear(i, in); out[i] = v.x;
}
