// Barrier divergence that PoCL can run: the barrier sits in a loop whose trip count differs
// between the work-items of group 1 (local ids 0..3 arrive 0, 1, 2 and 3 times: 6 arrivals
// for 4 work-items). Every other group arrives once per work-item: no divergence.
__kernel void diverge(__global uint* out) {
  size_t l = get_local_id(0);
  uint trips = get_group_id(0) == 1 ? (uint)l : 1u;
  for (uint k = 0; k < trips; k++) {
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[get_global_id(0)] = trips;
}
