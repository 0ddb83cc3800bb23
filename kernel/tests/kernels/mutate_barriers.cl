// Barrier and fence mutants: a barrier inside a helper that two kernels call, a tree
// reduction with a barrier in its loop, and fences. Every index is masked into its buffer,
// and local memory is set before it is read, so that every barrier mutant computes the
// same values on every run (work-items of a group run one after the other between barriers
// on PoCL's CPU device).
void stage(__local int* tmp, size_t lid, int v) {
    tmp[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel void reduce_pairs(__global const int* in, __global int* out) {
    __local int tmp[8];
    size_t lid = get_local_id(0);
    size_t gid = get_global_id(0);
    tmp[lid & 7u] = -1;
    barrier(CLK_LOCAL_MEM_FENCE);
    stage(tmp, lid & 7u, in[gid & 31u]);
    for (uint s = 4; s > 0; s >>= 1) {
        if (lid < s)
            tmp[lid] += tmp[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    out[gid & 31u] = tmp[0] + tmp[lid & 7u];
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    write_mem_fence(CLK_LOCAL_MEM_FENCE);
    out[(gid + 32u) & 63u] = tmp[(lid + 1u) & 7u];
}

__kernel void rotate(__global const int* in, __global int* out) {
    __local int tmp[8];
    size_t lid = get_local_id(0);
    tmp[lid & 7u] = -1;
    barrier(CLK_LOCAL_MEM_FENCE);
    stage(tmp, lid & 7u, in[get_global_id(0) & 31u] * 3);
    read_mem_fence(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0) & 31u] = tmp[(lid + 3u) & 7u];
}
