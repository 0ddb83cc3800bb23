//! The launch-storm case of [`crate::delta::record_patch`], written straight to JSON text.
//!
//! Why: in a storm, or a launch + `clFinish` loop, a launch differs from its base only in
//! `seq`, scalar bytes and the digests of buffer contents; building that patch as a
//! `serde_json::Value` tree, serializing it and dropping it cost about 15 000 instructions
//! per launch, half of what writing a launch costs at the application's `clFinish`. This
//! writes the same bytes serde_json writes for [`crate::delta::record_patch`]'s value (keys in
//! the order of its maps: sorted), and declines (returns false, writing nothing) for any
//! other change, which then goes through the general code.

use crate::model::{ArgRecord, Content, LaunchRecord};

/// Appends the patch turning `base` into `new` to `out` when the change is only `seq`,
/// scalar bytes, the memory objects (with their flags and sizes) of buffer arguments
/// (ping-pong) and contents (of the same
/// kind: blobs, or digests by one function) of otherwise unchanged arguments; false (nothing appended) otherwise.
pub fn write_storm_patch(base: &LaunchRecord, new: &LaunchRecord, out: &mut Vec<u8>) -> bool {
    // Destructured without `..`: a field added to LaunchRecord must be considered here.
    let LaunchRecord {
        id: _,
        seq,
        kernel,
        program,
        api,
        work_dim,
        global_offset,
        global_size,
        local_size,
        args,
        device,
        queue_properties,
        launch_site,
        thread,
        status,
        not_replayable,
    } = new;
    let same = base.kernel == *kernel
        && base.program == *program
        && base.api == *api
        && base.work_dim == *work_dim
        && base.global_offset == *global_offset
        && base.global_size == *global_size
        && base.local_size == *local_size
        && base.device == *device
        && base.queue_properties == *queue_properties
        && base.launch_site == *launch_site
        && base.thread == *thread
        && base.status == *status
        && base.not_replayable == *not_replayable
        && base.args.len() == args.len();
    if !same {
        return false;
    }
    let start = out.len();
    out.push(b'{');
    // Changed arguments, keyed as the patch keys them: decimal indices, in text order
    // (numeric order up to 10 arguments).
    // Up to 10 arguments their numeric order is their text order: no list to make.
    let mut sorted: Vec<usize> = Vec::new();
    if args.len() > 10 {
        sorted = (0..args.len()).collect();
        sorted.sort_by_key(|i| i.to_string());
    }
    let order = (0..args.len()).map(|n| sorted.get(n).copied().unwrap_or(n));
    let mut any = false;
    for i in order {
        let (old, new) = (&base.args[i], &args[i]);
        if old == new {
            continue;
        }
        out.extend_from_slice(if any { b",\"" } else { b"\"args\":{\"" });
        any = true;
        push_u64(out, i as u64);
        out.extend_from_slice(b"\":");
        if !arg_patch(old, new, out) {
            out.truncate(start);
            return false;
        }
    }
    if any {
        out.push(b'}');
    }
    if base.seq != *seq {
        if any {
            out.push(b',');
        }
        out.extend_from_slice(b"\"seq\":");
        push_u64(out, *seq);
    }
    out.push(b'}');
    true
}

/// `n` in decimal, as JSON writes it.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// `s` as a JSON string (callers checked it needs no escapes: [`plain`]).
fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

/// The patch of one changed argument of a storm (see [`write_storm_patch`]).
fn arg_patch(old: &ArgRecord, new: &ArgRecord, out: &mut Vec<u8>) -> bool {
    use ArgRecord::{Buffer, Scalar};
    match (old, new) {
        (Scalar { info: i, bytes: _ }, Scalar { info: j, bytes }) if i == j && plain(bytes) => {
            out.extend_from_slice(b"{\"bytes\":");
            push_str(out, bytes);
            out.push(b'}');
            true
        }
        (Buffer { .. }, Buffer { .. }) => {
            let Some((contents, numbers)) = crate::delta::buffer_contents(old, new) else {
                return false;
            };
            out.push(b'{');
            let mut first = true;
            for (name, old, new) in contents {
                if old == new {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                push_str(out, name);
                out.push(b':');
                if !content_patch(old, new, out) {
                    return false;
                }
            }
            // After "after" and "before": the patch's keys are sorted.
            for (name, n) in numbers.into_iter().flatten() {
                if !first {
                    out.push(b',');
                }
                first = false;
                push_str(out, name);
                out.push(b':');
                push_u64(out, n);
            }
            out.push(b'}');
            true
        }
        _ => false,
    }
}

/// A changed content of the same kind, blob or digest by one function: its new digest and
/// size.
fn content_patch(old: &Content, new: &Content, out: &mut Vec<u8>) -> bool {
    let Some(((h, s), (hash, size))) = crate::delta::same_kind(old, new) else {
        return false;
    };
    if !plain(hash) {
        return false;
    }
    out.push(b'{');
    if h != hash {
        out.extend_from_slice(b"\"hash\":");
        push_str(out, hash);
    }
    if s != size {
        if h != hash {
            out.push(b',');
        }
        out.extend_from_slice(b"\"size\":");
        push_u64(out, size);
    }
    out.push(b'}');
    true
}

/// Text JSON writes as it is (no escapes): hex digits and letters.
fn plain(s: &str) -> bool {
    // Every byte looked at (no early exit), which the compiler turns into vector compares:
    // this checks two digests per changed argument at every launch of a storm.
    s.bytes().fold(true, |ok, b| ok & b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DigestKind;
    use serde_json::json;

    fn record(seq: u64, scalar: &str, before: &str, after: &str, kind: &str) -> LaunchRecord {
        let arg = |i: u32, name: &str, c: &str| {
            json!({"kind":"buffer","index":i,"name":name,"type_name":"float*",
                "address_space":"global","qualifiers":"","mem":i,"flags":1,"size":256,
                "before":{"kind":kind,"hash":"a".repeat(64),"size":256},
                "after":{"kind":kind,"hash":c.repeat(64),"size":256}})
        };
        let mut args = vec![
            json!({"kind":"scalar","index":0,"name":"a","type_name":"float",
            "address_space":"private","qualifiers":"","bytes":scalar}),
        ];
        for i in 1..12u32 {
            args.push(arg(i, "x", if i % 5 == 0 { after } else { "b" }));
        }
        args[3]["before"]["hash"] = json!(before.repeat(64));
        serde_json::from_value(json!({"id":seq,"seq":seq,"kernel":"k","program":"p",
            "api":"nd_range","work_dim":1,"global_size":[64],"args":args,
            "device":{"platform":"x","name":"d","vendor":"v","driver_version":"1","version":"2"},
            "status":0}))
        .expect("a record")
    }

    #[test]
    fn storm_patches_are_the_bytes_of_the_general_patch() {
        let base = record(1, "00000000", "c", "d", "digest");
        let cases = [
            record(2, "0000803f", "e", "f", "digest"),
            record(2, "00000000", "c", "d", "digest"),
            record(1, "0000803f", "c", "d", "digest"),
            record(1, "00000000", "c", "d", "digest"),
            record(9, "00000000", "e", "d", "digest"),
        ];
        for new in &cases {
            let mut fast = Vec::new();
            assert!(write_storm_patch(&base, new, &mut fast));
            let general =
                serde_json::to_vec(&crate::delta::record_patch(&base, new).unwrap()).unwrap();
            assert_eq!(
                String::from_utf8(fast).unwrap(),
                String::from_utf8(general).unwrap()
            );
        }
        let mut size_changed = cases[0].clone();
        if let ArgRecord::Buffer { after, .. } = &mut size_changed.args[5] {
            *after = Content::Digest {
                hash: "f".repeat(64),
                size: 4,
                algo: DigestKind::Blake3,
            };
        }
        let mut fast = Vec::new();
        assert!(write_storm_patch(&base, &size_changed, &mut fast));
        let general =
            serde_json::to_vec(&crate::delta::record_patch(&base, &size_changed).unwrap()).unwrap();
        assert_eq!(fast, general);
        // Device-side digests (a GPU's launch + clFinish loop): the same patch, and it
        // applies back to the record with its digest kind kept.
        let on_device = |r: &LaunchRecord| {
            let mut r = r.clone();
            for a in &mut r.args {
                if let ArgRecord::Buffer { before, after, .. } = a {
                    for c in [before, after] {
                        if let Content::Digest { algo, .. } = c {
                            *algo = DigestKind::Dd128;
                        }
                    }
                }
            }
            r
        };
        let (dbase, dnew) = (on_device(&base), on_device(&cases[0]));
        let mut fast = Vec::new();
        assert!(write_storm_patch(&dbase, &dnew, &mut fast));
        let general = crate::delta::record_patch(&dbase, &dnew).unwrap();
        assert_eq!(fast, serde_json::to_vec(&general).unwrap());
        let mut back = serde_json::to_value(&dbase).unwrap();
        crate::delta::apply(&mut back, &general).unwrap();
        let mut got = serde_json::from_value::<LaunchRecord>(back).unwrap();
        got.id = dnew.id; // a delta line carries its own id
        assert_eq!(got, dnew);
        // A ping-pong loop (two buffers swapped between the same arguments at each launch):
        // the new objects are part of the patch, the same bytes as the JSON diff writes, and
        // it applies back (once with only the objects swapped, once with contents too).
        for new in [&cases[1], &cases[0]] {
            let mut swapped = new.clone();
            for (i, a) in swapped.args.iter_mut().enumerate() {
                if let ArgRecord::Buffer { mem, flags, .. } = a {
                    *mem = if i % 2 == 0 { 100 } else { 1_000_000_007 };
                    if i % 3 == 0 {
                        *flags = 33;
                    }
                }
            }
            let mut fast = Vec::new();
            assert!(write_storm_patch(&base, &swapped, &mut fast));
            let general = crate::delta::record_patch(&base, &swapped).unwrap();
            let mut as_json = crate::delta::diff(
                &serde_json::to_value(&base).unwrap(),
                &serde_json::to_value(&swapped).unwrap(),
            )
            .unwrap()
            .unwrap();
            as_json.as_object_mut().unwrap().remove("id"); // a delta line holds its id itself
            assert_eq!(general, as_json);
            assert_eq!(fast, serde_json::to_vec(&general).unwrap());
            assert!(String::from_utf8_lossy(&fast).contains("\"mem\":1000000007"));
            let mut back = serde_json::to_value(&base).unwrap();
            crate::delta::apply(&mut back, &general).unwrap();
            let mut got = serde_json::from_value::<LaunchRecord>(back).unwrap();
            got.id = swapped.id;
            assert_eq!(got, swapped);
        }
        // A change of digest kind is not a storm patch.
        let mut out = Vec::new();
        assert!(!write_storm_patch(&base, &dnew, &mut out));
        // Anything else declines and writes nothing.
        let mut other = cases[0].clone();
        other.thread = 5;
        let blob = record(2, "00000000", "c", "d", "blob");
        for new in [&other, &blob] {
            let mut out = Vec::new();
            assert!(!write_storm_patch(&base, new, &mut out));
            assert!(out.is_empty());
        }
    }
}
