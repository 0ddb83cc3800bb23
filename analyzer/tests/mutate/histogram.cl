// 64 bins of v >> 2 over n bytes (255 skipped), per-group bins in local memory. PoCL 3.1
// cannot load the work-group function of this kernel's schema with the dimension-swap,
// compound-assignment and condition mutants in it (undefined symbol `_num_groups_y`) and
// aborts the process running it: the campaign must notice and fall back to one compile per
// mutant for the program.
__kernel void histogram(__global const uchar *data, int n, __global uint *bins) {
    __local uint local_bins[64];
    int lid = get_local_id(0);
    int lsize = get_local_size(0);
    for (int i = lid; i < 64; i += lsize)
        local_bins[i] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
        uchar v = data[i];
        if (v != 255)
            atomic_inc(&local_bins[(v >> 2) & 63]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = lid; i < 64; i += lsize)
        if (local_bins[i] > 0)
            atomic_add(&bins[i], local_bins[i]);
}
