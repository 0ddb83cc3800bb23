//! OpenCL C front-end and instrumentation passes (work in progress).
