// `a*b + c` is contracted to one fused multiply-add by the default build (-ffp-contract=on),
// so on inputs where the product's rounding matters the result depends on contraction: the
// mutation build of the original must contract it exactly as the application's build did.
__kernel void contract(__global const float* a, __global const float* b,
                       __global const float* c, __global float* out, int n) {
    int i = get_global_id(0);
    if (i < n) out[i] = a[i] * b[i] + c[i];
}
