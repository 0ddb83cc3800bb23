/* A launch of 2^20 work-items (local 64: 16384 work-groups), for reduced fuzzing. Only
 * work-group BAD_GROUP (a build option) writes past the end of `out`, and only when
 * mode > 1: a subset of groups that leaves it out runs that input cleanly. The seed's data
 * is negative only in work-group NEGATIVE_GROUP, so the `v < 0` side is reached by that
 * group alone. */
__kernel void large(__global const int *data, __global int *out, int mode) {
    size_t g = get_global_id(0);
    int v = data[g];
    if (mode > 1) {
        if (get_group_id(0) == BAD_GROUP)
            out[get_global_size(0) + get_local_id(0)] = v;
        else
            out[g] = v * 2;
    } else if (v < 0) {
        out[g] = -v;
    } else {
        out[g] = v + 1;
    }
    if (g == get_global_size(0) - 1)
        out[g] = 7;
}
