// First of several programs in one application: two kernels in one program.

__kernel void add_one(__global int *data) {
    size_t g = get_global_id(0);
    data[g] += 1;
}

__kernel void times_two(__global int *data) {
    size_t g = get_global_id(0);
    data[g] *= 2;
}
