//! The compact launch log: a launch recorded as the difference from an earlier launch of the
//! same kernel.
//!
//! Why: successive launches of one kernel repeat almost everything (program, device, launch
//! site, argument names and types, often most contents); a full JSON record is about 1.3 KB,
//! so a storm of 100 000 launches wrote 128 MB of log. A delta line names its base launch
//! (one written earlier *in the same file* by the same writer, so any prefix of the log that
//! ends in a whole line still resolves) and holds a JSON merge patch (RFC 7386) of the record:
//!
//! ```json
//! {"id":5,"base":4,"patch":{"seq":5,"args":{"2":{"bytes":"0000803f"}}}}
//! ```
//!
//! One extension to RFC 7386: where the base holds an array of objects (`args`) and the patch
//! an object, the patch's keys are indices and each element is patched in place.

use crate::model::{ArgRecord, Content, LaunchRecord};
use serde::Serialize;
use serde_json::{Map, Value};

/// The patch turning launch `base` into launch `new` (without `id`, which a delta line holds
/// itself): what [`diff`] gives for their JSON, computed field by field so that the fields a
/// launch storm repeats cost a comparison, not a conversion to JSON (the writer thread does
/// this for every launch). Err: write the record whole.
pub fn record_patch(base: &LaunchRecord, new: &LaunchRecord) -> Result<Value, Unpatchable> {
    // Destructured without `..`: a field added to LaunchRecord must be added here.
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
    let mut p = Map::new();
    fn field(
        p: &mut Map<String, Value>,
        name: &str,
        old: &dyn Erased,
        new: &dyn Erased,
    ) -> Result<(), Unpatchable> {
        if let Some(d) = diff(&old.json()?, &new.json()?)? {
            p.insert(name.to_string(), d);
        }
        Ok(())
    }
    macro_rules! compare {
        ($($name:ident),*) => {$(
            if base.$name != *$name {
                field(&mut p, stringify!($name), &base.$name, $name)?;
            }
        )*};
    }
    if base.seq != *seq {
        p.insert("seq".into(), (*seq).into());
    }
    compare!(
        kernel,
        program,
        api,
        work_dim,
        global_size,
        device,
        queue_properties,
        thread,
        status
    );
    // Fields left out of the JSON when empty: absent and empty are one value.
    macro_rules! optional {
        ($($name:ident: $absent:expr),*) => {$(
            if base.$name != *$name {
                if $absent(&*$name) {
                    p.insert(stringify!($name).to_string(), Value::Null);
                } else if $absent(&base.$name) {
                    p.insert(stringify!($name).to_string(), plain(&$name.json()?)?);
                } else {
                    field(&mut p, stringify!($name), &base.$name, $name)?;
                }
            }
        )*};
    }
    optional!(
        global_offset: Option::is_none,
        local_size: Option::is_none,
        launch_site: Option::is_none,
        not_replayable: Vec::is_empty
    );
    if base.args != *args {
        if base.args.len() == args.len() {
            let mut changed = Map::new();
            for (i, (old, new)) in base.args.iter().zip(args).enumerate() {
                if old != new {
                    if let Some(d) = arg_patch(old, new)? {
                        changed.insert(i.to_string(), d);
                    }
                }
            }
            p.insert("args".into(), Value::Object(changed));
        } else {
            p.insert("args".into(), plain(&args.json()?)?);
        }
    }
    Ok(Value::Object(p))
}

/// The patch of one argument. The changes of a launch storm — new scalar bytes, new contents
/// of a buffer — are written directly; anything else goes through JSON and [`diff`].
fn arg_patch(old: &ArgRecord, new: &ArgRecord) -> Result<Option<Value>, Unpatchable> {
    use ArgRecord::{Buffer, Scalar};
    match (old, new) {
        (Scalar { info: i, bytes: _ }, Scalar { info: j, bytes }) if i == j => {
            let mut p = Map::new();
            p.insert("bytes".into(), Value::String(bytes.clone()));
            Ok(Some(Value::Object(p)))
        }
        (Buffer { .. }, Buffer { .. }) => {
            let Some((contents, numbers)) = buffer_contents(old, new) else {
                return diff(&old.json()?, &new.json()?);
            };
            let mut p = Map::new();
            for (name, old, new) in contents {
                if old != new {
                    p.insert(name.into(), content_patch(old, new)?);
                }
            }
            for (name, n) in numbers.into_iter().flatten() {
                p.insert(name.into(), n.into());
            }
            Ok(Some(Value::Object(p)))
        }
        _ => diff(&old.json()?, &new.json()?),
    }
}

/// The patch of a changed content: its new digest (and size) when only those changed.
fn content_patch(old: &Content, new: &Content) -> Result<Value, Unpatchable> {
    match same_kind(old, new) {
        Some(((h, s), (hash, size))) => {
            let mut p = Map::new();
            if h != hash {
                p.insert("hash".into(), Value::String(hash.to_string()));
            }
            if s != size {
                p.insert("size".into(), size.into());
            }
            Ok(Value::Object(p))
        }
        None => Ok(diff(&old.json()?, &new.json()?)?.unwrap_or_else(|| Value::Object(Map::new()))),
    }
}

/// The `(name, old, new)` contents of two records of one buffer argument, in the order a
/// patch writes them, and its number fields that changed (`flags`, `mem`, `size`, in that
/// order: the patch's keys are sorted), when nothing else differs: a ping-pong loop swaps two
/// buffers (created with other flags) between the same arguments at every launch. None when
/// anything else differs.
pub(crate) type BufferChange<'a> = (
    [(&'static str, &'a Content, &'a Content); 2],
    [Option<(&'static str, u64)>; 3],
);

/// See [`BufferChange`].
pub(crate) fn buffer_contents<'a>(
    old: &'a ArgRecord,
    new: &'a ArgRecord,
) -> Option<BufferChange<'a>> {
    use ArgRecord::Buffer;
    match (old, new) {
        (
            Buffer {
                info: i,
                mem: m,
                flags: f,
                size: s,
                sub_of: o,
                before: b,
                after: a,
            },
            Buffer {
                info,
                mem,
                flags,
                size,
                sub_of,
                before,
                after,
            },
        ) if (i, o) == (info, sub_of) => {
            // An array, not a list: this runs at every launch of a storm.
            let numbers = [("flags", f, flags), ("mem", m, mem), ("size", s, size)]
                .map(|(name, old, new)| (old != new).then_some((name, *new)));
            Some(([("after", a, after), ("before", b, before)], numbers))
        }
        _ => None,
    }
}

/// A content's digest and size.
pub(crate) type Stored<'a> = (&'a str, u64);

/// The `(digest, size)` of two contents of the same kind, both blobs or both digests by the
/// same function (a patch then says only what changed of the two); None otherwise.
pub(crate) fn same_kind<'a>(
    old: &'a Content,
    new: &'a Content,
) -> Option<(Stored<'a>, Stored<'a>)> {
    use Content::{Blob, Digest};
    match (old, new) {
        (Blob { hash: h, size: s }, Blob { hash, size }) => Some(((h, *s), (hash, *size))),
        (
            Digest {
                hash: h,
                size: s,
                algo: a,
            },
            Digest { hash, size, algo },
        ) if a == algo => Some(((h, *s), (hash, *size))),
        _ => None,
    }
}

/// A difference a merge patch cannot express (a `null` value, an array turned into an
/// object): the record is written whole instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the change cannot be written as a merge patch")]
pub struct Unpatchable;

/// Any record field as JSON (a trait object, so one closure compares fields of every type).
trait Erased {
    fn json(&self) -> Result<Value, Unpatchable>;
}

impl<T: Serialize> Erased for T {
    fn json(&self) -> Result<Value, Unpatchable> {
        serde_json::to_value(self).map_err(|_| Unpatchable)
    }
}

/// The merge patch turning `base` into `new`; `None` when they are equal. `Err(Unpatchable)` when the
/// difference cannot be written as a patch (a `null` value, an array turned into an object):
/// the record is then written whole.
pub fn diff(base: &Value, new: &Value) -> Result<Option<Value>, Unpatchable> {
    if base == new {
        return Ok(None);
    }
    match (base, new) {
        (Value::Object(b), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, v) in n {
                match b.get(k) {
                    Some(bv) => {
                        if let Some(d) = diff(bv, v)? {
                            patch.insert(k.clone(), d);
                        }
                    }
                    None => {
                        patch.insert(k.clone(), plain(v)?);
                    }
                }
            }
            for k in b.keys().filter(|k| !n.contains_key(*k)) {
                patch.insert(k.clone(), Value::Null);
            }
            Ok(Some(Value::Object(patch)))
        }
        (Value::Array(b), Value::Array(n))
            if b.len() == n.len() && b.iter().all(Value::is_object) =>
        {
            let mut patch = Map::new();
            for (i, (bv, nv)) in b.iter().zip(n).enumerate() {
                if let Some(d) = diff(bv, nv)? {
                    patch.insert(i.to_string(), d);
                }
            }
            Ok(Some(Value::Object(patch)))
        }
        (Value::Array(_), Value::Object(_)) => Err(Unpatchable),
        _ => plain(new).map(Some),
    }
}

/// `v` as a replacing patch value: fine unless it holds a `null` (which means "remove").
fn plain(v: &Value) -> Result<Value, Unpatchable> {
    let has_null = |v: &Value| -> bool {
        fn walk(v: &Value) -> bool {
            match v {
                Value::Null => true,
                Value::Array(a) => a.iter().any(walk),
                Value::Object(o) => o.values().any(walk),
                _ => false,
            }
        }
        walk(v)
    };
    if has_null(v) {
        Err(Unpatchable)
    } else {
        Ok(v.clone())
    }
}

/// Applies a patch made by [`diff`] to `target` (Err: a malformed patch, said in words).
pub fn apply(target: &mut Value, patch: &Value) -> Result<(), String> {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    if let Value::Array(items) = target {
        let len = items.len();
        for (k, v) in p {
            let item = k
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get_mut(i))
                .ok_or_else(|| format!("the patch names element {k:?} of a {len}-element array"))?;
            apply(item, v)?;
        }
        return Ok(());
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                apply(t.entry(k.clone()).or_insert(Value::Null), v)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_rebuilds_the_record_it_was_made_from() {
        let base = json!({"seq":1,"kernel":"k","local_size":[4],"site":{"module":"m","symbol":"s"},
            "args":[{"kind":"scalar","bytes":"00"},{"kind":"buffer","before":{"kind":"blob","hash":"a"}}]});
        let new = json!({"seq":2,"kernel":"k","global_offset":[1],"site":{"module":"m"},
            "args":[{"kind":"scalar","bytes":"01"},{"kind":"buffer","before":{"kind":"digest","hash":"a"}}]});
        let patch = diff(&base, &new).unwrap().unwrap();
        assert!(patch.get("kernel").is_none(), "{patch}");
        let mut rebuilt = base.clone();
        apply(&mut rebuilt, &patch).unwrap();
        assert_eq!(rebuilt, new);
        assert_eq!(diff(&new, &new).unwrap(), None);
    }

    #[test]
    fn the_field_by_field_patch_equals_the_json_patch() {
        let mut a: LaunchRecord = serde_json::from_value(json!({"id":1,"seq":1,"kernel":"k",
            "program":"p","api":"nd_range","work_dim":1,"global_size":[4],"local_size":[2],
            "args":[{"kind":"scalar","index":0,"bytes":"00"}],"device":{"platform":"x","name":"d",
            "vendor":"v","driver_version":"1","version":"2"},"status":0}))
        .unwrap();
        let mut b = a.clone();
        b.id = 2;
        b.seq = 7;
        b.local_size = None;
        b.global_offset = Some(vec![3]);
        b.not_replayable = vec!["why".into()];
        b.args[0] =
            serde_json::from_value(json!({"kind":"scalar","index":0,"bytes":"01"})).unwrap();
        for _ in 0..2 {
            let patch = record_patch(&a, &b).unwrap();
            let mut rebuilt = serde_json::to_value(&a).unwrap();
            apply(&mut rebuilt, &patch).unwrap();
            rebuilt["id"] = b.id.into();
            assert_eq!(serde_json::from_value::<LaunchRecord>(rebuilt).unwrap(), b);
            std::mem::swap(&mut a, &mut b);
        }
    }

    #[test]
    fn what_a_patch_cannot_say_is_refused_and_bad_patches_are_errors() {
        assert!(diff(&json!({"a":1}), &json!({"a":null})).is_err());
        assert!(diff(&json!({"a":[{}]}), &json!({"a":{}})).is_err());
        let mut t = json!({"args":[{}]});
        assert!(apply(&mut t, &json!({"args":{"3":{"x":1}}})).is_err());
    }
}
