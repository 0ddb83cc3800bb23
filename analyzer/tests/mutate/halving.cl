// Sums each group's values by halving, a loop with a barrier. Its condition replaced by true
// never ends (s stays 0 once it gets there) while every work-item keeps passing the barrier,
// so only a watchdog that breaks all of them in the same iteration can stop it.
__kernel void halving(__global const int* in, __global int* out) {
    __local int tmp[16];
    size_t lid = get_local_id(0);
    tmp[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = 8; s > 0; s >>= 1) {
        if (lid < s)
            tmp[lid] += tmp[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        out[get_group_id(0)] = tmp[0];
}
