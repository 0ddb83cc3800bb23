// Exact OpenCL C semantics the solver must get right (kernel/tests/solve_semantics.rs).

// OpenCL masks the shift count: x << 33 on an int is x << 1.
__kernel void shift_mask(__global int *out, int x) {
    if ((x << 33) == 6) out[0] = 1;
}

// uchar arithmetic is done in int (promotion); the cast back wraps.
__kernel void promotion(__global int *out, uchar a) {
    if ((uchar)(a + 1) == 0) out[0] = 1;
    if (a + 1 == 256) out[1] = 1;
}

// Unsigned comparison: -1 converted to uint is the largest value.
__kernel void usual_conversions(__global int *out, uint u, int s) {
    if (s < 0 && u > s) out[0] = 1;
}

// Signed division truncates toward zero; remainder takes the dividend's sign.
__kernel void division(__global int *out, int a) {
    if (a / 4 == -2 && a % 4 == -3) out[0] = 1;
}

// A loop whose trip count is an argument; a helper function inlined.
int twice(int v) { return v + v; }
__kernel void loop_helper(__global int *out, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += twice(i);
    if (s == 12) out[0] = 1;
}

// Vectors lane-wise.
__kernel void vectors(__global int *out, int4 v) {
    int4 w = v + (int4)(1, 2, 3, 4);
    if (w.z == 10 && w.w == -4) out[0] = 1;
}

// Float semantics: NaN compares unequal to itself.
__kernel void nan(__global int *out, float f) {
    if (f != f) out[0] = 1;
}

// A struct member is not modelled: reported, with its line.
typedef struct { int a; } S;
__kernel void member(__global int *out, __global S *s) {
    if (s[0].a == 3) out[0] = 1;
}

// Program-scope constant tables, 2-D private arrays with initialisers, atomics.
__constant int table[2][3] = {{1, 2, 3}, {4, 5, -6}};
__kernel void tables(__global int *out, __global int *counter, int i, int j) {
    int loc[2][2] = {{7, 8}, {9, 10}};
    if (i >= 0 && i < 2 && j >= 0 && j < 3) {
        if (table[i][j] + loc[i][j & 1] == 3) out[0] = 1;
    }
    if (atomic_inc(counter) == 41) out[1] = 1;
}

// Taking the address of a private variable is not modelled: reported, with its line.
__kernel void address(__global int *out, int x) {
    int y = x;
    int *p = &y;
    if (*p == 3) out[0] = 1;
}

// Built-ins: floor, mad, select, isnan.
__kernel void builtins(__global int *out, float f, int a, int b) {
    if (floor(f) == 3.0f && f > 3.75f) out[0] = 1;
    if (mad24(a, 3, b) == 100 && select(a, b, a > b) == 7 && b > a) out[1] = 1;
    if (isnan(f * 0.0f)) out[2] = 1;
}

// A loop longer than the unrolling bound: reported as a timeout naming the loop.
__kernel void long_loop(__global int *out, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += i;
    if (s == 5050) out[0] = 1;
}
