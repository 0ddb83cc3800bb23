// A `#pragma unroll` between a loop header and its unbraced body loop, as in ViennaCL's
// generated GEMM: the brace that wraps the body must open before the pragma's line.
__kernel void unrolled_nest(__global int* o, int n) {
  int s = 0;
  for (int k = 0; k < n; k += 4) {
    #pragma unroll 4
    for (int kk = 0; kk < 4; kk++)
    #pragma unroll 4
    for (int mm = 0; mm < 4; mm++)
    {
      s += kk * mm + k;
    }
  }
  o[0] = s;
}
