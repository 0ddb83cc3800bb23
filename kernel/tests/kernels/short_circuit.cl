// `&&` / `||` operands for the coverage pass; expectations are hand-checked in
// coverage_short_circuit.rs. Launched with mode = 0, n = 8, x = {3, -1, 0, 5, -2, 7, 0, 4}
// over 8 work-items.
int in_range(int v, int n) { return v >= 0 && v < n; }

__kernel void short_circuit(__global int* out, __global const int* x, int n, int mode) {
  int i = (int)get_global_id(0);
  int acc = 0;
  if (mode > 0 && x[i] > 0)
    acc += 1;
  if (i % 2 == 0 || x[i] < 0)
    acc += 2;
  int k = i;
  if (k++ < n - 1 && x[k] > 0)
    acc += 4;
  if (i >= 6 || (acc += 32) < 0)
    acc += 64;
  if (i > 0 && i < n - 1 && x[i] != 0)
    acc += 128;
  __global const int* p = (i & 1) ? x : 0;
  if (p && p[i] > 0)
    acc += 256;
  int4 v = (int4)(i, 0, 1, -i) && (int4)(1, 1, 0, 1);
  out[i] = acc + 1000 * k + 10000 * in_range(i - 2, 5) + v.x + 2 * v.y + 4 * v.z + 8 * v.w;
}

// For the solver: a left operand that is itself `&&`, whose outcome decides whether `c == 7`
// runs at all.
__kernel void nested(__global int* out, int a, int b, int c) {
  out[0] = ((a > 3 && b < a) || c == 7) ? 1 : 0;
}

// Constant expressions have no run-time branch (and a counter in them would not compile).
__kernel void folded(__global int* out) {
  __constant int both = 2 > 1 && 3 > 2;
  __constant int either = 2 < 1 || 3 > 2 ? 5 : 6;
  out[0] = both + either;
}
