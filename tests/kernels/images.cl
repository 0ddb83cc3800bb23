// A 2-D image read through a sampler passed as an argument, written to a second image.

__kernel void brighten(__read_only image2d_t src, __write_only image2d_t dst, sampler_t s,
                       float gain) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    float4 v = read_imagef(src, s, p);
    // Neighbour to the left, clamped at the edge by the sampler's addressing mode.
    float4 left = read_imagef(src, s, p - (int2)(1, 0));
    write_imagef(dst, p, v * gain + left);
}
