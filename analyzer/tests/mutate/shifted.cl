// Copies through a pointer moved far away and back: `in + base` turned into `in - base`
// (or `- base` into `+ base`) reads terabytes outside the buffer and crashes the device
// process. `* 1` turned into `/ 1` is equivalent.
__kernel void shifted(__global const int* in, __global int* out, long base) {
    size_t i = get_global_id(0);
    __global const int* p = in + base;
    out[i] = p[(long)i - base] * 1;
}
