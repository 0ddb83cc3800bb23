// Swaps neighbouring elements through local memory, two work-items per group, then
// prefetches the next group's pair into the same local array (dead for this group: local
// memory does not outlive it). Both barriers are needed. On PoCL with one thread, groups run
// one after the other on the same local memory, so without the first barrier work-item 0
// reads the value the previous group prefetched: exactly its own pair's value when groups
// run in order, a wrong one under any other schedule.
__kernel void swap_pairs(__global const int* in, __global int* out) {
    __local int tmp[2];
    size_t lid = get_local_id(0);
    size_t gid = get_global_id(0);
    tmp[lid] = in[gid];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[gid] = tmp[1 - lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[lid] = in[gid + 2];
}
