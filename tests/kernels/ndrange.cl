// Index-space shapes: 1-D, 2-D and 3-D ranges with global offsets, with and without a local
// size, and a single work-item task. Each work-item records its ids so the host can check them.

__kernel void ids_1d(__global int *out) {
    size_t g = get_global_id(0);
    size_t slot = g - get_global_offset(0);
    out[slot] = (int)(g * 10);
}

__kernel void ids_2d(__global int *out, __global int *groups) {
    size_t x = get_global_id(0), y = get_global_id(1);
    size_t w = get_global_size(0);
    size_t slot = (y - get_global_offset(1)) * w + (x - get_global_offset(0));
    out[slot] = (int)(x + 1000 * y);
    groups[slot] = (int)(get_group_id(0) + 100 * get_group_id(1) + 10000 * get_local_id(0) +
                         1000000 * get_local_id(1));
}

__kernel void ids_3d(__global int *out) {
    size_t x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    size_t w = get_global_size(0), h = get_global_size(1);
    size_t slot = ((z - get_global_offset(2)) * h + (y - get_global_offset(1))) * w +
                  (x - get_global_offset(0));
    out[slot] = (int)(x + 100 * y + 10000 * z);
}

__kernel void task_sum(__global const int *in, __global int *out, int n) {
    int s = 0;
    for (int i = 0; i < n; i++)
        s += in[i] * (i + 1);
    out[0] = s;
}

// printf from a kernel: its output belongs to the application's stdout, exactly once.
__kernel void say(int x, float y) {
    printf("kernel says x=%d y=%.2f\n", x, y);
}
