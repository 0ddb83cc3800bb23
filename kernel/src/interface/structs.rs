//! Struct layouts read from the program text (`typedef struct { ... } S;`, `struct S { ... };`),
//! so fuzzing can mutate struct fields by type and the solver can read and write them. The
//! model keeps struct types by name only; their fields are laid out here with OpenCL C's
//! rules (each scalar or vector aligned to its size, a 3-vector to 4 elements; the struct to
//! its largest field; `packed` structs unaligned). Structs with fields of other types (nested
//! structs, pointers, unions) have no layout: their bytes are carried over unchanged.

use super::types::{parse_value_type, strip_qualifiers, ValueType};
use serde::{Deserialize, Serialize};

/// One field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// Field name (`v[2]` for element 2 of an array field).
    pub name: String,
    /// Its type.
    pub ty: ValueType,
    /// Byte offset in the struct.
    pub offset: usize,
}

/// A struct's fields and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructLayout {
    /// Type name (typedef name or `struct tag`'s tag).
    pub name: String,
    /// Fields in order.
    pub fields: Vec<Field>,
    /// Size in bytes (padding included).
    pub size: usize,
}

impl StructLayout {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// A struct with more fields than this (array elements counted) gets no layout: its bytes
/// are carried over, and a hostile `float v[4000000000]` costs nothing.
const MAX_FIELDS: usize = 4096;

fn align_of(t: ValueType) -> usize {
    t.size()
}

/// Lays out fields given as `type name;` declarations (the text between the braces).
fn layout(name: &str, body: &str, packed: bool) -> Option<StructLayout> {
    let mut fields = Vec::new();
    let mut offset = 0usize;
    let mut max_align = 1usize;
    for decl in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        // `float a, b[2]` → type `float`, declarators `a`, `b[2]`.
        let first_decl_start = decl
            .find(',')
            .map(|comma| decl[..comma].rfind(' ').unwrap_or(0))
            .unwrap_or_else(|| decl.rfind(' ').unwrap_or(0));
        let (ty, rest) = decl.split_at(first_decl_start);
        let ty = parse_value_type(&strip_qualifiers(ty.trim()))?;
        for d in rest.split(',').map(str::trim) {
            let (fname, count) = match d.split_once('[') {
                Some((n, c)) => (
                    n.trim(),
                    c.trim_end_matches(']').trim().parse::<usize>().ok()?,
                ),
                None => (d, 1),
            };
            if fname.is_empty() || !fname.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return None;
            }
            if count > MAX_FIELDS - fields.len() {
                return None;
            }
            let align = if packed { 1 } else { align_of(ty) };
            max_align = max_align.max(align);
            for k in 0..count {
                offset = offset.div_ceil(align) * align;
                let n = if count == 1 && !d.contains('[') {
                    fname.to_string()
                } else {
                    format!("{fname}[{k}]")
                };
                fields.push(Field {
                    name: n,
                    ty,
                    offset,
                });
                offset += ty.size();
            }
        }
    }
    if fields.is_empty() {
        return None;
    }
    Some(StructLayout {
        name: name.to_string(),
        fields,
        size: offset.div_ceil(max_align) * max_align,
    })
}

/// Every struct of `source` whose fields all have a known layout.
pub fn parse_structs(source: &str) -> Vec<StructLayout> {
    let text = without_comments(source);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("struct") {
        let after = &rest[at + "struct".len()..];
        let boundary_ok = rest[..at]
            .chars()
            .last()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_')
            && after.starts_with(|c: char| c.is_whitespace() || c == '{');
        let (Some(open), true) = (after.find('{'), boundary_ok) else {
            rest = after;
            continue;
        };
        let head = after[..open].trim();
        let plain_head = head
            .split_whitespace()
            .all(|w| w.chars().all(|c| c.is_alphanumeric() || c == '_'));
        if !plain_head && !head.starts_with("__attribute__") {
            rest = after;
            continue;
        }
        let Some(close) = after[open..].find('}') else {
            break;
        };
        let body = &after[open + 1..open + close];
        let tail = &after[open + close + 1..];
        let tail_end = tail.find(';').unwrap_or(tail.len());
        let trailer = tail[..tail_end].trim();
        let packed = head.contains("packed") || trailer.contains("packed");
        let tag = head
            .split_whitespace()
            .rfind(|w| !w.starts_with("__attribute__") && !w.contains('('))
            .unwrap_or("");
        let typedef = rest[..at].trim_end().ends_with("typedef");
        let alias = trailer
            .split_whitespace()
            .rfind(|w| !w.contains('(') && !w.contains(')'))
            .unwrap_or("");
        for name in [tag, if typedef { alias } else { "" }] {
            if !name.is_empty() {
                if let Some(l) = layout(name, body, packed) {
                    out.push(l);
                }
            }
        }
        rest = tail;
    }
    out
}

/// `source` with comments blanked out (so a comment saying "struct" is not a struct).
fn without_comments(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else {
            let start = i;
            while i < b.len() && b[i] != b'/' {
                i += 1;
            }
            if i == start {
                out.push('/');
                i += 1;
            } else {
                out.push_str(&source[start..i]);
            }
        }
    }
    out
}

/// The layout for a type spelling (`S`, `struct S`, `const S`).
pub fn layout_of<'a>(structs: &'a [StructLayout], ty: &str) -> Option<&'a StructLayout> {
    let bare = strip_qualifiers(ty);
    let name = bare.strip_prefix("struct ").unwrap_or(&bare).trim();
    structs.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let src = "// a struct in a comment { int x; }\n/* struct Q { int y; } */\ntypedef struct { char c; float4 v; int a, b[2]; } S;\n\
                   struct P { uchar x; short y; } __attribute__((packed));\n\
                   typedef struct N { struct P p; } N;";
        let s = parse_structs(src);
        let l = layout_of(&s, "const S").unwrap();
        let offs: Vec<(String, usize)> = l
            .fields
            .iter()
            .map(|f| (f.name.clone(), f.offset))
            .collect();
        assert_eq!(
            offs,
            vec![
                ("c".into(), 0),
                ("v".into(), 16),
                ("a".into(), 32),
                ("b[0]".into(), 36),
                ("b[1]".into(), 40)
            ]
        );
        assert_eq!(l.size, 48);
        let p = layout_of(&s, "struct P").unwrap();
        assert_eq!((p.size, p.fields[1].offset), (3, 1));
        assert!(layout_of(&s, "N").is_none());
    }

    #[test]
    fn structs_past_the_field_bound_get_no_layout() {
        let s = parse_structs("typedef struct { int a[4000]; char b[96]; } Max;");
        assert_eq!(layout_of(&s, "Max").map(|l| l.fields.len()), Some(4096));
        let s = parse_structs("typedef struct { int a[4000]; char b[97]; } Over;");
        assert!(layout_of(&s, "Over").is_none());
        // Not laid out element by element (which would exhaust memory).
        let s = parse_structs("typedef struct { float v[4000000000]; } Huge;");
        assert!(layout_of(&s, "Huge").is_none());
    }
}
