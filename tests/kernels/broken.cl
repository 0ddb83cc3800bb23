// Deliberately invalid OpenCL C: the fixture expects CL_BUILD_PROGRAM_FAILURE and a build log.

__kernel void broken(__global int *out) {
    out[get_global_id(0)] = undeclared_variable +;
}
