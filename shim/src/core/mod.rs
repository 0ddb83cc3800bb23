//! The interception core: one function per hooked entry point, taking the "next" dispatch
//! table of whichever door the call came through (`crate::exports` or `crate::layer`).
//! Nothing here knows about doors.
//!
//! Every function forwards the application's call exactly once, with the application's
//! arguments, outside any panic guard, and does its own work before/after it inside
//! [`crate::door::quietly`]. Queries the shim makes for itself go through the same `next`
//! table, so they are never mistaken for application calls.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

mod args;
mod callback;
mod contents;
mod context;
mod counts;
mod device;
mod digest;
mod extension;
mod flight;
mod guard;
mod held;
mod info;
mod inplace;
mod inqueue;
mod kernel;
mod known;
mod landed;
mod launch;
mod lifetime;
mod mem;
mod pinned;
mod plan;
mod prepare;
mod program;
mod queue_ref;
mod readahead;
mod record;
mod refcount;
mod room;
mod spool_lanes;
mod stats;
mod sync;
mod track;
mod unwritten;
mod writes;

pub(crate) use callback::clSetEventCallback;
pub(crate) use context::{
    clCreateCommandQueue, clCreateCommandQueueWithProperties, clCreateContext,
    clCreateContextFromType, clReleaseCommandQueue, clRetainCommandQueue,
};
// The swap asks the same questions about the application's queue as the launch hook: one cache.
pub(crate) use device::queue_facts;
pub(crate) use extension::{
    clGetExtensionFunctionAddress, clGetExtensionFunctionAddressForPlatform,
};
pub(crate) use flight::watch_forks;
pub(crate) use guard::clEnqueueBarrierWithWaitList;
pub(crate) use kernel::describe as describe_kernel;
pub(crate) use kernel::{
    clCloneKernel, clCreateKernel, clCreateKernelsInProgram, clGetKernelArgInfo, clSetKernelArg,
    clSetKernelArgSVMPointer,
};
pub(crate) use launch::{clEnqueueNDRangeKernel, clEnqueueTask};
pub(crate) use lifetime::{
    clReleaseContext, clReleaseKernel, clReleaseMemObject, clReleaseProgram, clRetainContext,
    clRetainKernel, clRetainMemObject, clRetainProgram,
};
pub(crate) use stats::enable_timing;
pub(crate) use sync::{
    clEnqueueReadBuffer, clEnqueueReadBufferRect, clEnqueueReadImage, clFinish, clWaitForEvents,
};
// What the swap needs of the core: the argument tables, the info-query helpers and what the
// driver says about a kernel.
pub(crate) use info::{array as info_array, string as info_string, value as info_value};
pub(crate) use mem::{
    clCreateBuffer, clCreateBufferWithProperties, clCreateImage, clCreateImage2D, clCreateImage3D,
    clCreateImageWithProperties, clCreateSubBuffer, clCreateUserEvent, clSetUserEventStatus,
};
pub(crate) use program::{
    clBuildProgram, clCompileProgram, clCreateProgramWithBinary, clCreateProgramWithBuiltInKernels,
    clCreateProgramWithIL, clCreateProgramWithSource, clGetProgramBuildInfo, clLinkProgram,
};
pub(crate) use track::{lock, tables, ArgValue, Kernel};
pub(crate) use writes::{
    clEnqueueCopyBuffer, clEnqueueCopyBufferRect, clEnqueueCopyBufferToImage, clEnqueueCopyImage,
    clEnqueueCopyImageToBuffer, clEnqueueFillBuffer, clEnqueueFillImage, clEnqueueMapBuffer,
    clEnqueueMapImage, clEnqueueMigrateMemObjects, clEnqueueNativeKernel, clEnqueueUnmapMemObject,
    clEnqueueWriteBuffer, clEnqueueWriteBufferRect, clEnqueueWriteImage,
};

// The info hooks that leave the shim's own references out of the counts.
pub(crate) use counts::{
    clGetCommandQueueInfo, clGetContextInfo, clGetEventInfo, clGetKernelInfo, clGetMemObjectInfo,
    clGetProgramInfo, clGetSamplerInfo,
};
