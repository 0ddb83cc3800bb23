// Loops under `#pragma unroll` and `opencl_unroll_hint`: libclang shows them as unexposed
// attributed statements; the counter block must open before the pragma's line.
__kernel void unrolled(__global int* o, int n) {
  int s = 0;
  #pragma unroll 4
  for (int i = 0; i < n; i++) { s += i; }
  __attribute__((opencl_unroll_hint(2)))
  for (int j = 0; j < n; j++) { if (j > 2) s -= j; }
  o[0] = s;
}
