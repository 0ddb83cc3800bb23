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

use serde_json::{Map, Value};

/// The merge patch turning `base` into `new`; `None` when they are equal. `Err(())` when the
/// difference cannot be written as a patch (a `null` value, an array turned into an object):
/// the record is then written whole.
pub fn diff(base: &Value, new: &Value) -> Result<Option<Value>, ()> {
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
        (Value::Array(_), Value::Object(_)) => Err(()),
        _ => plain(new).map(Some),
    }
}

/// `v` as a replacing patch value: fine unless it holds a `null` (which means "remove").
fn plain(v: &Value) -> Result<Value, ()> {
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
        Err(())
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
    fn what_a_patch_cannot_say_is_refused_and_bad_patches_are_errors() {
        assert!(diff(&json!({"a":1}), &json!({"a":null})).is_err());
        assert!(diff(&json!({"a":[{}]}), &json!({"a":{}})).is_err());
        let mut t = json!({"args":[{}]});
        assert!(apply(&mut t, &json!({"args":{"3":{"x":1}}})).is_err());
    }
}
