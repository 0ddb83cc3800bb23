// Known coverage: with global 8, local 4 and n = 6, work-items 6 and 7 return at once; item 0
// runs the loop 0 times, item 1 once, items 2..5 more than once, and items 4 and 5 return from
// inside the loop (at j == 3), which must still record the loop's boundary class.
__kernel void early(__global uint* out, uint n) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  uint s = 0;
  for (uint j = 0; j < i; j++) {
    if (j == 3) return;
    s += j;
  }
  out[i] = s;
}
