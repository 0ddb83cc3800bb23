// Barrier divergence through a loop trip count: in group 1, local ids 0..3 arrive 0..3 times.
__kernel void diverge(__global uint* out) {
  size_t l = get_local_id(0);
  uint trips = get_group_id(0) == 1 ? (uint)l : 1u;
  for (uint k = 0; k < trips; k++) {
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[get_global_id(0)] = trips;
}
