//! Canonical text of what one kernel executes, cut out of an optimised LLVM IR module: the
//! kernel's definition plus everything it reaches through `@` references (helpers that were not
//! inlined, declarations, program-scope and `__local` variables, string constants), with
//! attribute groups and metadata renumbered in order of first use and only the ones reached.
//!
//! Why per kernel and not the whole module: at -O2 helpers are inlined, but clang still emits
//! every non-`static` helper on its own, and a mutant inside a helper changes that copy even
//! when the inlined code of every kernel stays the same. No host can call a helper, so it only
//! matters through a kernel; comparing what each kernel reaches is as sound as comparing the
//! module and decides more mutants. What is dropped never reaches a kernel: comments,
//! `source_filename`, named module metadata (`!llvm.ident` with the compiler's version,
//! `!opencl.ocl.version`, module flags), and the numbering of attribute groups and metadata.

use std::collections::{BTreeMap, HashMap};

/// An optimised module split into what kernels can reach.
pub(crate) struct Module<'a> {
    /// Defined and declared functions and global variables, by name (without `@`).
    entities: HashMap<&'a str, &'a str>,
    /// Names of the `spir_kernel` functions, in module order.
    kernels: Vec<&'a str>,
    /// `attributes #N = { ... }` bodies by N.
    attributes: HashMap<&'a str, &'a str>,
    /// `!N = ...` bodies by N.
    metadata: HashMap<&'a str, &'a str>,
    /// Lines every kernel depends on: the target, named types, anything not recognised.
    shared: Vec<&'a str>,
}

impl<'a> Module<'a> {
    /// Splits the text of a module as `clang -S -emit-llvm` prints it.
    pub(crate) fn parse(ir: &'a str) -> Module<'a> {
        let mut m = Module {
            entities: HashMap::new(),
            kernels: Vec::new(),
            attributes: HashMap::new(),
            metadata: HashMap::new(),
            shared: Vec::new(),
        };
        let mut offset = 0;
        let mut open: Option<(usize, &'a str, bool)> = None;
        for line in ir.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let text = line.trim_end();
            if let Some((from, name, is_kernel)) = open {
                if text == "}" {
                    m.entities.insert(name, &ir[from..offset]);
                    if is_kernel {
                        m.kernels.push(name);
                    }
                    open = None;
                }
                continue;
            }
            if text.is_empty() || text.starts_with(';') || text.starts_with("source_filename") {
                continue;
            }
            if text.starts_with("define ") {
                if let Some(name) = first_global_name(text) {
                    open = Some((start, name, text.contains(" spir_kernel ")));
                    continue;
                }
            }
            let named = if text.starts_with("declare ") || text.starts_with('@') {
                first_global_name(text)
            } else {
                None
            };
            if let Some(name) = named {
                m.entities.insert(name, text);
            } else if let Some(rest) = text.strip_prefix("attributes #") {
                if let Some((n, body)) = rest.split_once(" = ") {
                    m.attributes.insert(n, body);
                }
            } else if let Some(rest) = text.strip_prefix('!') {
                match rest.split_once(" = ") {
                    Some((n, body)) if n.bytes().all(|b| b.is_ascii_digit()) => {
                        m.metadata.insert(n, body);
                    }
                    // Named module metadata: identification and flags, never reached by code.
                    _ => {}
                }
            } else {
                m.shared.push(text);
            }
        }
        m
    }

    /// The canonical text of each kernel, by kernel name.
    pub(crate) fn kernel_texts(&self) -> BTreeMap<String, String> {
        self.kernels
            .iter()
            .map(|k| (k.to_string(), self.closure(k)))
            .collect()
    }

    /// The canonical text of `kernel` and all it reaches.
    fn closure(&self, kernel: &'a str) -> String {
        let mut c = Canon::default();
        c.reach(kernel);
        let mut out = String::new();
        for line in &self.shared {
            out.push_str(line);
            out.push('\n');
        }
        let mut i = 0;
        while let Some(name) = c.globals.get(i).copied() {
            i += 1;
            match self.entities.get(name) {
                Some(text) => c.emit(text, &mut out),
                None => {
                    out.push_str("; external @");
                    out.push_str(name);
                }
            }
            out.push('\n');
        }
        let mut i = 0;
        while let Some(n) = c.attributes.get(i).copied() {
            out.push_str(&format!("attributes #{i} = "));
            c.emit(self.attributes.get(n).copied().unwrap_or("?"), &mut out);
            out.push('\n');
            i += 1;
        }
        let mut i = 0;
        while let Some(n) = c.metadata.get(i).copied() {
            out.push_str(&format!("!{i} = "));
            c.emit(self.metadata.get(n).copied().unwrap_or("?"), &mut out);
            out.push('\n');
            i += 1;
        }
        out
    }
}

/// Renumbering state of one closure: everything reached, in order of first reference.
#[derive(Default)]
struct Canon<'a> {
    globals: Vec<&'a str>,
    attributes: Vec<&'a str>,
    metadata: Vec<&'a str>,
}

impl<'a> Canon<'a> {
    fn reach(&mut self, name: &'a str) {
        if !self.globals.contains(&name) {
            self.globals.push(name);
        }
    }

    /// Appends `text` to `out` with comments dropped, attribute-group and metadata numbers
    /// replaced by their order of first use, and every `@name` recorded as reached.
    fn emit(&mut self, text: &'a str, out: &mut String) {
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            match c {
                b'"' => {
                    let end = text[i + 1..].find('"').map_or(b.len(), |e| i + 2 + e);
                    out.push_str(&text[i..end]);
                    i = end;
                }
                b';' => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    while out.ends_with(' ') {
                        out.pop();
                    }
                }
                b'@' => {
                    let (name, end) = global_name_at(text, i);
                    if !name.is_empty() {
                        self.reach(name);
                    }
                    out.push_str(&text[i..end]);
                    i = end;
                }
                b'#' | b'!' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                    let end = i + 1 + text[i + 1..].bytes().take_while(u8::is_ascii_digit).count();
                    let n = &text[i + 1..end];
                    let list = if c == b'#' {
                        &mut self.attributes
                    } else {
                        &mut self.metadata
                    };
                    let k = list.iter().position(|x| *x == n).unwrap_or_else(|| {
                        list.push(n);
                        list.len() - 1
                    });
                    out.push(c as char);
                    out.push_str(&k.to_string());
                    i = end;
                }
                _ => {
                    // Specials are ASCII, so `i + 1` after one is a char boundary.
                    let end = match text[i..].find(['"', ';', '@', '#', '!']) {
                        Some(0) => i + 1,
                        Some(e) => i + e,
                        None => text.len(),
                    };
                    out.push_str(&text[i..end]);
                    i = end;
                }
            }
        }
    }
}

/// The name of the first `@global` on a line (`define ... @name(`, `@name = ...`).
fn first_global_name(line: &str) -> Option<&str> {
    let at = line.find('@')?;
    let (name, _) = global_name_at(line, at);
    (!name.is_empty()).then_some(name)
}

/// The global name starting at the `@` at byte `at` (quoted or plain), and where it ends.
fn global_name_at(text: &str, at: usize) -> (&str, usize) {
    let rest = &text[at + 1..];
    if let Some(quoted) = rest.strip_prefix('"') {
        let len = quoted.find('"').unwrap_or(quoted.len());
        let end = (at + 2 + len + 1).min(text.len());
        return (&text[at + 1..end], end);
    }
    let len = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'$' | b'.' | b'_' | b'-'))
        .count();
    (&rest[..len], at + 1 + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r##"; ModuleID = '<stdin>'
source_filename = "<stdin>"
target triple = "spir64"

@k.tmp = internal addrspace(3) global [4 x i32] undef, align 4
@unused = addrspace(2) constant i32 7, align 4

; Function Attrs: nounwind
define dso_local spir_func i32 @helper(i32 %0) #3 {
  %2 = add i32 %0, 1 ; a comment
  ret i32 %2
}

define dso_local spir_kernel void @k(i32 addrspace(1)* %0) #0 !kernel_arg_type !7 {
  %2 = call spir_func i32 @helper(i32 1) #3
  store i32 %2, i32 addrspace(3)* getelementptr ([4 x i32], [4 x i32] addrspace(3)* @k.tmp, i64 0, i64 0), !tbaa !9
  ret void
}

define dso_local spir_kernel void @other() #0 {
  ret void
}

attributes #0 = { convergent "x"="#1;!2" }
attributes #3 = { nounwind }

!llvm.ident = !{!1}
!1 = !{!"Debian clang version 15.0.6"}
!7 = !{!"int*"}
!9 = !{!10, !10, i64 0}
!10 = !{!"int", !7}
"##;

    #[test]
    fn a_kernel_reaches_its_helpers_variables_attributes_and_metadata_only() {
        let m = Module::parse(IR);
        let texts = m.kernel_texts();
        assert_eq!(texts.keys().collect::<Vec<_>>(), ["k", "other"]);
        let k = &texts["k"];
        assert!(k.contains("@helper(i32 %0) #1 {"), "{k}");
        assert!(k.contains("@k.tmp = internal"), "{k}");
        assert!(!k.contains("@unused"), "{k}");
        assert!(!k.contains("comment") && !k.contains("ModuleID"), "{k}");
        assert!(!k.contains("Debian"), "{k}");
        assert!(
            k.contains("attributes #0 = { convergent \"x\"=\"#1;!2\" }"),
            "{k}"
        );
        assert!(k.contains("attributes #1 = { nounwind }"), "{k}");
        assert!(k.contains("!kernel_arg_type !0 {"), "{k}");
        assert!(k.contains("!tbaa !1\n"), "{k}");
        assert!(
            k.contains("!1 = !{!2, !2, i64 0}\n!2 = !{!\"int\", !0}"),
            "{k}"
        );
        let other = &texts["other"];
        assert!(
            !other.contains("@helper") && !other.contains("!0"),
            "{other}"
        );
    }

    #[test]
    fn renumbering_makes_unrelated_numbering_differences_vanish() {
        let shifted = IR
            .replace("#3", "#5")
            .replace("!9", "!19")
            .replace("!10", "!20");
        assert_eq!(
            Module::parse(IR).kernel_texts(),
            Module::parse(&shifted).kernel_texts()
        );
    }
}
