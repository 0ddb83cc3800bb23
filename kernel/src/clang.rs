//! The only module that talks to libclang: it parses one OpenCL C program and copies what the
//! rest of the crate needs into owned Rust values ([`RawTree`]), so no libclang handle ever
//! escapes and the model builder stays pure Rust.

#![allow(non_upper_case_globals)] // libclang's CXCursor_* / CXEval_* constants are matched by name.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_uint, c_void};
use std::sync::{Arc, Mutex, OnceLock};

use clang_sys::*;

use crate::error::KernelError;

/// One cursor of the libclang AST, copied out with its range already mapped to byte offsets of
/// the main (user's) file, because every pass edits the user's text by those offsets.
#[derive(Debug, Clone)]
pub struct RawNode {
    /// libclang's cursor kind (`CXCursor_*`).
    pub kind: i32,
    /// Cursor spelling (declaration or callee name; empty for most expressions).
    pub spelling: String,
    /// The cursor's type with the program's own typedefs resolved ([`plain_type`]):
    /// `__global float *__private` for `__global DATA_TYPE *`, `uint4` for `typedef uint4 U4`.
    /// Every pass decides on this spelling, so a typedef never hides a type.
    pub ty: String,
    /// The type as written in the program (`__global DATA_TYPE *__private`), for reports.
    pub written_ty: String,
    /// For literals (`IntegerLiteral`, `FloatingLiteral`, `CharacterLiteral`, `true`/`false`):
    /// their value as clang evaluated it (decimal integer, or a float that rounds back to the
    /// same value), because a literal written in a macro body shows only the macro's name in
    /// the user's text.
    pub value: Option<String>,
    /// Where the node lies in the main file, after mapping macro expansions to the user's text.
    pub loc: Loc,
    /// A function whose type has the OpenCL kernel calling convention: a kernel however its
    /// `__kernel` is spelled (hashcat writes `KERNEL_FQ`, defined in a header it includes,
    /// where no text of the user's file shows the keyword).
    pub kernel_cc: bool,
    /// Child cursors in source order.
    pub children: Vec<RawNode>,
}

/// A node's position in the main file; `None` ranges mean "not in the main file" (a header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loc {
    /// Byte offset of the first byte (after macro mapping), when the node starts in the main file.
    pub start: Option<u32>,
    /// Byte offset one past the last byte (after macro mapping).
    pub end: Option<u32>,
    /// The node's first token comes from a macro expansion.
    pub start_in_macro: bool,
    /// The node's last token comes from a macro expansion.
    pub end_in_macro: bool,
    /// 1-based line of the mapped start (or of the header location).
    pub line: u32,
    /// 1-based column of the mapped start.
    pub col: u32,
}

/// One token of the main file, used to recover what libclang 14 does not expose (operator
/// kinds, the `__kernel` keyword, swizzle and vector-literal pieces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Token text.
    pub text: String,
    /// libclang token kind (`CXToken_Punctuation`, `CXToken_Keyword`, ...).
    pub kind: i32,
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
}

/// A diagnostic clang reported while parsing, with its position in the user's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diag {
    /// Clang severity (`CXDiagnostic_Error` = 3, `CXDiagnostic_Fatal` = 4).
    pub severity: u32,
    /// The message without location.
    pub message: String,
    /// File the diagnostic points at (empty when none).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

/// Everything the model builder needs from one parse.
#[derive(Debug, Clone)]
pub struct RawTree {
    /// Top-level declarations of the translation unit (including those from headers).
    pub decls: Vec<RawNode>,
    /// All tokens of the main file.
    pub tokens: Vec<Token>,
    /// Extents `[start, end)` of every macro invocation in the main file.
    pub macro_expansions: Vec<(u32, u32, String)>,
    /// Macro definitions of the main file: name and the texts of its body tokens.
    pub macro_defs: Vec<(String, Vec<String>)>,
    /// Diagnostics of every severity.
    pub diags: Vec<Diag>,
}

static LIBRARY: OnceLock<Result<Arc<clang_sys::SharedLibrary>, String>> = OnceLock::new();
static PARSE_LOCK: Mutex<()> = Mutex::new(());

/// clang-sys's runtime loader keeps the library per thread; load it once per process and hand
/// the same handle to every thread that parses.
fn ensure_loaded() -> Result<(), KernelError> {
    if clang_sys::is_loaded() {
        return Ok(());
    }
    let lib = LIBRARY.get_or_init(|| {
        clang_sys::load()?;
        clang_sys::get_library().ok_or_else(|| "libclang loaded but not registered".to_string())
    });
    match lib {
        Ok(lib) => {
            clang_sys::set_library(Some(lib.clone()));
            Ok(())
        }
        Err(e) => Err(KernelError::LibclangMissing(e.clone())),
    }
}

/// Version string of the libclang in use, for reports ("clang version 14.0.6").
pub fn libclang_version() -> Result<String, KernelError> {
    ensure_loaded()?;
    // SAFETY: the library is loaded; the returned CXString is disposed by `take`.
    Ok(unsafe { take(clang_getClangVersion()) })
}

/// Parses `source` (named `file_name`) with `args`, returning the owned tree.
pub fn parse(file_name: &str, source: &str, args: &[String]) -> Result<RawTree, KernelError> {
    ensure_loaded()?;
    let _guard = PARSE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let c_name = CString::new(file_name)
        .map_err(|_| KernelError::BadInput("file name contains NUL".into()))?;
    let c_src_len = source.len();
    let c_args: Vec<CString> = args
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| KernelError::BadInput("build option contains NUL".into()))?;
    let arg_ptrs: Vec<*const c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: every pointer handed to libclang outlives the calls (owned by this frame); the
    // index and translation unit are disposed before returning; all CXStrings are disposed.
    unsafe {
        let index = clang_createIndex(0, 0);
        if index.is_null() {
            return Err(KernelError::Libclang("clang_createIndex failed".into()));
        }
        let mut unsaved = CXUnsavedFile {
            Filename: c_name.as_ptr(),
            Contents: source.as_ptr() as *const c_char,
            Length: c_src_len as _,
        };
        let mut tu: CXTranslationUnit = std::ptr::null_mut();
        let rc = clang_parseTranslationUnit2(
            index,
            c_name.as_ptr(),
            arg_ptrs.as_ptr(),
            arg_ptrs.len() as i32,
            &mut unsaved,
            1,
            CXTranslationUnit_DetailedPreprocessingRecord | CXTranslationUnit_KeepGoing,
            &mut tu,
        );
        if rc != CXError_Success || tu.is_null() {
            clang_disposeIndex(index);
            return Err(KernelError::Libclang(format!(
                "clang_parseTranslationUnit2 returned error code {rc}"
            )));
        }
        let main_file = clang_getFile(tu, c_name.as_ptr());
        let diags = collect_diags(tu);
        let tokens = collect_tokens(tu, main_file, source.len() as u32);
        let mut ctx = Ctx {
            main_file,
            expansions: Vec::new(),
            typedefs: Default::default(),
        };
        let root = clang_getTranslationUnitCursor(tu);
        // First pass: macro expansions (needed to map ranges of the second pass).
        let mut top: Vec<CXCursor> = Vec::new();
        visit_children(root, |c| top.push(c));
        for c in &top {
            if clang_getCursorKind(*c) == CXCursor_MacroExpansion {
                let ext = clang_getCursorExtent(*c);
                if let (Some((s, _)), Some((e, _))) = (
                    ctx.file_offset(clang_getRangeStart(ext)),
                    ctx.file_offset(clang_getRangeEnd(ext)),
                ) {
                    ctx.expansions
                        .push((s, e, take(clang_getCursorSpelling(*c))));
                }
            }
        }
        ctx.expansions.sort();
        for c in &top {
            if clang_getCursorKind(*c) == CXCursor_TypedefDecl
                && clang_Location_isInSystemHeader(clang_getCursorLocation(*c)) == 0
            {
                ctx.typedefs.insert(
                    take(clang_getCursorSpelling(*c)),
                    take(clang_getTypeSpelling(clang_getTypedefDeclUnderlyingType(
                        *c,
                    ))),
                );
            }
        }
        let mut macro_defs = Vec::new();
        for c in &top {
            if clang_getCursorKind(*c) == CXCursor_MacroDefinition {
                let ext = clang_getCursorExtent(*c);
                if let (Some((s, _)), Some((e, _))) = (
                    ctx.file_offset(clang_getRangeStart(ext)),
                    ctx.file_offset(clang_getRangeEnd(ext)),
                ) {
                    let body: Vec<String> = tokens
                        .iter()
                        .filter(|t| t.start >= s && t.end <= e)
                        .skip(1)
                        .map(|t| t.text.clone())
                        .collect();
                    macro_defs.push((take(clang_getCursorSpelling(*c)), body));
                }
            }
        }
        let mut decls = Vec::new();
        for c in &top {
            let k = clang_getCursorKind(*c);
            if (500..=503).contains(&k) {
                continue;
            }
            decls.push(ctx.copy(*c));
        }
        let macro_expansions = std::mem::take(&mut ctx.expansions);
        clang_disposeTranslationUnit(tu);
        clang_disposeIndex(index);
        Ok(RawTree {
            decls,
            tokens,
            macro_expansions,
            macro_defs,
            diags,
        })
    }
}

struct Ctx {
    main_file: CXFile,
    expansions: Vec<(u32, u32, String)>,
    /// The program's own typedefs (not those of OpenCL's built-in headers): name → the
    /// spelling of the type it names.
    typedefs: std::collections::HashMap<String, String>,
}

impl Ctx {
    /// Expansion location of `loc` as (offset, in main file?) plus line/col.
    unsafe fn expansion(&self, loc: CXSourceLocation) -> (Option<u32>, u32, u32) {
        let mut file: CXFile = std::ptr::null_mut();
        let (mut line, mut col, mut off): (c_uint, c_uint, c_uint) = (0, 0, 0);
        clang_getExpansionLocation(loc, &mut file, &mut line, &mut col, &mut off);
        let in_main = !file.is_null()
            && !self.main_file.is_null()
            && clang_File_isEqual(file, self.main_file) != 0;
        (in_main.then_some(off), line, col)
    }

    unsafe fn file_offset(&self, loc: CXSourceLocation) -> Option<(u32, ())> {
        self.expansion(loc).0.map(|o| (o, ()))
    }

    fn expansion_at(&self, off: u32) -> Option<(u32, u32)> {
        self.expansions
            .iter()
            .find(|(s, _, _)| *s == off)
            .map(|(s, e, _)| (*s, *e))
    }

    unsafe fn loc_of(&self, c: CXCursor) -> Loc {
        let ext = clang_getCursorExtent(c);
        let (s, line, col) = self.expansion(clang_getRangeStart(ext));
        let (e, _, _) = self.expansion(clang_getRangeEnd(ext));
        let mut loc = Loc {
            line,
            col,
            ..Loc::default()
        };
        if let Some(s) = s {
            loc.start = Some(s);
            loc.start_in_macro = self.expansion_at(s).is_some();
        }
        if let Some(e) = e {
            // The range end is either one past the last token (a plain token) or, for a token
            // produced by a macro, the start of the macro invocation: extend to its end then.
            if let Some((_, xe)) = self.expansion_at(e) {
                loc.end = Some(xe);
                loc.end_in_macro = true;
            } else {
                loc.end = Some(e);
                // An end strictly inside a macro invocation means the last token came from one;
                // an end exactly at an invocation's end means the node ends with that invocation.
                if let Some((_, xe, _)) = self
                    .expansions
                    .iter()
                    .find(|(xs, xe, _)| *xs < e && e <= *xe)
                {
                    loc.end = Some(*xe);
                    loc.end_in_macro = true;
                }
            }
        }
        loc
    }

    unsafe fn copy(&self, c: CXCursor) -> RawNode {
        let kind = clang_getCursorKind(c);
        let spelling = take(clang_getCursorSpelling(c));
        let cx_ty = clang_getCursorType(c);
        let written_ty = take(clang_getTypeSpelling(cx_ty));
        let canonical = take(clang_getTypeSpelling(clang_getCanonicalType(cx_ty)));
        let ty = plain_type(&written_ty, &canonical, &self.typedefs);
        let value = match kind {
            CXCursor_IntegerLiteral
            | CXCursor_FloatingLiteral
            | CXCursor_CharacterLiteral
            | CXCursor_CXXBoolLiteralExpr => evaluate(c),
            _ => None,
        };
        let loc = self.loc_of(c);
        // libclang reports clang's `CC_OpenCLKernel` as `CXCallingConv_Unexposed`; plain
        // OpenCL C functions have the C convention.
        let kernel_cc = kind == CXCursor_FunctionDecl
            && clang_getFunctionTypeCallingConv(cx_ty) == CXCallingConv_Unexposed;
        let mut kids: Vec<CXCursor> = Vec::new();
        visit_children(c, |k| kids.push(k));
        let children = kids.into_iter().map(|k| self.copy(k)).collect();
        RawNode {
            kind,
            spelling,
            ty,
            written_ty,
            value,
            loc,
            kernel_cc,
            children,
        }
    }
}

/// A literal's value, as clang evaluates it.
unsafe fn evaluate(c: CXCursor) -> Option<String> {
    let r = clang_Cursor_Evaluate(c);
    if r.is_null() {
        return None;
    }
    let out = match clang_EvalResult_getKind(r) {
        CXEval_Int if clang_EvalResult_isUnsignedInt(r) != 0 => {
            Some(clang_EvalResult_getAsUnsigned(r).to_string())
        }
        CXEval_Int => Some(clang_EvalResult_getAsLongLong(r).to_string()),
        CXEval_Float => {
            let v = clang_EvalResult_getAsDouble(r);
            // `{:?}` is the shortest text that reads back as the same double; it always has
            // a `.` or an exponent, so it reads as a floating literal.
            v.is_finite().then(|| format!("{v:?}"))
        }
        _ => None,
    };
    clang_EvalResult_dispose(r);
    out
}

/// The spelling every pass decides types on: clang's canonical type, which resolves the
/// program's typedefs (`DATA_TYPE` → `float`), except where the canonical spelling of an
/// OpenCL vector is clang's internal one (`float __global * __attribute__((ext_vector_type(4)))`):
/// there the written spelling with the program's own typedefs replaced by what they name
/// (`__global VEC *` → `__global float4 *`) keeps OpenCL's vector names.
pub fn plain_type(
    written: &str,
    canonical: &str,
    typedefs: &std::collections::HashMap<String, String>,
) -> String {
    if !canonical.contains("ext_vector_type") {
        return canonical.to_string();
    }
    let mut s = written.to_string();
    for _ in 0..8 {
        let mut changed = false;
        let mut out = String::with_capacity(s.len());
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String, changed: &mut bool| {
            match typedefs.get(word.as_str()) {
                Some(t) => {
                    out.push_str(t);
                    *changed = true;
                }
                None => out.push_str(word),
            }
            word.clear();
        };
        for ch in s.chars() {
            if ch.is_ascii_alphanumeric() || ch == '_' {
                word.push(ch);
            } else {
                flush(&mut word, &mut out, &mut changed);
                out.push(ch);
            }
        }
        flush(&mut word, &mut out, &mut changed);
        s = out;
        if !changed {
            break;
        }
    }
    simple_vector_name(&s).unwrap_or(s)
}

/// `unsigned int __private __attribute__((ext_vector_type(4)))` → `__private uint4`: the
/// spelling clang gives vector values without a typedef (swizzles, vector arithmetic), for
/// plain values only (pointers and arrays keep clang's spelling).
fn simple_vector_name(s: &str) -> Option<String> {
    let at = s.find("__attribute__((ext_vector_type(")?;
    let rest = &s[at + "__attribute__((ext_vector_type(".len()..];
    let n: u32 = rest.split(')').next()?.trim().parse().ok()?;
    let head = &s[..at];
    if head.contains('*') || head.contains('[') || rest.contains('*') || rest.contains('[') {
        return None;
    }
    let words: Vec<&str> = head.split_whitespace().collect();
    let is_scalar_word = |w: &str| {
        matches!(
            w,
            "unsigned"
                | "signed"
                | "char"
                | "short"
                | "int"
                | "long"
                | "float"
                | "double"
                | "half"
                | "bool"
                | "uchar"
                | "ushort"
                | "uint"
                | "ulong"
        )
    };
    let scalar: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| is_scalar_word(w))
        .collect();
    let quals: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !is_scalar_word(w))
        .collect();
    let base = match scalar.as_slice() {
        ["unsigned", "char"] => "uchar",
        ["unsigned", "short"] => "ushort",
        ["unsigned", "int"] | ["unsigned"] => "uint",
        ["unsigned", "long"] | ["unsigned", "long", "long"] => "ulong",
        ["signed", "char"] => "char",
        ["long", "long"] => "long",
        [one] => one,
        _ => return None,
    };
    let mut out = quals.join(" ");
    if !out.is_empty() {
        out.push(' ');
    }
    Some(format!("{out}{base}{n}"))
}

unsafe fn visit_children<F: FnMut(CXCursor)>(c: CXCursor, mut f: F) {
    extern "C" fn tramp<F: FnMut(CXCursor)>(
        c: CXCursor,
        _p: CXCursor,
        data: CXClientData,
    ) -> CXChildVisitResult {
        // SAFETY: `data` is the `&mut F` passed below, alive for the whole visit.
        let f = unsafe { &mut *(data as *mut F) };
        f(c);
        CXChildVisit_Continue
    }
    clang_visitChildren(c, tramp::<F>, &mut f as *mut F as *mut c_void);
}

unsafe fn take(s: CXString) -> String {
    let p = clang_getCString(s);
    let out = if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    };
    clang_disposeString(s);
    out
}

unsafe fn collect_diags(tu: CXTranslationUnit) -> Vec<Diag> {
    let n = clang_getNumDiagnostics(tu);
    let mut out = Vec::new();
    for i in 0..n {
        let d = clang_getDiagnostic(tu, i);
        let severity = clang_getDiagnosticSeverity(d) as u32;
        let message = take(clang_getDiagnosticSpelling(d));
        let loc = clang_getDiagnosticLocation(d);
        let mut file: CXFile = std::ptr::null_mut();
        let (mut line, mut col, mut off): (c_uint, c_uint, c_uint) = (0, 0, 0);
        clang_getExpansionLocation(loc, &mut file, &mut line, &mut col, &mut off);
        let file = if file.is_null() {
            String::new()
        } else {
            take(clang_getFileName(file))
        };
        out.push(Diag {
            severity,
            message,
            file,
            line,
            col,
        });
        clang_disposeDiagnostic(d);
    }
    out
}

unsafe fn collect_tokens(tu: CXTranslationUnit, main_file: CXFile, len: u32) -> Vec<Token> {
    if main_file.is_null() {
        return Vec::new();
    }
    let start = clang_getLocationForOffset(tu, main_file, 0);
    let end = clang_getLocationForOffset(tu, main_file, len);
    let range = clang_getRange(start, end);
    let mut toks: *mut CXToken = std::ptr::null_mut();
    let mut n: c_uint = 0;
    clang_tokenize(tu, range, &mut toks, &mut n);
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        let t = *toks.add(i);
        let ext = clang_getTokenExtent(tu, t);
        let mut f: CXFile = std::ptr::null_mut();
        let (mut l, mut c, mut s, mut e): (c_uint, c_uint, c_uint, c_uint) = (0, 0, 0, 0);
        clang_getSpellingLocation(clang_getRangeStart(ext), &mut f, &mut l, &mut c, &mut s);
        clang_getSpellingLocation(clang_getRangeEnd(ext), &mut f, &mut l, &mut c, &mut e);
        out.push(Token {
            text: take(clang_getTokenSpelling(tu, t)),
            kind: clang_getTokenKind(t) as i32,
            start: s,
            end: e,
        });
    }
    if !toks.is_null() {
        clang_disposeTokens(tu, toks, n);
    }
    out.retain(|t| t.kind != CXToken_Comment);
    out
}

/// libclang's name of a cursor kind, for messages about unmodelled constructs.
pub fn kind_name(kind: i32) -> String {
    if ensure_loaded().is_err() {
        return format!("cursor kind {kind}");
    }
    // SAFETY: the library is loaded; the CXString is disposed by `take`.
    unsafe { take(clang_getCursorKindSpelling(kind)) }
}
