//! `cltrap export CAP ID --python DIR`: the same standalone reproducer as
//! [`super::reproducer_c`], as a pyopencl script (`python3 repro.py [PLATFORM [DEVICE]]`),
//! for users whose application is Python. It reads the same data files and follows the same
//! [`Plan`], so both variants restore exactly the same objects and give the same verdict
//! (exit status 0 match, 1 mismatch with the first differing element, 2 could not run).

use super::plan::{plan, write_data, MemObject, Plan, PlanArg};
use super::{write_file, ExportError};
use cltrap_capture::Capture;
use std::fmt::Write;
use std::path::Path;

/// A Rust string as a Python string literal (JSON's escapes are valid Python). Every
/// string of a capture reaches generated Python code only through this or [`py_doc`].
fn py_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `s` safe inside a `"""` docstring: backslashes and quotes escaped, control characters
/// (a newline too) written as escapes.
fn py_doc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            c if c.is_control() => o.push_str(&format!("\\x{:02x}", c as u32 & 0xff)),
            c => o.push(c),
        }
    }
    o
}

fn py_tuple(v: &[u64]) -> String {
    let items: Vec<String> = v.iter().map(u64::to_string).collect();
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

const PRELUDE: &str = r#"import os
import struct
import sys
import warnings

try:
    import numpy as np
    import pyopencl as cl
except ImportError as e:
    print("repro: cannot run without numpy and pyopencl (pip install pyopencl): %s" % e, file=sys.stderr)
    sys.exit(2)

# pyopencl >= 2024 names the image constructor create_image; older releases only have Image.
make_image = getattr(cl, "create_image", cl.Image)
HERE = os.environ.get("REPRO_DATA") or os.path.dirname(os.path.abspath(__file__))


def load(name, size=None):
    path = os.path.join(HERE, name)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        print("repro: cannot open %s: %s" % (path, e), file=sys.stderr)
        sys.exit(2)
    if size is not None and len(data) != size:
        print("repro: %s holds %d bytes, expected %d" % (path, len(data), size), file=sys.stderr)
        sys.exit(2)
    return np.frombuffer(data, dtype=np.uint8).copy()


def text(name):
    return bytes(load(name)).decode("utf-8", "replace")


def choose(items, want, name_of):
    if not want:
        return items[0] if items else None
    if want.isdigit():
        i = int(want)
        return items[i] if i < len(items) else None
    for item in items:
        if want in name_of(item):
            return item
    return None


def element_text(b, kind):
    b = bytes(b)
    if kind == "f" and len(b) == 4:
        return repr(struct.unpack("<f", b)[0])
    if kind == "f" and len(b) == 8:
        return repr(struct.unpack("<d", b)[0])
    if kind in "iu" and len(b) <= 8:
        return str(int.from_bytes(b, "little", signed=(kind == "i")))
    return "0x" + b.hex()


def compare(label, got, want, element, kind):
    diff = np.nonzero(got != want)[0]
    if len(diff) == 0:
        print("ok %s (%d bytes)" % (label, len(want)))
        return 0
    i = int(diff[0])
    e = i // element
    at = e * element
    print("MISMATCH %s: first difference at element %d (byte %d): expected %s, got %s"
          % (label, e, i, element_text(want[at:at + element], kind),
             element_text(got[at:at + element], kind)))
    return 1


def fail(what, err):
    print("repro: %s failed: %s" % (what, err), file=sys.stderr)
    sys.exit(2)
"#;

/// The generated `repro.py` for `plan`.
pub fn repro_py(plan: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "#!/usr/bin/env python3\n\"\"\"Standalone reproducer of launch {} (kernel {}) captured by cltrap on {}.\n\n    python3 repro.py [PLATFORM [DEVICE]]\n\nPLATFORM and DEVICE (or $REPRO_PLATFORM, $REPRO_DEVICE) are an index or part of a name.\nExit status: 0 every output matches the recording, 1 a mismatch, 2 could not run.\n\"\"\"",
        plan.id,
        py_doc(&plan.kernel),
        py_doc(&plan.captured_on)
    );
    o.push_str(PRELUDE);
    o.push_str(
        r#"

def main():
    want_platform = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("REPRO_PLATFORM")
    want_device = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("REPRO_DEVICE")
    platform = choose(cl.get_platforms(), want_platform, lambda p: p.name)
    if platform is None:
        fail("choosing a platform", "none matches %r" % want_platform)
    device = choose(platform.get_devices(), want_device, lambda d: d.name)
    if device is None:
        fail("choosing a device", "none matches %r" % want_device)
"#,
    );
    let _ = writeln!(
        o,
        "    print({} + \" on %s (%s)\" % (device.name, platform.name))",
        py_string(&format!("launch {} ({})", plan.id, plan.kernel))
    );
    for n in &plan.notes {
        let _ = writeln!(o, "    print({})", py_string(&format!("note: {n}")));
    }
    o.push_str("    ctx = cl.Context([device])\n    q = cl.CommandQueue(ctx)\n    try:\n");
    if plan.units.is_empty() {
        let _ = writeln!(
            o,
            "        prog = cl.Program(ctx, text(\"program.cl\")).build(options={})",
            py_string(&plan.options)
        );
    } else {
        // clCompileProgram of every unit with its headers, then clLinkProgram.
        // pyopencl warns that compiling bypasses its binary cache: true, and harmless here.
        o.push_str("        warnings.filterwarnings(\"ignore\", message=\"Pre-build attribute access\")\n        units = []\n");
        for (i, u) in plan.units.iter().enumerate() {
            let headers: Vec<String> = u
                .headers
                .iter()
                .enumerate()
                .map(|(j, (name, _))| {
                    format!(
                        "({}, cl.Program(ctx, text(\"unit{i}.header{j}.h\")))",
                        py_string(name)
                    )
                })
                .collect();
            let _ = writeln!(
                o,
                "        units.append(cl.Program(ctx, text(\"unit{i}.cl\")).compile(options={}, headers=[{}]))",
                py_string(&u.options),
                headers.join(", ")
            );
        }
        let _ = writeln!(
            o,
            "        prog = cl.link_program(ctx, units, options={})",
            py_string(&plan.options)
        );
    }
    let _ = writeln!(
        o,
        "    except cl.Error as e:\n        fail(\"building the program\", e)\n    k = cl.Kernel(prog, {})\n    mem = {{}}\n    regions = {{}}",
        py_string(&plan.kernel)
    );
    for obj in &plan.objects {
        match obj {
            MemObject::Buffer { id, flags, size } => {
                let _ = writeln!(
                    o,
                    "    mem[{id}] = cl.Buffer(ctx, {}, size={})",
                    *flags,
                    (*size).max(1)
                );
                if *size > 0 {
                    let _ = writeln!(
                        o,
                        "    cl.enqueue_copy(q, mem[{id}], load(\"mem{id}.bin\", {size}), is_blocking=True)"
                    );
                }
            }
            MemObject::SubBuffer {
                id,
                parent,
                origin,
                size,
                flags,
            } => {
                let _ = writeln!(
                    o,
                    "    mem[{id}] = mem[{parent}].get_sub_region({origin}, {size}, {})",
                    *flags
                );
            }
            MemObject::Image { id, flags, image } => {
                let (w, h, d) = crate::executor::image_region(image);
                let (shape, is_array) = match image.image_type {
                    0x10F1 => (vec![w, h], false),
                    0x10F2 => (vec![w, h, d], false),
                    0x10F3 => (vec![w, h, d], true),
                    0x10F5 => (vec![w, h], true),
                    _ => (vec![w], false),
                };
                let size = crate::executor::image_bytes(image);
                let _ = writeln!(
                    o,
                    "    regions[{id}] = {}\n    mem[{id}] = make_image(ctx, {}, cl.ImageFormat({}, {}), shape=regions[{id}], is_array={})\n    cl.enqueue_copy(q, mem[{id}], load(\"mem{id}.bin\", {size}), origin={}, region=regions[{id}], is_blocking=True)",
                    py_tuple(&shape),
                    *flags,
                    image.channel_order,
                    image.channel_data_type,
                    if is_array { "True" } else { "False" },
                    py_tuple(&vec![0; shape.len()]),
                );
            }
        }
    }
    for (i, a) in plan.args.iter().enumerate() {
        let value = match a {
            PlanArg::Bytes(b) => format!(
                "np.frombuffer(bytes.fromhex(\"{}\"), dtype=np.uint8)",
                cltrap_capture::hex::encode(b)
            ),
            PlanArg::Local(n) => format!("cl.LocalMemory({n})"),
            PlanArg::Null => "None".into(),
            PlanArg::Mem(m) => format!("mem[{m}]"),
            PlanArg::Sampler {
                normalized,
                addressing,
                filter,
            } => format!(
                "cl.Sampler(ctx, {}, {addressing}, {filter})",
                if *normalized { "True" } else { "False" }
            ),
        };
        let _ = writeln!(o, "    k.set_arg({i}, {value})");
    }
    let local = plan
        .local_size
        .as_ref()
        .map(|l| py_tuple(l))
        .unwrap_or_else(|| "None".into());
    let offset = plan
        .global_offset
        .as_ref()
        .map(|l| py_tuple(l))
        .unwrap_or_else(|| "None".into());
    let _ = writeln!(
        o,
        "    try:\n        cl.enqueue_nd_range_kernel(q, k, {}, {local}, global_work_offset={offset})\n        q.finish()\n    except cl.Error as e:\n        fail(\"running the kernel\", e)\n    mismatches = 0",
        py_tuple(&plan.global_size)
    );
    for (c, _) in &plan.checks {
        let id = c.mem;
        let is_image = plan
            .objects
            .iter()
            .any(|ob| matches!(ob, MemObject::Image { id: x, .. } if *x == id));
        let _ = writeln!(o, "    got = np.empty({}, dtype=np.uint8)", c.size);
        if is_image {
            let _ = writeln!(
                o,
                "    cl.enqueue_copy(q, got, mem[{id}], origin=tuple(0 for _ in regions[{id}]), region=regions[{id}], is_blocking=True)"
            );
        } else {
            let _ = writeln!(
                o,
                "    cl.enqueue_copy(q, got, mem[{id}], is_blocking=True)"
            );
        }
        let _ = writeln!(
            o,
            "    mismatches += compare({}, got, load(\"{}\", {}), {}, \"{}\")",
            py_string(&c.label),
            c.file,
            c.size,
            c.element,
            c.kind.letter()
        );
    }
    for u in &plan.unchecked {
        let _ = writeln!(o, "    print({})", py_string(&format!("not compared: {u}")));
    }
    o.push_str(
        r#"    if mismatches:
        print("MISMATCH: %d output(s) differ from the recording" % mismatches)
        return 1
    print("ok: every output matches the recording")
    return 0


if __name__ == "__main__":
    try:
        status = main()
    except Exception as e:  # anything unforeseen: could not run, not a mismatch
        print("repro: could not run: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        status = 2
    sys.exit(status)
"#,
    );
    o
}

/// `cltrap export CAP ID --python DIR`: writes `repro.py` and the data files.
pub fn export(capture: &Capture, id: u64, dir: &Path) -> Result<Plan, ExportError> {
    let plan = plan(capture, id)?;
    write_data(&plan, dir)?;
    write_file(dir, "repro.py", repro_py(&plan).as_bytes())?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals() {
        assert_eq!(py_tuple(&[4]), "(4,)");
        assert_eq!(py_tuple(&[4, 2]), "(4, 2)");
        assert_eq!(py_string("a\"b\n"), "\"a\\\"b\\n\"");
        assert_eq!(py_doc("a\"\"\"b\\\n"), "a\\\"\\\"\\\"b\\\\\\x0a");
    }
}
