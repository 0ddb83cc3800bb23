// Several buffer arguments with scalars between them, as image libraries pass them (pointer,
// step, offset): the `- 1` id mutant writes one element before the sixth argument's start,
// which the bounds check must name as that argument at a negative offset.
__kernel void rows(__global const int* src, int src_step, int src_offset,
                   __global const int* add, int rows,
                   __global int* dst, int dst_step) {
    int i = get_global_id(0);
    dst[i] = src[i] + add[i] + rows + src_step + src_offset + dst_step;
}
