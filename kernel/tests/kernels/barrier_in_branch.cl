// A barrier inside a branch that is uniform per work-group (legal): in group 1 every
// work-item reaches it, in every other group none does. Never a divergence.
__kernel void branch_barrier(__global uint* out, __local uint* tmp) {
  size_t l = get_local_id(0);
  tmp[l] = (uint)l;
  if (get_group_id(0) == 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tmp[(l + 1) % get_local_size(0)];
  }
}
