// Loops with constant bounds (literals, a macro, under `#pragma unroll`, one that may
// `break`) next to one whose bound is an argument: only the first have fixed trip counts.
#define N 16
__kernel void fixed(__global int* o, int n) {
  int s = 0;
  for (int k = 0; k < 16; k++) s += k;
  for (int k = 0; k < N; ++k) s += k;
  #pragma unroll
  for (int k = 0; k < 4; k++) { s += k; }
  for (int k = 0; k < 1; k++) s += k;
  for (int k = 0; k < 8; k++) { if (k == n) break; s += k; }
  for (int k = 0; k < n; k++) s += k;
  o[get_global_id(0)] = s;
}
