//! Accesses written in macro bodies: which can still be checked at the macro's use.
//!
//! Why a module of its own: the pass edits the user's text by byte ranges, and a macro body's
//! tokens have no range at the use. But in the common form `#define STORE(p, i, v) p[i] = v`
//! the access's pointer and index are the macro's *arguments*, which are written out at the
//! use: the pointer argument's text can become the checked address `CHECKED(P + I) - I`, so
//! the expansion's `p[i]` lands on the checked element. That needs the body to hold exactly
//! one access, written `p [ i ]` with both parameters bare, and the pointer parameter used
//! nowhere else (its argument's text is changed for every use in the body).

use crate::model::{MacroUse, Program};

/// Byte ranges, at the use, of the pointer and index arguments of the one access `p[i]` that
/// the body of function-like macro use `u` holds; or why there is none to check.
pub(crate) fn index_arguments(
    p: &Program,
    u: &MacroUse,
) -> Result<((u32, u32), (u32, u32)), &'static str> {
    let no =
        "the access is written inside a macro body that is not one `p[i]` of its own arguments";
    let body = p.macro_defs.get(&u.name).ok_or(no)?;
    if !p.source.contains(&format!("define {}(", u.name))
        || body.first().map(String::as_str) != Some("(")
    {
        return Err("the access is written inside a macro body that names its pointer itself (not a macro argument)");
    }
    let close = body.iter().position(|t| t == ")").ok_or(no)?;
    let params: Vec<&str> = body[1..close]
        .iter()
        .map(String::as_str)
        .filter(|t| *t != ",")
        .collect();
    let body = &body[close + 1..];
    let param = |t: &str| params.iter().position(|x| *x == t);
    let mut found = None;
    for (j, w) in body.windows(4).enumerate() {
        if w[1] == "[" && w[3] == "]" {
            if let (Some(a), Some(b)) = (param(&w[0]), param(&w[2])) {
                if found.replace((j, a, b)).is_some() {
                    return Err("the access is written inside a macro body with several accesses");
                }
            }
        }
    }
    let (_, a, b) = found.ok_or("the access is written inside a macro body that names its pointer or computes its index itself (not macro arguments)")?;
    if body.iter().filter(|t| *t == "[").count() != 1 {
        return Err("the access is written inside a macro body with several accesses");
    }
    if body.iter().filter(|t| t.as_str() == params[a]).count() != 1 {
        return Err(
            "the access is written inside a macro that uses its pointer argument more than once",
        );
    }
    let args = arguments(&p.source, u).ok_or(no)?;
    match (args.get(a), args.get(b)) {
        (Some(x), Some(y)) if args.len() == params.len() => Ok((*x, *y)),
        _ => Err(no),
    }
}

/// The trimmed byte ranges of the arguments of function-like macro use `u`.
fn arguments(source: &str, u: &MacroUse) -> Option<Vec<(u32, u32)>> {
    let text = source.get(u.start as usize..u.end as usize)?;
    let open = text.find('(')?;
    if !text[u.name.len()..open].trim().is_empty() || !text.ends_with(')') {
        return None;
    }
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, open + 1);
    for (i, c) in text.char_indices().skip(open + 1) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ',' | ')' if depth == 0 => {
                let arg = &text[from..i];
                let lead = arg.len() - arg.trim_start().len();
                let s = u.start + (from + lead) as u32;
                out.push((s, s + arg.trim().len() as u32));
                from = i + 1;
            }
            _ => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pointer_and_index_arguments_of_a_store_macro_are_found_at_its_use() {
        let src = "#define STORE(p, i, v) p[i] = v\n#define TWICE(p, i) p[i] + p[i + 1]\n__kernel void k(__global uint* out) {\n  STORE(out, min(1u, 2u), 3);\n  out[0] = TWICE(out, 0);\n}\n";
        let p = crate::parse_program(src, "").expect("parses");
        let u = |name: &str| {
            p.macro_uses
                .iter()
                .find(|u| u.name == name)
                .expect("use")
                .clone()
        };
        let ((ps, pe), (is, ie)) = index_arguments(&p, &u("STORE")).expect("one access");
        assert_eq!(&src[ps as usize..pe as usize], "out");
        assert_eq!(&src[is as usize..ie as usize], "min(1u, 2u)");
        assert!(index_arguments(&p, &u("TWICE")).is_err());
    }
}
