//! Builds cltrap's [`Program`] model from libclang's tree, completing from the tokens what
//! libclang 14 leaves out (operator kinds, swizzles, vector literals, `for` clauses, `__kernel`).

#![allow(non_upper_case_globals)] // libclang's CXCursor_* constants are matched by name.

use clang_sys::*;

use crate::clang::{self, RawNode, RawTree, Token};
use crate::error::KernelError;
use crate::model::*;
use crate::options::clang_args;

/// How to parse one program: the captured build options plus anything the caller adds.
#[derive(Debug, Clone)]
pub struct ParseOptions {
    /// Name of the main file in messages and `#line` (`program.cl`).
    pub file_name: String,
    /// The `clBuildProgram` options string as captured.
    pub build_options: String,
    /// Extra clang arguments (e.g. `-I` for headers the capture stored elsewhere).
    pub extra_args: Vec<String>,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            file_name: "program.cl".into(),
            build_options: String::new(),
            extra_args: Vec::new(),
        }
    }
}

/// Parses `source` as [`crate::parse_program`] does but leaves what macro invocations hide in
/// function bodies unknown: no second, preprocessed parse and no clang binary. For callers
/// that need declarations only (a kernel's parameter types: `cltrap list`), at a fraction of
/// the cost.
pub fn parse_declarations(source: &str, build_options: &str) -> Result<Program, KernelError> {
    parse_plain(
        source,
        &ParseOptions {
            build_options: build_options.into(),
            ..ParseOptions::default()
        },
    )
}

/// The clang command line used for `opts` (so callers can re-check rewritten sources the same way).
pub fn clang_command_line(opts: &ParseOptions) -> Vec<String> {
    let mut args = vec!["-x".to_string(), "cl".to_string()];
    args.extend(clang_args(&opts.build_options).args);
    args.extend(opts.extra_args.iter().cloned());
    args
}

/// The model exactly as the user's text and libclang show it (macro holes left open).
pub(crate) fn parse_plain(source: &str, opts: &ParseOptions) -> Result<Program, KernelError> {
    let args = clang_command_line(opts);
    let raw = clang::parse(&opts.file_name, source, &args)?;
    check_diags(&raw)?;
    Builder {
        src: source,
        raw: &raw,
    }
    .program(&opts.file_name)
}

/// Parses and returns every clang diagnostic (warnings included), e.g. to see whether a
/// rewrite added warnings the user's source did not have.
pub fn diagnostics(source: &str, opts: &ParseOptions) -> Result<Vec<clang::Diag>, KernelError> {
    Ok(clang::parse(&opts.file_name, source, &clang_command_line(opts))?.diags)
}

/// Parses and returns only the clang errors (for checking that rewritten sources still compile).
pub fn compile_errors(source: &str, opts: &ParseOptions) -> Result<Vec<clang::Diag>, KernelError> {
    let raw = clang::parse(&opts.file_name, source, &clang_command_line(opts))?;
    Ok(raw.diags.into_iter().filter(|d| d.severity >= 3).collect())
}

fn check_diags(raw: &RawTree) -> Result<(), KernelError> {
    let errors: Vec<_> = raw.diags.iter().filter(|d| d.severity >= 3).collect();
    if let Some(first) = errors.first() {
        let more = if errors.len() > 1 {
            format!(" (and {} more errors)", errors.len() - 1)
        } else {
            String::new()
        };
        return Err(KernelError::Compile {
            file: first.file.clone(),
            line: first.line,
            col: first.col,
            message: first.message.clone(),
            more,
        });
    }
    Ok(())
}

struct Builder<'a> {
    src: &'a str,
    raw: &'a RawTree,
}

fn unsupported(construct: &str, line: u32, col: u32, why: &str) -> KernelError {
    KernelError::Unsupported {
        construct: construct.into(),
        line,
        col,
        why: why.into(),
    }
}

fn is_expr(kind: i32) -> bool {
    (100..=199).contains(&kind)
}

fn is_stmt_or_expr(kind: i32) -> bool {
    (100..=299).contains(&kind)
}

fn is_ref(kind: i32) -> bool {
    (40..=99).contains(&kind)
}

impl<'a> Builder<'a> {
    fn program(&self, file_name: &str) -> Result<Program, KernelError> {
        let mut functions = Vec::new();
        let mut globals = Vec::new();
        for d in &self.raw.decls {
            match d.kind {
                // Header functions matter only when defined there (a user's `-I` helper);
                // the thousands of built-in prototypes do not.
                CXCursor_FunctionDecl
                    if d.loc.start.is_some()
                        || d.children.iter().any(|c| c.kind == CXCursor_CompoundStmt) =>
                {
                    functions.push(self.function(d)?)
                }
                CXCursor_VarDecl if d.loc.start.is_some() => {
                    globals.push(Global {
                        name: d.spelling.clone(),
                        ty: d.ty.clone(),
                        span: self.span(d).ok(),
                    });
                }
                _ => {}
            }
        }
        let macro_uses = self
            .raw
            .macro_expansions
            .iter()
            .map(|(start, end, name)| MacroUse {
                start: *start,
                end: *end,
                name: name.clone(),
            })
            .collect();
        let macro_defs = self.raw.macro_defs.iter().cloned().collect();
        Ok(Program {
            file_name: file_name.into(),
            source: self.src.into(),
            functions,
            globals,
            macro_uses,
            macro_defs,
        })
    }

    fn tokens(&self) -> &'a [Token] {
        &self.raw.tokens
    }

    /// Index of the first token starting at or after `off`.
    fn tok_index(&self, off: u32) -> usize {
        self.tokens().partition_point(|t| t.start < off)
    }

    fn tok_at(&self, off: u32) -> Option<&'a Token> {
        self.tokens()
            .get(self.tok_index(off))
            .filter(|t| t.start == off)
    }

    fn span(&self, n: &RawNode) -> Result<Span, KernelError> {
        match (n.loc.start, n.loc.end) {
            (Some(start), Some(end)) if start <= end && end as usize <= self.src.len() => Ok(Span {
                start,
                end,
                line: n.loc.line,
                col: n.loc.col,
                macro_start: n.loc.start_in_macro,
                macro_end: n.loc.end_in_macro,
            }),
            _ => Err(unsupported(
                &clang::kind_name(n.kind),
                n.loc.line,
                n.loc.col,
                "its source range cannot be mapped to the program text (it comes from a header or a macro)",
            )),
        }
    }

    fn is_kernel_attr(&self, n: &RawNode) -> bool {
        let Ok(sp) = self.span(n) else { return false };
        let text = &self.src[sp.start as usize..sp.end as usize];
        if text == "__kernel" || text == "kernel" {
            return true;
        }
        // `#define KERNEL __kernel`: look through one level of the user's macros.
        self.raw.macro_defs.iter().any(|(name, body)| {
            name == text && body.iter().any(|t| t == "__kernel" || t == "kernel")
        })
    }

    fn function(&self, d: &RawNode) -> Result<Function, KernelError> {
        let in_main = d.loc.start.is_some();
        let return_type = d.ty.split(" (").next().unwrap_or("").trim().to_string();
        let is_kernel = d.kernel_cc
            || d.children
                .iter()
                .any(|c| c.kind == CXCursor_UnexposedAttr && self.is_kernel_attr(c));
        let mut params = Vec::new();
        for c in d.children.iter().filter(|c| c.kind == CXCursor_ParmDecl) {
            params.push(param(c, if in_main { self.span(c).ok() } else { None }));
        }
        let body_raw = d.children.iter().find(|c| c.kind == CXCursor_CompoundStmt);
        let (body, span, params_open, params_close) = if in_main {
            let span = self.span(d)?;
            let (open, close) = self.param_parens(d, span)?;
            let body = match body_raw {
                Some(b) => Some(self.stmt(b)?),
                None => None,
            };
            (body, Some(span), open, close)
        } else {
            (None, None, None, None)
        };
        let mut calls = Vec::new();
        if let Some(b) = body_raw {
            collect_calls(b, &mut calls);
        }
        calls.sort();
        calls.dedup();
        Ok(Function {
            name: d.spelling.clone(),
            is_kernel,
            return_type,
            params,
            body,
            span,
            params_open,
            params_close,
            calls,
        })
    }

    /// Finds the parentheses of the parameter list from the tokens: the `(` after the name.
    fn param_parens(
        &self,
        d: &RawNode,
        span: Span,
    ) -> Result<(Option<u32>, Option<u32>), KernelError> {
        let toks = self.tokens();
        let mut i = self.tok_index(span.start);
        while i + 1 < toks.len() && toks[i].start < span.end {
            if toks[i].text == d.spelling && toks[i + 1].text == "(" {
                let open = i + 1;
                let mut depth = 0i32;
                for (j, t) in toks.iter().enumerate().skip(open) {
                    match t.text.as_str() {
                        "(" => depth += 1,
                        ")" => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok((Some(toks[open].start), Some(toks[j].start)));
                            }
                        }
                        _ => {}
                    }
                }
            }
            i += 1;
        }
        Ok((None, None))
    }

    fn stmt(&self, n: &RawNode) -> Result<Stmt, KernelError> {
        let span = self.span(n)?;
        let kids = &n.children;
        let need = |i: usize| -> Result<&RawNode, KernelError> {
            kids.get(i).ok_or_else(|| {
                unsupported(
                    &clang::kind_name(n.kind),
                    span.line,
                    span.col,
                    "libclang gave fewer parts than expected",
                )
            })
        };
        let boxed = |r: &RawNode| -> Result<Box<Stmt>, KernelError> { Ok(Box::new(self.stmt(r)?)) };
        let kind = match n.kind {
            CXCursor_CompoundStmt => StmtKind::Compound(
                kids.iter()
                    .map(|c| self.stmt(c))
                    .collect::<Result<_, _>>()?,
            ),
            CXCursor_DeclStmt => StmtKind::Decl(
                kids.iter()
                    .filter(|c| c.kind == CXCursor_VarDecl)
                    .map(|c| self.var(c))
                    .collect::<Result<_, _>>()?,
            ),
            CXCursor_IfStmt => StmtKind::If {
                cond: self.expr(need(0)?)?,
                then: boxed(need(1)?)?,
                els: match kids.get(2) {
                    Some(e) => Some(boxed(e)?),
                    None => None,
                },
            },
            CXCursor_ForStmt => self.for_stmt(n, span)?,
            CXCursor_WhileStmt => StmtKind::While {
                cond: self.expr(need(0)?)?,
                body: boxed(need(1)?)?,
            },
            CXCursor_DoStmt => StmtKind::Do {
                body: boxed(need(0)?)?,
                cond: self.expr(need(1)?)?,
            },
            CXCursor_SwitchStmt => StmtKind::Switch {
                cond: self.expr(need(0)?)?,
                body: boxed(need(1)?)?,
            },
            CXCursor_CaseStmt => {
                if kids.len() != 2 {
                    return Err(unsupported(
                        "case range",
                        span.line,
                        span.col,
                        "GNU `case a ... b` is not modelled",
                    ));
                }
                let value = self.expr(&kids[0])?;
                let colon = self.colon_after(value.span.end, span);
                StmtKind::Case {
                    value,
                    body: boxed(&kids[1])?,
                    colon,
                }
            }
            CXCursor_DefaultStmt => {
                let colon = self.colon_after(span.start, span);
                StmtKind::Default {
                    body: boxed(need(0)?)?,
                    colon,
                }
            }
            CXCursor_ReturnStmt => StmtKind::Return(match kids.first() {
                Some(e) => Some(self.expr(e)?),
                None => None,
            }),
            CXCursor_BreakStmt => StmtKind::Break,
            CXCursor_ContinueStmt => StmtKind::Continue,
            CXCursor_NullStmt => StmtKind::Null,
            CXCursor_LabelStmt => StmtKind::Label {
                name: n.spelling.clone(),
                body: boxed(need(0)?)?,
            },
            CXCursor_GotoStmt => {
                StmtKind::Goto(kids.first().map(|k| k.spelling.clone()).unwrap_or_default())
            }
            k if is_expr(k) => StmtKind::Expr(self.expr(n)?),
            // `#pragma unroll` / `__attribute__((opencl_unroll_hint))` on a loop: libclang 14
            // shows the AttributedStmt as an unexposed statement around the loop.
            CXCursor_UnexposedStmt
                if kids.iter().filter(|c| is_stmt_or_expr(c.kind)).count() == 1 =>
            {
                let inner = kids
                    .iter()
                    .find(|c| is_stmt_or_expr(c.kind))
                    .ok_or_else(|| {
                        unsupported(
                            "attributed statement",
                            span.line,
                            span.col,
                            "no statement inside",
                        )
                    })?;
                StmtKind::Attributed {
                    body: boxed(inner)?,
                }
            }
            k if kids.iter().any(|c| is_stmt_or_expr(c.kind)) => {
                return Err(unsupported(
                    &clang::kind_name(k),
                    span.line,
                    span.col,
                    "cltrap's model does not know this statement, and it contains code",
                ))
            }
            k => StmtKind::Other(clang::kind_name(k)),
        };
        Ok(Stmt { kind, span })
    }

    /// Offset just past the label's `:`, when it is written in the program text (not by a macro).
    fn colon_after(&self, off: u32, span: Span) -> Option<u32> {
        if span.macro_start {
            return None;
        }
        let toks = self.tokens();
        let i = self.tok_index(off);
        toks[i..]
            .iter()
            .take_while(|t| t.start < span.end)
            .find(|t| t.text == ":")
            .map(|t| t.end)
    }

    fn var(&self, n: &RawNode) -> Result<VarDecl, KernelError> {
        let span = self.span(n)?;
        let exprs: Vec<&RawNode> = n.children.iter().filter(|c| is_expr(c.kind)).collect();
        let mut init = None;
        if let Some(last) = exprs.last() {
            let after_eq = last.loc.start.and_then(|s| {
                let i = self.tok_index(s);
                (i > 0).then(|| self.tokens()[i - 1].text == "=")
            });
            let is_init = match after_eq {
                Some(b) => b,
                None => !n.ty.contains('['),
            };
            if is_init {
                init = Some(self.expr(last)?);
            }
        }
        Ok(VarDecl {
            name: n.spelling.clone(),
            ty: n.ty.clone(),
            init,
            span,
        })
    }

    /// `for` loops omit absent clauses from libclang's children; place the present ones by the
    /// positions of the `;` tokens inside the parentheses.
    fn for_stmt(&self, n: &RawNode, span: Span) -> Result<StmtKind, KernelError> {
        let kids = &n.children;
        let mut init = None;
        let mut cond = None;
        let mut inc = None;
        let mut body = None;
        if span.macro_start {
            if kids.len() == 1 {
                return Ok(StmtKind::For {
                    init: None,
                    cond: None,
                    inc: None,
                    body: Box::new(self.stmt(&kids[0])?),
                });
            }
            if kids.len() != 4 {
                return Err(unsupported(
                    "for loop",
                    span.line,
                    span.col,
                    "it is produced by a macro and omits clauses",
                ));
            }
            return Ok(StmtKind::For {
                init: Some(Box::new(self.stmt(&kids[0])?)),
                cond: Some(self.expr(&kids[1])?),
                inc: Some(self.expr(&kids[2])?),
                body: Box::new(self.stmt(&kids[3])?),
            });
        }
        let toks = self.tokens();
        let mut i = self.tok_index(span.start) + 1;
        let open = i;
        if toks.get(open).map(|t| t.text.as_str()) != Some("(") {
            return Err(unsupported(
                "for loop",
                span.line,
                span.col,
                "no `(` after `for` in the program text",
            ));
        }
        let mut depth = 0;
        let mut semis = Vec::new();
        let mut close = None;
        while i < toks.len() {
            match toks[i].text.as_str() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(toks[i].start);
                        break;
                    }
                }
                ";" if depth == 1 => semis.push(toks[i].start),
                _ => {}
            }
            i += 1;
        }
        let (Some(close), [s1, s2]) = (close, semis.as_slice()) else {
            return Err(unsupported(
                "for loop",
                span.line,
                span.col,
                "its `(;;)` clauses are not all in the program text (macro?)",
            ));
        };
        for k in kids {
            let ks = self.span(k)?.start;
            if ks < *s1 {
                init = Some(Box::new(self.stmt(k)?));
            } else if ks < *s2 {
                cond = Some(self.expr(k)?);
            } else if ks < close {
                inc = Some(self.expr(k)?);
            } else {
                body = Some(Box::new(self.stmt(k)?));
            }
        }
        let body =
            body.ok_or_else(|| unsupported("for loop", span.line, span.col, "no body found"))?;
        Ok(StmtKind::For {
            init,
            cond,
            inc,
            body,
        })
    }

    fn expr(&self, n: &RawNode) -> Result<Expr, KernelError> {
        let mut span = self.span(n)?;
        if matches!(
            n.kind,
            CXCursor_CStyleCastExpr | CXCursor_CompoundLiteralExpr
        ) && span.is_exact()
        {
            span.end = self.balanced_end(span);
        }
        let kids: Vec<&RawNode> = n.children.iter().filter(|c| !is_ref(c.kind)).collect();
        let sub = |i: usize| -> Result<Box<Expr>, KernelError> {
            let k = kids.get(i).ok_or_else(|| {
                unsupported(
                    &clang::kind_name(n.kind),
                    span.line,
                    span.col,
                    "libclang gave fewer operands than expected",
                )
            })?;
            Ok(Box::new(self.expr(k)?))
        };
        let text = || self.src[span.start as usize..span.end as usize].to_string();
        let kind =
            match n.kind {
                CXCursor_BinaryOperator | CXCursor_CompoundAssignOperator => {
                    let (lhs, rhs) = (sub(0)?, sub(1)?);
                    let (op, op_at) = self.binop(&lhs, &rhs);
                    ExprKind::Binary {
                        op,
                        op_at,
                        lhs,
                        rhs,
                    }
                }
                CXCursor_UnaryOperator => {
                    let operand = sub(0)?;
                    ExprKind::Unary {
                        op: self.unop(span, &operand),
                        operand,
                    }
                }
                CXCursor_ConditionalOperator => ExprKind::Conditional {
                    cond: sub(0)?,
                    then: sub(1)?,
                    els: sub(2)?,
                },
                CXCursor_CallExpr => {
                    let Some(callee) = kids.first() else {
                        return Ok(Expr {
                            kind: ExprKind::Opaque {
                                what: "call".into(),
                                children: vec![],
                            },
                            ty: n.ty.clone(),
                            span,
                        });
                    };
                    let callee_span = self.span(callee)?;
                    let args = kids[1..]
                        .iter()
                        .map(|k| self.expr(k).or_else(|e| self.header_arg(k, span, e)))
                        .collect::<Result<_, _>>()?;
                    ExprKind::Call {
                        callee: n.spelling.clone(),
                        callee_span,
                        args,
                    }
                }
                CXCursor_DeclRefExpr => ExprKind::DeclRef(n.spelling.clone()),
                // A literal written in a macro body shows the macro's name in the user's
                // text: its value comes from clang (so `#define ALPHA 0.5f` reads as 0.5).
                CXCursor_IntegerLiteral => ExprKind::IntLit(self.literal(n, span)),
                CXCursor_FloatingLiteral => ExprKind::FloatLit(self.literal(n, span)),
                CXCursor_CharacterLiteral if !span.is_exact() && n.value.is_some() => {
                    ExprKind::IntLit(self.literal(n, span))
                }
                // `true` / `false` are `bool` literals of value 1 / 0.
                CXCursor_CXXBoolLiteralExpr => ExprKind::IntLit(
                    n.value
                        .clone()
                        .unwrap_or_else(|| if text() == "false" { "0" } else { "1" }.into()),
                ),
                CXCursor_StringLiteral | CXCursor_CharacterLiteral => ExprKind::OtherLit(text()),
                CXCursor_ParenExpr => ExprKind::Paren(sub(0)?),
                CXCursor_ArraySubscriptExpr => ExprKind::Index {
                    base: sub(0)?,
                    index: sub(1)?,
                },
                CXCursor_CStyleCastExpr => ExprKind::Cast {
                    operand: Box::new(self.expr(kids.last().copied().ok_or_else(|| {
                        unsupported("cast", span.line, span.col, "no operand")
                    })?)?),
                },
                CXCursor_MemberRefExpr => match kids.first() {
                    Some(b) => {
                        let base = Box::new(self.expr(b)?);
                        let arrow = self
                            .tok_at_or_after(base.span.end)
                            .is_some_and(|t| t.text == "->");
                        ExprKind::Member {
                            base,
                            field: n.spelling.clone(),
                            arrow,
                        }
                    }
                    None => ExprKind::DeclRef(n.spelling.clone()),
                },
                CXCursor_InitListExpr => ExprKind::InitList(
                    kids.iter()
                        .map(|k| self.expr(k))
                        .collect::<Result<_, _>>()?,
                ),
                CXCursor_CompoundLiteralExpr => {
                    let elems = match kids.last() {
                        Some(init) if init.kind == CXCursor_InitListExpr => init
                            .children
                            .iter()
                            .filter(|c| !is_ref(c.kind))
                            .map(|k| self.expr(k))
                            .collect::<Result<_, _>>()?,
                        _ => vec![],
                    };
                    if is_vector_type(&n.ty) {
                        ExprKind::VectorLiteral(elems)
                    } else {
                        ExprKind::Opaque {
                            what: "compound literal".into(),
                            children: elems,
                        }
                    }
                }
                CXCursor_UnaryExpr => ExprKind::SizeOf,
                CXCursor_StmtExpr => {
                    return Err(unsupported(
                        "statement expression `({ ... })`",
                        span.line,
                        span.col,
                        "GNU statement expressions are not modelled",
                    ))
                }
                CXCursor_UnexposedExpr if kids.len() == 1 => {
                    let inner = self.expr(kids[0])?;
                    if inner.span.start == span.start && inner.span.end == span.end {
                        ExprKind::Implicit(Box::new(inner))
                    } else if let Some(c) = self.swizzle_after(&inner, span) {
                        ExprKind::Swizzle {
                            base: Box::new(inner),
                            components: c,
                        }
                    } else {
                        ExprKind::Opaque {
                            what: clang::kind_name(n.kind),
                            children: vec![inner],
                        }
                    }
                }
                k => ExprKind::Opaque {
                    what: clang::kind_name(k),
                    children: kids
                        .iter()
                        .filter(|c| is_expr(c.kind))
                        .map(|k| self.expr(k))
                        .collect::<Result<_, _>>()?,
                },
            };
        // A node that ends with such a literal (`c ? x : (float4)(0.0f)`) gets libclang's short
        // end too: it ends no earlier than its last operand.
        let mut e = Expr {
            kind,
            ty: n.ty.clone(),
            span,
        };
        if e.span.is_exact() {
            e.span.end = e
                .children()
                .iter()
                .filter(|c| c.span.is_exact())
                .map(|c| c.span.end)
                .fold(e.span.end, u32::max);
        }
        Ok(e)
    }

    /// An argument whose tree lies in a header: clang puts a `constant sampler_t`'s
    /// initialiser (from the header that declares it) where the program passes the sampler.
    /// It is kept as an opaque leaf over the call's range, marked as macro-made so no pass
    /// edits it; anything else that cannot be mapped stays an error.
    fn header_arg(&self, n: &RawNode, call: Span, err: KernelError) -> Result<Expr, KernelError> {
        if n.loc.start.is_some() || !n.ty.contains("sampler_t") {
            return Err(err);
        }
        Ok(Expr {
            kind: ExprKind::Opaque {
                what: "a sampler initialised in a header".into(),
                children: vec![],
            },
            ty: n.ty.clone(),
            span: Span {
                macro_start: true,
                macro_end: true,
                ..call
            },
        })
    }

    /// The end of `span` extended over the `)` tokens its text leaves open: libclang ends a
    /// vector splat `(float4)(0.0f)` after `0.0f`, and an edit by that range (a mutant
    /// wrapping the value) would cut the literal in half.
    fn balanced_end(&self, span: Span) -> u32 {
        let toks = self.tokens();
        let mut depth = 0i32;
        let mut i = self.tok_index(span.start);
        while i < toks.len() && toks[i].start < span.end {
            match toks[i].text.as_str() {
                "(" => depth += 1,
                ")" => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        let mut end = span.end;
        while depth > 0 && toks.get(i).is_some_and(|t| t.text == ")") {
            end = toks[i].end;
            depth -= 1;
            i += 1;
        }
        end
    }

    /// A literal's text: as written, or clang's value when a macro wrote it.
    fn literal(&self, n: &RawNode, span: Span) -> String {
        match (&n.value, span.is_exact()) {
            (Some(v), false) => v.clone(),
            _ => self.src[span.start as usize..span.end as usize].to_string(),
        }
    }

    fn tok_at_or_after(&self, off: u32) -> Option<&'a Token> {
        self.tokens().get(self.tok_index(off))
    }

    /// `base . ident` ending exactly at the node's end is a swizzle (libclang leaves it unexposed).
    fn swizzle_after(&self, base: &Expr, span: Span) -> Option<String> {
        if span.macro_end {
            return None;
        }
        let i = self.tok_index(base.span.end);
        let (dot, id) = (self.tokens().get(i)?, self.tokens().get(i + 1)?);
        (dot.text == "." && id.end == span.end).then(|| id.text.clone())
    }

    fn binop(&self, lhs: &Expr, rhs: &Expr) -> (Option<BinOp>, Option<u32>) {
        match self.tok_at_or_after(lhs.span.end) {
            Some(t) if t.end <= rhs.span.start && lhs.span.end <= rhs.span.start => (
                BinOp::from_token(&t.text),
                BinOp::from_token(&t.text).map(|_| t.start),
            ),
            _ => (None, None),
        }
    }

    fn unop(&self, span: Span, operand: &Expr) -> Option<UnOp> {
        if span.macro_start || span.macro_end {
            return None;
        }
        if span.start < operand.span.start {
            Some(match self.tok_at(span.start)?.text.as_str() {
                "++" => UnOp::PreInc,
                "--" => UnOp::PreDec,
                "&" => UnOp::AddrOf,
                "*" => UnOp::Deref,
                "+" => UnOp::Plus,
                "-" => UnOp::Minus,
                "~" => UnOp::BitNot,
                "!" => UnOp::LNot,
                _ => return None,
            })
        } else {
            match self.tok_at(operand.span.end)?.text.as_str() {
                "++" => Some(UnOp::PostInc),
                "--" => Some(UnOp::PostDec),
                _ => None,
            }
        }
    }
}

fn collect_calls(n: &RawNode, out: &mut Vec<String>) {
    if n.kind == CXCursor_CallExpr && !n.spelling.is_empty() {
        out.push(n.spelling.clone());
    }
    for c in &n.children {
        collect_calls(c, out);
    }
}

/// `float4`, `uchar16`, `int2`... (OpenCL vector types end in their width).
pub fn is_vector_type(ty: &str) -> bool {
    let base = ty.rsplit(' ').next().unwrap_or(ty);
    ["2", "3", "4", "8", "16"].iter().any(|w| base.ends_with(w))
        && base
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .chars()
            .all(|c| c.is_ascii_alphabetic())
}

fn param(n: &RawNode, span: Option<Span>) -> Param {
    let ty = n.ty.clone();
    let spaces = [
        ("__global", AddressSpace::Global),
        ("__constant", AddressSpace::Constant),
        ("__local", AddressSpace::Local),
        ("__generic", AddressSpace::Generic),
        ("__private", AddressSpace::Private),
    ];
    let (address_space, pointee) = match ty.rfind('*') {
        Some(star) => {
            let pointee_full = &ty[..star];
            let space = spaces
                .iter()
                .find(|(w, _)| pointee_full.split_whitespace().any(|t| t == *w))
                .map(|(_, s)| *s);
            let pointee: Vec<&str> = pointee_full
                .split_whitespace()
                .filter(|t| !spaces.iter().any(|(w, _)| w == t))
                .collect();
            (
                space.unwrap_or(AddressSpace::Private),
                Some(pointee.join(" ")),
            )
        }
        None if ty.contains("image") || ty.contains("pipe") => (AddressSpace::Global, None),
        None => (AddressSpace::Private, None),
    };
    Param {
        name: n.spelling.clone(),
        ty,
        address_space,
        pointee,
        span,
    }
}
