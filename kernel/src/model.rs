//! cltrap's own typed model of an OpenCL C program: what every pass (coverage, schedule
//! permutation, fuzzing, solving, mutation) reads instead of talking to libclang. Every node
//! carries its exact byte range in the user's file so passes can edit the original text.

use serde::{Deserialize, Serialize};

/// A byte range of the user's main file, with the 1-based line and column of its start.
///
/// Ranges produced by macro expansion are mapped to the macro invocation in the user's text;
/// `macro_start` / `macro_end` say when that happened, so a pass that needs to edit inside the
/// node can refuse instead of editing the wrong bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
    /// 1-based line of `start`.
    pub line: u32,
    /// 1-based column (in bytes) of `start`.
    pub col: u32,
    /// The first token came from a macro expansion (`start` is the invocation's start).
    pub macro_start: bool,
    /// The last token came from a macro expansion (`end` is the invocation's end).
    pub macro_end: bool,
}

impl Span {
    /// True when neither end came from a macro, i.e. the bytes are exactly the node's tokens.
    pub fn is_exact(&self) -> bool {
        !self.macro_start && !self.macro_end
    }
}

/// OpenCL address spaces, because coverage, fuzzing and race checks treat them differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AddressSpace {
    /// `__private` (or none given).
    Private,
    /// `__global`.
    Global,
    /// `__constant`.
    Constant,
    /// `__local`.
    Local,
    /// `__generic` (OpenCL C 2.0 unqualified pointers).
    Generic,
}

/// A whole parsed program: the functions the passes instrument, and the source they edit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Program {
    /// Name given to the main file (`program.cl`).
    pub file_name: String,
    /// The user's source text, unmodified.
    pub source: String,
    /// Kernels and helper functions, definitions and prototypes, in source order.
    pub functions: Vec<Function>,
    /// Program-scope variables (`__constant` tables, ...), name and type.
    pub globals: Vec<Global>,
    /// Macro invocations in the main file, so passes can tell what a macro hides.
    pub macro_uses: Vec<MacroUse>,
    /// Macros defined in the main file: name and body tokens.
    pub macro_defs: std::collections::BTreeMap<String, Vec<String>>,
}

impl Program {
    /// The kernels (functions with `__kernel`) that are defined in the program.
    pub fn kernels(&self) -> impl Iterator<Item = &Function> {
        self.functions
            .iter()
            .filter(|f| f.is_kernel && f.body.is_some())
    }

    /// The definition (with a body) of the function called `name`, if any.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions
            .iter()
            .find(|f| f.name == name && f.body.is_some())
    }

    /// Whether the macro invocation starting at `offset` may contain a branch (`&&`, `||`,
    /// `?:`) in its arguments or (recursively) in the bodies of the macros it expands.
    pub fn macro_may_branch(&self, offset: u32) -> bool {
        let Some(u) = self.macro_uses.iter().find(|u| u.start == offset) else {
            return true;
        };
        let text = &self.source[u.start as usize..(u.end as usize).min(self.source.len())];
        if text.contains("&&") || text.contains("||") || text.contains('?') {
            return true;
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![u.name.clone()];
        while let Some(name) = todo.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let Some(body) = self.macro_defs.get(&name) else {
                continue;
            };
            for t in body {
                if t == "&&" || t == "||" || t == "?" {
                    return true;
                }
                if self.macro_defs.contains_key(t) {
                    todo.push(t.clone());
                }
            }
        }
        false
    }

    /// Whether the macro invocation starting at `offset` expands to nothing but one call of
    /// `callee` (`#define SYNC barrier(CLK_LOCAL_MEM_FENCE)`, also through object-like macros
    /// naming each other), so wrapping the invocation wraps exactly that call. A macro that
    /// also writes statements (`#define SUM(s) if (...) {...} barrier(...);`) is not.
    pub fn macro_is_single_call(&self, offset: u32, callee: &str) -> bool {
        let Some(u) = self.macro_uses.iter().find(|u| u.start == offset) else {
            return false;
        };
        let mut name = u.name.clone();
        for _ in 0..8 {
            let Some(body) = self.macro_defs.get(&name) else {
                return false;
            };
            // A function-like macro's body tokens start with its parameter list.
            let body: &[String] = match body.first().map(String::as_str) {
                Some("(") if self.source[u.start as usize..].len() > name.len() => {
                    match body.iter().position(|t| t == ")") {
                        Some(close) if self.is_function_like(&name) => &body[close + 1..],
                        _ => body,
                    }
                }
                _ => body,
            };
            match body {
                [one] if self.macro_defs.contains_key(one) => name = one.clone(),
                [first, open, .., last] => {
                    let mut depth = 0i32;
                    let closes_at_end = body[1..].iter().enumerate().all(|(i, t)| {
                        match t.as_str() {
                            "(" => depth += 1,
                            ")" => depth -= 1,
                            _ => {}
                        }
                        depth > 0 || i == body.len() - 2
                    });
                    return first == callee
                        && open == "("
                        && last == ")"
                        && closes_at_end
                        && !body.iter().any(|t| t == ";" || t == "{");
                }
                _ => return false,
            }
        }
        false
    }

    /// Whether macro `name` is defined function-like (`#define F(x) ...`: no space between
    /// the name and `(` in its definition).
    fn is_function_like(&self, name: &str) -> bool {
        let needle = format!("define {name}(");
        self.source.contains(&needle)
    }

    /// Line and column (1-based) of a byte offset of the source, for reports.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        line_col(&self.source, offset)
    }
}

/// Line and column (1-based, column in bytes) of `offset` in `text`.
pub fn line_col(text: &str, offset: u32) -> (u32, u32) {
    let upto = &text.as_bytes()[..(offset as usize).min(text.len())];
    let line = upto.iter().filter(|b| **b == b'\n').count() as u32 + 1;
    let col = upto.iter().rev().take_while(|b| **b != b'\n').count() as u32 + 1;
    (line, col)
}

/// One macro invocation in the user's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacroUse {
    /// Byte offset of the macro name.
    pub start: u32,
    /// Byte offset one past the invocation (after `)` for function-like macros).
    pub end: u32,
    /// Macro name.
    pub name: String,
}

/// A program-scope variable.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Global {
    /// Variable name.
    pub name: String,
    /// Type spelling as clang prints it (`__constant int[4]`).
    pub ty: String,
    /// Where it is declared (absent when it comes from a header).
    pub span: Option<Span>,
}

/// A kernel or helper function (definition or prototype).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Function {
    /// Function name.
    pub name: String,
    /// Declared with `__kernel` / `kernel`.
    pub is_kernel: bool,
    /// Return type spelling.
    pub return_type: String,
    /// Parameters in order.
    pub params: Vec<Param>,
    /// The body, for definitions.
    pub body: Option<Stmt>,
    /// The whole declaration's range; absent when the function is defined in a header.
    pub span: Option<Span>,
    /// Byte offset of the `(` that opens the parameter list (main-file functions only).
    pub params_open: Option<u32>,
    /// Byte offset of the `)` that closes the parameter list (main-file functions only).
    pub params_close: Option<u32>,
    /// Names of every function the body calls (built-ins included), sorted; known even for
    /// functions defined in headers, so passes can see what they cannot edit.
    pub calls: Vec<String>,
}

/// A function parameter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Param {
    /// Parameter name (may be empty in prototypes).
    pub name: String,
    /// Full type spelling (`__global float4 *__private`).
    pub ty: String,
    /// For pointers, the address space pointed to; for values, where the value lives.
    pub address_space: AddressSpace,
    /// For pointers, the pointee type without address space (`float4`, `const S`).
    pub pointee: Option<String>,
    /// Where it is declared.
    pub span: Option<Span>,
}

/// A statement with its range.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// Where it is (absent only for statements from headers).
    pub span: Span,
}

/// Statement kinds; `Other` keeps statements the passes need not understand, by clang name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "stmt", content = "of", rename_all = "snake_case")]
#[allow(missing_docs)] // variant fields are named after the syntax they hold
pub enum StmtKind {
    /// `{ ... }`.
    Compound(Vec<Stmt>),
    /// A declaration of local variables.
    Decl(Vec<VarDecl>),
    /// An expression statement (including `barrier(...)` calls).
    Expr(Expr),
    /// `if (cond) then else els`.
    If {
        cond: Expr,
        then: Box<Stmt>,
        els: Option<Box<Stmt>>,
    },
    /// `for (init; cond; inc) body`.
    For {
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        inc: Option<Expr>,
        body: Box<Stmt>,
    },
    /// `while (cond) body`.
    While { cond: Expr, body: Box<Stmt> },
    /// `do body while (cond);`.
    Do { body: Box<Stmt>, cond: Expr },
    /// `switch (cond) body`.
    Switch { cond: Expr, body: Box<Stmt> },
    /// `case value: body`; `colon` is the byte offset just past the `:` (absent when a macro
    /// wrote the label).
    Case {
        value: Expr,
        body: Box<Stmt>,
        colon: Option<u32>,
    },
    /// `default: body`; `colon` as for `Case`.
    Default { body: Box<Stmt>, colon: Option<u32> },
    /// `return` with its value.
    Return(Option<Expr>),
    /// `break`.
    Break,
    /// `continue`.
    Continue,
    /// `;`.
    Null,
    /// `label: body`.
    Label { name: String, body: Box<Stmt> },
    /// `goto label`.
    Goto(String),
    /// A statement with attributes: `#pragma unroll` or `__attribute__((opencl_unroll_hint))`
    /// before a loop. The span starts at the pragma or attribute.
    Attributed { body: Box<Stmt> },
    /// Anything else without sub-statements, by libclang's kind name.
    Other(String),
}

/// A local variable declaration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VarDecl {
    /// Name.
    pub name: String,
    /// Type spelling (`__private float4`, `__local int[64]`).
    pub ty: String,
    /// Initializer, when given with `=`.
    pub init: Option<Expr>,
    /// Where it is.
    pub span: Span,
}

/// An expression with its type (clang's spelling) and range.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Type spelling as clang prints it.
    pub ty: String,
    /// Where it is.
    pub span: Span,
}

/// Binary operators, recovered from the tokens (libclang 14 does not expose them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum BinOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    LAnd,
    LOr,
    Assign,
    MulAssign,
    DivAssign,
    RemAssign,
    AddAssign,
    SubAssign,
    ShlAssign,
    ShrAssign,
    AndAssign,
    XorAssign,
    OrAssign,
    Comma,
}

impl BinOp {
    /// `=` and the compound assignments (`+=`, `<<=`, ...): the operators that store into
    /// their left operand (what the interface's roles and the native checks' writes look for).
    pub fn is_assignment(self) -> bool {
        use BinOp::*;
        matches!(
            self,
            Assign
                | MulAssign
                | DivAssign
                | RemAssign
                | AddAssign
                | SubAssign
                | ShlAssign
                | ShrAssign
                | AndAssign
                | XorAssign
                | OrAssign
        )
    }

    /// Parses an operator token.
    pub fn from_token(t: &str) -> Option<BinOp> {
        use BinOp::*;
        Some(match t {
            "*" => Mul,
            "/" => Div,
            "%" => Rem,
            "+" => Add,
            "-" => Sub,
            "<<" => Shl,
            ">>" => Shr,
            "<" => Lt,
            ">" => Gt,
            "<=" => Le,
            ">=" => Ge,
            "==" => Eq,
            "!=" => Ne,
            "&" => BitAnd,
            "^" => BitXor,
            "|" => BitOr,
            "&&" => LAnd,
            "||" => LOr,
            "=" => Assign,
            "*=" => MulAssign,
            "/=" => DivAssign,
            "%=" => RemAssign,
            "+=" => AddAssign,
            "-=" => SubAssign,
            "<<=" => ShlAssign,
            ">>=" => ShrAssign,
            "&=" => AndAssign,
            "^=" => XorAssign,
            "|=" => OrAssign,
            "," => Comma,
            _ => return None,
        })
    }

    /// The operator's spelling.
    pub fn token(self) -> &'static str {
        use BinOp::*;
        match self {
            Mul => "*",
            Div => "/",
            Rem => "%",
            Add => "+",
            Sub => "-",
            Shl => "<<",
            Shr => ">>",
            Lt => "<",
            Gt => ">",
            Le => "<=",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            BitAnd => "&",
            BitXor => "^",
            BitOr => "|",
            LAnd => "&&",
            LOr => "||",
            Assign => "=",
            MulAssign => "*=",
            DivAssign => "/=",
            RemAssign => "%=",
            AddAssign => "+=",
            SubAssign => "-=",
            ShlAssign => "<<=",
            ShrAssign => ">>=",
            AndAssign => "&=",
            XorAssign => "^=",
            OrAssign => "|=",
            Comma => ",",
        }
    }
}

/// Unary operators, recovered from the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum UnOp {
    PreInc,
    PreDec,
    PostInc,
    PostDec,
    AddrOf,
    Deref,
    Plus,
    Minus,
    BitNot,
    LNot,
}

/// Expression kinds. `Opaque` keeps what the model does not break down, with its children.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "expr", content = "of", rename_all = "snake_case")]
#[allow(missing_docs)] // variant fields are named after the syntax they hold
pub enum ExprKind {
    /// `lhs op rhs` (including assignments and compound assignments); `op` is `None` only when
    /// the operator token itself comes from a macro body; `op_at` is its byte offset.
    Binary {
        op: Option<BinOp>,
        op_at: Option<u32>,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `op operand` or `operand op`; `op` is `None` only when the token is inside a macro.
    Unary {
        op: Option<UnOp>,
        operand: Box<Expr>,
    },
    /// `cond ? then : els`.
    Conditional {
        cond: Box<Expr>,
        then: Box<Expr>,
        els: Box<Expr>,
    },
    /// A call; `callee` is the function's name; `callee_span` its name in the text.
    Call {
        callee: String,
        callee_span: Span,
        args: Vec<Expr>,
    },
    /// A reference to a variable, parameter, function or enumerator.
    DeclRef(String),
    /// Integer literal, as written.
    IntLit(String),
    /// Floating literal, as written.
    FloatLit(String),
    /// Character or string literal, as written.
    OtherLit(String),
    /// `base.field` / `base->field`.
    Member {
        base: Box<Expr>,
        field: String,
        arrow: bool,
    },
    /// A vector swizzle `base.xyzw` / `base.s01` / `base.lo`.
    Swizzle { base: Box<Expr>, components: String },
    /// `base[index]`.
    Index { base: Box<Expr>, index: Box<Expr> },
    /// `(type) operand`.
    Cast { operand: Box<Expr> },
    /// An implicit conversion clang inserted; `ty` of the outer expression is the target type.
    Implicit(Box<Expr>),
    /// `( inner )`.
    Paren(Box<Expr>),
    /// `(float4)(a, b, c, d)` vector literal.
    VectorLiteral(Vec<Expr>),
    /// `{ a, b }` or a compound literal's initialiser list.
    InitList(Vec<Expr>),
    /// `sizeof` / `vec_step` / `alignof` (the operand is never evaluated).
    SizeOf,
    /// Anything else, by libclang's kind name, with its sub-expressions.
    Opaque { what: String, children: Vec<Expr> },
}

impl Expr {
    /// The expression with parentheses and implicit conversions peeled off.
    pub fn peel(&self) -> &Expr {
        match &self.kind {
            ExprKind::Paren(e) | ExprKind::Implicit(e) => e.peel(),
            _ => self,
        }
    }

    /// Sub-expressions, in source order (not those of `sizeof`, which are never evaluated).
    pub fn children(&self) -> Vec<&Expr> {
        use ExprKind::*;
        match &self.kind {
            Binary { lhs, rhs, .. } => vec![lhs, rhs],
            Unary { operand, .. } | Cast { operand } => vec![operand],
            Conditional { cond, then, els } => vec![cond, then, els],
            Call { args, .. } => args.iter().collect(),
            Member { base, .. } | Swizzle { base, .. } => vec![base],
            Index { base, index } => vec![base, index],
            Implicit(e) | Paren(e) => vec![e],
            VectorLiteral(v) | InitList(v) => v.iter().collect(),
            Opaque { children, .. } => children.iter().collect(),
            DeclRef(_) | IntLit(_) | FloatLit(_) | OtherLit(_) | SizeOf => vec![],
        }
    }
}

impl Expr {
    /// Sub-expressions, mutable, in the same order as [`Expr::children`].
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        use ExprKind::*;
        match &mut self.kind {
            Binary { lhs, rhs, .. } => vec![lhs, rhs],
            Unary { operand, .. } | Cast { operand } => vec![operand],
            Conditional { cond, then, els } => vec![cond, then, els],
            Call { args, .. } => args.iter_mut().collect(),
            Member { base, .. } | Swizzle { base, .. } => vec![base],
            Index { base, index } => vec![base, index],
            Implicit(e) | Paren(e) => vec![e],
            VectorLiteral(v) | InitList(v) => v.iter_mut().collect(),
            Opaque { children, .. } => children.iter_mut().collect(),
            DeclRef(_) | IntLit(_) | FloatLit(_) | OtherLit(_) | SizeOf => vec![],
        }
    }
}

/// Walks every expression of a statement tree (pre-order), for analyses that only need calls
/// or operators.
pub fn visit_exprs<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a Expr)) {
    fn expr<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
        f(e);
        for c in e.children() {
            expr(c, f);
        }
    }
    visit_stmts(s, &mut |st| match &st.kind {
        StmtKind::Decl(vars) => vars
            .iter()
            .filter_map(|v| v.init.as_ref())
            .for_each(|e| expr(e, f)),
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => expr(e, f),
        StmtKind::If { cond, .. }
        | StmtKind::While { cond, .. }
        | StmtKind::Do { cond, .. }
        | StmtKind::Switch { cond, .. } => expr(cond, f),
        StmtKind::For { cond, inc, .. } => {
            cond.iter().chain(inc.iter()).for_each(|e| expr(e, f));
        }
        _ => {}
    });
}

/// Walks every statement of a tree (pre-order).
pub fn visit_stmts<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a Stmt)) {
    f(s);
    match &s.kind {
        StmtKind::Compound(v) => v.iter().for_each(|c| visit_stmts(c, f)),
        StmtKind::If { then, els, .. } => {
            visit_stmts(then, f);
            if let Some(e) = els {
                visit_stmts(e, f);
            }
        }
        StmtKind::For { init, body, .. } => {
            if let Some(i) = init {
                visit_stmts(i, f);
            }
            visit_stmts(body, f);
        }
        StmtKind::While { body, .. }
        | StmtKind::Do { body, .. }
        | StmtKind::Switch { body, .. }
        | StmtKind::Case { body, .. }
        | StmtKind::Default { body, .. }
        | StmtKind::Label { body, .. }
        | StmtKind::Attributed { body } => visit_stmts(body, f),
        _ => {}
    }
}
