// `goto` out of a loop: work-item i leaves the loop in its (i+1)-th iteration, so with three
// work-items the loop ran once (item 0) and more than once (items 1, 2), never zero times, and
// its condition was never false.
__kernel void jump(__global uint* out) {
  uint i = (uint)get_global_id(0);
  uint s = 0;
  for (uint j = 0; j < 10; j++) {
    if (j == i) goto done;
    s += j;
  }
done:
  out[i] = s;
}
