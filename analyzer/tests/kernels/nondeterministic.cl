// Nondeterminism that PoCL's CPU device can show: work-items of concurrently running
// work-groups (PoCL runs groups on several threads) take tickets from a global atomic counter,
// so the order in which tickets are handed out differs from run to run.
__kernel void tickets(__global uint* counter, __global uint* order, uint spin) {
  uint x = (uint)get_global_id(0);
  for (uint k = 0; k < spin; k++) x = x * 1664525u + 1013904223u;
  uint t = atomic_inc(counter);
  order[t] = (uint)get_global_id(0) + (x & 0u);
}

// An intra-group race: a reduction in local memory relying on lock-step execution, without
// barriers between the steps. On a GPU, work-items of other warps may not have written their
// value yet. PoCL's CPU device runs each work-item of a group to its end before the next one
// starts (there is no barrier to stop at), so work-item 0 adds up local memory that the others
// have not written yet: whatever an earlier work-group or launch left there, which differs
// from run to run. So on PoCL this race shows up as nondeterminism.
__kernel void reduce_lockstep(__global const uint* in, __global uint* partial,
                              __local volatile uint* tmp) {
  size_t l = get_local_id(0);
  tmp[l] = in[get_global_id(0)];
  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
    if (l < s) tmp[l] += tmp[l + s];
  }
  if (l == 0) partial[get_group_id(0)] = tmp[0];
}
