float4 __attribute__((overloadable)) (vload4)(size_t o, __global float *p) { p[o] = 0.0f; return (float4)(1.0f); }
__kernel void k(__global float *in, __global float4 *out) {
  out[0] = vload4(0, in);
}
