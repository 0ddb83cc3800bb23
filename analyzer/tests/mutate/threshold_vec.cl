// A threshold as image libraries write it, with the element type `T` from the build options
// (`-D T=uchar4`): `(T)(0)` is then a vector literal, whose range libclang ends before its
// `)`. A mutant of the whole `?:` must still cover the `)`, or the schema does not compile.
__kernel void threshold_vec(__global const T* src, __global T* dst, T thresh, T max_val) {
    int i = get_global_id(0);
    T sdata = src[i];
    dst[i] = sdata > (thresh) ? (T)(max_val) : (T)(0);
}
