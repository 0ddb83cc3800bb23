// Barrier divergence (undefined behaviour): in group 1 only local ids 0 and 1 reach the
// barrier on line 7. PoCL hangs or computes garbage on such kernels, so tests evaluate counter
// buffers for it without running it; on devices that survive it, the map counts arrivals.
__kernel void diverge(__global uint* out) {
  size_t l = get_local_id(0);
  if (get_group_id(0) != 1 || l < 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[get_global_id(0)] = (uint)l;
}
