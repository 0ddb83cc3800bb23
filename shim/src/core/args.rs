//! Arguments: what `clGetKernelArgInfo` says about each, and the record each value becomes
//! (scalar bytes, `__local` size, sampler properties, buffer/image facts). Memory-object facts
//! never change, so they are queried once per object.

use super::contents::Shape;
use super::info;
use super::track::{tables, ArgValue, MemFacts};
use crate::Next;
use cltrap_capture::{ArgInfo, ArgRecord, Content, ImageRecord};
use opencl_sys::*;

/// `clGetKernelArgInfo` for every argument (None: the driver has no argument info).
pub(super) fn arg_infos(next: &Next, kernel: cl_kernel) -> Option<Vec<ArgInfo>> {
    let f = next.clGetKernelArgInfo?;
    let g = next.clGetKernelInfo?;
    // SAFETY: standard info queries.
    let n = info::value::<cl_uint>(|s, p, r| unsafe { g(kernel, CL_KERNEL_NUM_ARGS, s, p, r) })?;
    (0..n)
        .map(|i| {
            let q = |param| move |s, p, r| unsafe { f(kernel, i, param, s, p, r) };
            let address = info::value::<cl_uint>(q(CL_KERNEL_ARG_ADDRESS_QUALIFIER))?;
            let access = info::value::<cl_uint>(q(CL_KERNEL_ARG_ACCESS_QUALIFIER))?;
            let type_name = info::string(q(CL_KERNEL_ARG_TYPE_NAME))?;
            let type_q = info::value::<cl_ulong>(q(CL_KERNEL_ARG_TYPE_QUALIFIER))?;
            let name = info::string(q(CL_KERNEL_ARG_NAME)).unwrap_or_default();
            let address_space = match address {
                CL_KERNEL_ARG_ADDRESS_GLOBAL => "global",
                CL_KERNEL_ARG_ADDRESS_LOCAL => "local",
                CL_KERNEL_ARG_ADDRESS_CONSTANT => "constant",
                _ => "private",
            };
            let mut quals = Vec::new();
            for (bit, word) in [
                (CL_KERNEL_ARG_TYPE_CONST, "const"),
                (CL_KERNEL_ARG_TYPE_RESTRICT, "restrict"),
                (CL_KERNEL_ARG_TYPE_VOLATILE, "volatile"),
                (CL_KERNEL_ARG_TYPE_PIPE, "pipe"),
            ] {
                if type_q & (bit as cl_ulong) != 0 {
                    quals.push(word);
                }
            }
            match access {
                CL_KERNEL_ARG_ACCESS_READ_ONLY => quals.push("read_only"),
                CL_KERNEL_ARG_ACCESS_WRITE_ONLY => quals.push("write_only"),
                CL_KERNEL_ARG_ACCESS_READ_WRITE => quals.push("read_write"),
                _ => {}
            }
            Some(ArgInfo {
                index: i,
                name: name.into(),
                type_name: type_name.into(),
                address_space: address_space.into(),
                qualifiers: quals.join(" ").into(),
            })
        })
        .collect()
}

use cltrap_capture::hex::encode as hex;

/// Turns one argument into its record, plus the memory object (and shape) to read, if any.
pub(super) fn classify(
    next: &Next,
    index: u32,
    info: Option<&ArgInfo>,
    value: Option<&ArgValue>,
    notes: &mut Vec<String>,
) -> (ArgRecord, Option<(usize, Shape)>) {
    let ai = info.cloned().unwrap_or_else(|| ArgInfo {
        index,
        ..ArgInfo::default()
    });
    let bytes = match value {
        None => return (ArgRecord::Unset { info: ai }, None),
        Some(ArgValue::Svm(p)) => {
            notes.push(format!("argument {index} is an SVM pointer"));
            return (
                ArgRecord::Svm {
                    info: ai,
                    pointer: *p as u64,
                },
                None,
            );
        }
        // clSetKernelArg(k, i, sizeof(cl_mem), NULL) on a memory argument: a NULL buffer.
        Some(ArgValue::Local(_)) if info.is_some() && ai.address_space != "local" => {
            return (ArgRecord::NullBuffer { info: ai }, None);
        }
        Some(ArgValue::Local(n)) => {
            return (
                ArgRecord::Local {
                    info: ai,
                    size: *n as u64,
                },
                None,
            )
        }
        Some(ArgValue::Bytes(b)) => b,
    };
    if ai.address_space == "local" {
        return (
            ArgRecord::Local {
                info: ai,
                size: bytes.len() as u64,
            },
            None,
        );
    }
    let handle = <[u8; std::mem::size_of::<usize>()]>::try_from(bytes.as_slice())
        .ok()
        .map(usize::from_ne_bytes);
    let type_name = ai.type_name.as_str();
    let sampler = type_name == "sampler_t";
    let memory = match info {
        Some(_) => {
            ai.address_space == "global"
                || ai.address_space == "constant"
                || type_name.starts_with("image")
                || ai.qualifiers.split(' ').any(|q| q == "pipe")
        }
        None => handle.is_some_and(|h| tables().is_mem(h)),
    };
    match handle {
        Some(h) if sampler && h != 0 => {
            if let Some(rec) = sampler_record(next, h as cl_sampler, ai.clone()) {
                return (rec, None);
            }
        }
        Some(0) if memory => return (ArgRecord::NullBuffer { info: ai }, None),
        Some(h) if memory => {
            if let Some(facts) = mem_facts(next, h) {
                let (rec, shape) = mem_record(h, facts, ai, notes);
                return (rec, shape.map(|s| (h, s)));
            }
        }
        _ => {}
    }
    (
        ArgRecord::Scalar {
            info: ai,
            bytes: hex(bytes),
        },
        None,
    )
}

fn sampler_record(next: &Next, s: cl_sampler, info: ArgInfo) -> Option<ArgRecord> {
    let f = next.clGetSamplerInfo?;
    let q = |param| move |sz, p, r| unsafe { f(s, param, sz, p, r) };
    Some(ArgRecord::Sampler {
        info,
        normalized_coords: info::value::<cl_bool>(q(CL_SAMPLER_NORMALIZED_COORDS))? != 0,
        addressing_mode: info::value::<cl_uint>(q(CL_SAMPLER_ADDRESSING_MODE))?,
        filter_mode: info::value::<cl_uint>(q(CL_SAMPLER_FILTER_MODE))?,
    })
}

fn empty() -> Content {
    Content::Missing {
        note: String::new(),
    }
}

fn mem_facts(next: &Next, h: usize) -> Option<MemFacts> {
    if let Some(f) = tables().mem_facts(h) {
        return Some(f);
    }
    // Released by the application: the handle may name freed memory. The enqueue is
    // forwarded as it is and the driver answers it.
    if tables().mem_released(h) {
        return None;
    }
    let f = next.clGetMemObjectInfo?;
    let mem = h as cl_mem;
    // SAFETY: standard info queries on a handle the application passed as a kernel argument.
    let q = |param| move |sz, p, r| unsafe { f(mem, param, sz, p, r) };
    let kind = info::value::<cl_mem_object_type>(q(CL_MEM_TYPE))?;
    let flags = info::value::<cl_mem_flags>(q(CL_MEM_FLAGS)).unwrap_or(0);
    let size = info::value::<usize>(q(CL_MEM_SIZE)).unwrap_or(0);
    let mut facts = MemFacts {
        kind,
        flags,
        size,
        parent: None,
        image: None,
    };
    if kind == CL_MEM_OBJECT_BUFFER {
        let parent = info::value::<usize>(q(CL_MEM_ASSOCIATED_MEMOBJECT)).unwrap_or(0);
        if parent != 0 {
            facts.parent = Some((parent, info::value::<usize>(q(CL_MEM_OFFSET)).unwrap_or(0)));
        }
    } else if kind != CL_MEM_OBJECT_PIPE {
        let g = next.clGetImageInfo?;
        // SAFETY: as above.
        let qi = |param| move |sz, p, r| unsafe { g(mem, param, sz, p, r) };
        let format = info::value::<[cl_uint; 2]>(qi(CL_IMAGE_FORMAT))?;
        let get = |param| info::value::<usize>(qi(param)).unwrap_or(0);
        let (w, ht, d, arr, elem) = (
            get(CL_IMAGE_WIDTH),
            get(CL_IMAGE_HEIGHT),
            get(CL_IMAGE_DEPTH),
            get(CL_IMAGE_ARRAY_SIZE),
            get(CL_IMAGE_ELEMENT_SIZE),
        );
        let region = match kind {
            CL_MEM_OBJECT_IMAGE1D_ARRAY => [w, arr, 1],
            CL_MEM_OBJECT_IMAGE2D => [w, ht, 1],
            CL_MEM_OBJECT_IMAGE2D_ARRAY => [w, ht, arr],
            CL_MEM_OBJECT_IMAGE3D => [w, ht, d],
            _ => [w, 1, 1],
        }
        .map(|v| v.max(1));
        let image = ImageRecord {
            image_type: kind,
            channel_order: format[0],
            channel_data_type: format[1],
            width: w as u64,
            height: ht as u64,
            depth: d as u64,
            array_size: arr as u64,
            element_size: elem as u64,
        };
        facts.image = Some((image, region, elem * region.iter().product::<usize>()));
    }
    tables().set_mem_facts(h, facts.clone());
    Some(facts)
}

/// The record of a memory argument whose facts are known (`info` moved in, not copied).
fn mem_record(
    h: usize,
    f: MemFacts,
    info: ArgInfo,
    notes: &mut Vec<String>,
) -> (ArgRecord, Option<Shape>) {
    let id = tables().mem_id(h);
    let (flags, size) = (f.flags, f.size as u64);
    match (f.kind, f.image) {
        (CL_MEM_OBJECT_BUFFER, _) => {
            let sub_of = f
                .parent
                .map(|(p, offset)| (tables().mem_id(p), offset as u64));
            let rec = ArgRecord::Buffer {
                info,
                mem: id,
                flags,
                size,
                sub_of,
                before: empty(),
                after: empty(),
            };
            (rec, Some(Shape::Buffer { size: f.size }))
        }
        (_, Some((image, region, bytes))) => {
            let rec = ArgRecord::Image {
                info,
                mem: id,
                flags,
                image,
                before: empty(),
                after: empty(),
            };
            (rec, Some(Shape::Image { region, bytes }))
        }
        _ => {
            notes.push(format!("argument {} is a pipe", info.index));
            let note = Content::Missing {
                note: "pipes are not read".into(),
            };
            let rec = ArgRecord::Buffer {
                info,
                mem: id,
                flags,
                size,
                sub_of: None,
                before: note.clone(),
                after: note,
            };
            (rec, None)
        }
    }
}
