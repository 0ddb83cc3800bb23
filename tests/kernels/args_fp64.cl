// Double-precision by-value arguments (built only where the device has fp64).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void doubles(__global double *out, double d, double2 d2) {
    size_t g = get_global_id(0);
    out[g * 3 + 0] = d * 2.0;
    out[g * 3 + 1] = d2.x;
    out[g * 3 + 2] = d2.y + (double)g;
}
