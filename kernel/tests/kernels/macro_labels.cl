// A case label and a whole loop written by macros: modelled, listed as skipped, never edited.
#define CASE(v) case v:
#define FOREVER for (;;)
__kernel void k(__global int* o, int n) {
  switch (n) { CASE(1) o[0] = 1; break; case 2: o[0] = 2; }
  int i = 0;
  FOREVER { if (++i > n) break; }
  o[1] = i;
}
