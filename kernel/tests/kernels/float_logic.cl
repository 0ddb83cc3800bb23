// piglit's scalar-logical-float.cl: `&&` / `||` on float operands (an instrumented operand
// must not become the float first operand of `?:`, which OpenCL C rejects).
kernel void float_logic(global int *out, float a, float b) {
    out[0] = a && b;
    out[1] = a || b;
    if (a)
        out[2] = 1;
}
