__kernel void k(__global float *in, __global float *out) {
  if (1) <% } in[0] = 1.0f; %>
