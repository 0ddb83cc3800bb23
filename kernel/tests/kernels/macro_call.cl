// A helper whose only call is written inside a macro (pyopencl's Philox calls `gen_bits`
// this way): it cannot be given the counter argument, so it is left uninstrumented and the
// kernel and the other helpers are counted.
int gen_bits(int x) { if (x > 3) return x * 2; return x; }
int plain(int x) { if (x < 0) return -x; return x; }
#define GEN(x) gen_bits(x)
__kernel void macro_caller(__global int* o, int n) {
  int v = GEN(n) + plain(n);
  if (n > 1) v += 1;
  o[0] = v;
}
