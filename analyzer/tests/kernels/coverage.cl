// Kernels with exactly known coverage.

// Whole work-groups return (group >= limit), single work-items return (i >= n), a loop that
// runs 0, 1 or 2 times depending on i % 3, and a ?: whose sides depend on the loop.
__kernel void known(__global int* out, uint n, uint limit) {
  size_t i = get_global_id(0);
  if (get_group_id(0) >= limit) return;
  if (i >= n) return;
  int s = 0;
  for (int j = 0; j < (int)(i % 3); j++) s += j + 1;
  out[i] = s > 1 ? s : -1;
}

// A barrier inside a branch that only some work-items of a group take: barrier divergence
// (undefined behaviour) when 0 < k < local size.
__kernel void diverge(__global uint* out, uint k) {
  size_t l = get_local_id(0);
  uint v = (uint)l;
  if (l < k) {
    barrier(CLK_GLOBAL_MEM_FENCE);
    v += 100;
  }
  out[get_global_id(0)] = v;
}
