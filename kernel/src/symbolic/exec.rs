//! The walker: forks a path state at every branch, keeps only feasible paths, and at every
//! branch point asks z3 whether an uncovered target side is reachable.

use super::builtins;
use super::value::{self, binary, convert, ite_val, widen64, Val};
use super::{Assignment, Geometry, Limits, SymArg, Target, TargetResult, Verdict};
use crate::coverage::{Construct, Outcome};
use crate::interface::{
    layout_of, parse_structs, parse_value_type, strip_qualifiers, StructLayout, ValueType,
};
use crate::model::{BinOp, Expr, ExprKind, Function, Program, Span, Stmt, StmtKind, UnOp};
use std::time::{Duration, Instant};
use z3::ast::{Array, Ast, Bool, BV};
use z3::{Model, Params, SatResult, Solver, Sort};

#[derive(Debug, Clone)]
struct Region {
    elem: ValueType,
    /// Elements are structs with this layout (`elem` is then unused).
    layout: Option<StructLayout>,
    array: Array,
    /// The argument whose buffer this is (reads of it are inputs to report).
    arg: Option<usize>,
    /// Elements (reads must stay in bounds).
    len: Option<u64>,
}

#[derive(Debug, Clone)]
struct State {
    vars: Vec<(String, Val)>,
    globals: Vec<(String, Val)>,
    regions: Vec<Region>,
    pc: Vec<Bool>,
    reads: Vec<(usize, BV)>,
}

impl State {
    /// Adds a memory region and returns a pointer to its start (for `dims` of more than one
    /// dimension, a pointer to its rows): how every buffer, `__local` and array enters a path.
    fn add_region(&mut self, region: Region, dims: &[u64]) -> Val {
        self.regions.push(region);
        let region = self.regions.len() - 1;
        let off = BV::from_u64(0, 64);
        if dims.len() > 1 {
            Val::Rows {
                region,
                off,
                dims: dims[1..].to_vec(),
            }
        } else {
            Val::Ptr { region, off }
        }
    }
}

/// An unconstrained array of `bits`-bit elements indexed by 64-bit offsets, named `name`
/// (the name shows in the solver's model, where inputs are read back by it).
fn input_array(name: String, bits: u32) -> Array {
    Array::new_const(name, &Sort::bitvector(64), &Sort::bitvector(bits))
}

enum Flow {
    Normal,
    Break,
    Continue,
    Return(Val),
}

struct Slot {
    t: Target,
    verdict: Option<Verdict>,
    time: Duration,
}

struct Exec<'a> {
    program: &'a Program,
    geo: &'a Geometry,
    limits: &'a Limits,
    solver: Solver,
    slots: Vec<Slot>,
    gid: Vec<BV>,
    /// The raw bits of each by-value argument, and the initial array of each buffer.
    arg_bits: Vec<(usize, BV)>,
    arg_arrays: Vec<Option<(Array, ValueType)>>,
    start: Instant,
    states: usize,
    depth: u32,
    unsupported: Option<String>,
    /// Struct layouts of the program.
    structs: Vec<StructLayout>,
    /// Why the exploration stopped early (time, state budget): open targets time out.
    incomplete: Option<String>,
    /// Paths cut without stopping (loop bound, live-path cap, solver unknown).
    cut: Option<String>,
}

type Outs<T> = Vec<(State, T)>;

pub(super) fn run(
    program: &Program,
    k: &Function,
    geo: &Geometry,
    args: &[SymArg],
    targets: &[Target],
    limits: &Limits,
) -> Vec<TargetResult> {
    let solver = Solver::new();
    let mut params = Params::new();
    params.set_u32("timeout", limits.query_ms);
    solver.set_params(&params);
    let mut st = State {
        vars: Vec::new(),
        globals: Vec::new(),
        regions: Vec::new(),
        pc: Vec::new(),
        reads: Vec::new(),
    };
    let mut gid = Vec::new();
    for d in 0..3 {
        let g = BV::new_const(format!("global_id{d}"), 64);
        let size = geo.global.get(d).copied().unwrap_or(1);
        let off = geo
            .offset
            .as_ref()
            .and_then(|o| o.get(d))
            .copied()
            .unwrap_or(0);
        st.pc.push(g.bvuge(BV::from_u64(off, 64)));
        st.pc.push(g.bvult(BV::from_u64(off + size, 64)));
        gid.push(g);
    }
    let mut arg_bits: Vec<(usize, BV)> = Vec::new();
    let mut arg_arrays = Vec::new();
    for (i, p) in k.params.iter().enumerate() {
        let (v, arr) = match args.get(i) {
            Some(SymArg::Value(t)) => {
                let raw = BV::new_const(format!("arg{i}"), t.size() as u32 * 8);
                arg_bits.push((i, raw.clone()));
                (Some(Val::from_bits(&raw, *t)), None)
            }
            Some(SymArg::Buffer { elem, len }) => {
                let a = input_array(format!("buf{i}"), elem.size() as u32 * 8);
                let region = Region {
                    layout: None,
                    elem: *elem,
                    array: a.clone(),
                    arg: Some(i),
                    len: Some(*len),
                };
                (Some(st.add_region(region, &[])), Some((a, *elem)))
            }
            Some(SymArg::StructBuffer { layout, len }) => {
                let a = input_array(format!("buf{i}"), layout.size as u32 * 8);
                let region = Region {
                    layout: Some(layout.clone()),
                    elem: u8_type(),
                    array: a.clone(),
                    arg: Some(i),
                    len: Some(*len),
                };
                (Some(st.add_region(region, &[])), Some((a, u8_type())))
            }
            Some(SymArg::Struct(layout)) => {
                let raw = BV::new_const(format!("arg{i}"), layout.size as u32 * 8);
                arg_bits.push((i, raw.clone()));
                (
                    Some(Val::Struct {
                        bits: raw,
                        layout: layout.clone(),
                    }),
                    None,
                )
            }
            Some(SymArg::Local { elem: Some(elem) }) => {
                let region = Region {
                    layout: None,
                    elem: *elem,
                    array: input_array(format!("local{i}"), elem.size() as u32 * 8),
                    arg: None,
                    len: None,
                };
                (Some(st.add_region(region, &[])), None)
            }
            _ => (None, None),
        };
        if let Some(v) = &v {
            st.vars.push((p.name.clone(), v.clone()));
        }
        arg_arrays.push(arr);
    }
    let mut ex = Exec {
        program,
        geo,
        limits,
        solver,
        slots: targets
            .iter()
            .map(|t| Slot {
                t: *t,
                verdict: None,
                time: Duration::ZERO,
            })
            .collect(),
        gid,
        arg_bits,
        arg_arrays,
        start: Instant::now(),
        states: 0,
        depth: 0,
        unsupported: None,
        structs: parse_structs(&program.source),
        incomplete: None,
        cut: None,
    };
    if let Some(body) = &k.body {
        let _ = ex.stmt(body, st);
    }
    let elapsed = ex.start.elapsed();
    ex.slots
        .into_iter()
        .map(|s| {
            let do_zero = s.t.construct == Construct::Do && s.t.outcome == Outcome::Zero;
            let (verdict, time) = match s.verdict {
                Some(v) => (v, s.time),
                // A do-while body always runs at least once.
                None if do_zero => (Verdict::Unsat, elapsed),
                None => (
                    if let Some(why) = ex.incomplete.as_ref().or(ex.cut.as_ref()) {
                        Verdict::Timeout(why.clone())
                    } else if let Some(what) = &ex.unsupported {
                        Verdict::Unsupported(what.clone())
                    } else {
                        Verdict::Unsat
                    },
                    elapsed,
                ),
            };
            TargetResult {
                id: s.t.id,
                verdict,
                time,
            }
        })
        .collect()
}

fn at(span: Span) -> String {
    format!("{}:{}", span.line, span.col)
}

impl<'a> Exec<'a> {
    fn unsupported(&mut self, what: impl Into<String>, span: Span) {
        if self.unsupported.is_none() {
            self.unsupported = Some(format!("{} at line {}", what.into(), at(span)));
        }
    }

    fn stopped(&mut self) -> bool {
        if self.incomplete.is_some() {
            return true;
        }
        if self.start.elapsed() > self.limits.time {
            self.incomplete = Some(format!("time limit {:?} reached", self.limits.time));
            return true;
        }
        if self.slots.iter().all(|s| s.verdict.is_some()) {
            return true;
        }
        false
    }

    fn check(&mut self, pc: &[Bool], extra: Option<&Bool>) -> SatResult {
        self.solver.push();
        for c in pc {
            self.solver.assert(c);
        }
        if let Some(e) = extra {
            self.solver.assert(e);
        }
        let r = self.solver.check();
        if r != SatResult::Sat {
            self.solver.pop(1);
        }
        r
    }

    /// Whether `pc ∧ extra` may hold (unknown counts as no, and marks the run incomplete).
    fn feasible(&mut self, pc: &[Bool], extra: &Bool) -> bool {
        match self.check(pc, Some(extra)) {
            SatResult::Sat => {
                self.solver.pop(1);
                true
            }
            SatResult::Unsat => false,
            SatResult::Unknown => {
                self.cut
                    .get_or_insert_with(|| "the solver gave up on a path condition".into());
                false
            }
        }
    }

    /// At a branch point: tries every open target matching the span, construct and outcome
    /// whose condition is `cond`.
    fn reach(
        &mut self,
        st: &State,
        span: Span,
        constructs: &[Construct],
        outcome: Outcome,
        cond: &Bool,
    ) {
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if s.verdict.is_some()
                || s.t.start != span.start
                || s.t.end != span.end
                || s.t.outcome != outcome
                || !constructs.contains(&s.t.construct)
            {
                continue;
            }
            match self.check(&st.pc, Some(cond)) {
                SatResult::Sat => {
                    let m = self.solver.get_model();
                    self.solver.pop(1);
                    if let Some(m) = m {
                        let a = self.assignment(&m, st);
                        self.slots[i].verdict = Some(Verdict::Solved(a));
                        self.slots[i].time = self.start.elapsed();
                    }
                }
                SatResult::Unknown => {
                    self.cut
                        .get_or_insert_with(|| "the solver gave up on a target".into());
                }
                SatResult::Unsat => {}
            }
        }
    }

    /// Both sides of a two-way branch.
    fn reach2(&mut self, st: &State, span: Span, constructs: &[Construct], c: &Bool) {
        self.reach(st, span, constructs, Outcome::True, c);
        self.reach(st, span, constructs, Outcome::False, &c.not());
    }

    fn assignment(&self, m: &Model, st: &State) -> Assignment {
        let mut a = Assignment::default();
        for (i, bits) in &self.arg_bits {
            // Only values the path constrains; the rest keep the base case's values.
            let Some(e) = m.eval(bits, false) else {
                continue;
            };
            if e.to_string().contains(&format!("arg{i}")) {
                continue;
            }
            if let Some(b) = bv_bytes(m, &e) {
                a.scalars.push((*i, b));
            }
        }
        for (arg, idx) in &st.reads {
            let Some((arr, _)) = &self.arg_arrays[*arg] else {
                continue;
            };
            let Some(i) = m.eval(idx, true).and_then(|i| i.as_u64()) else {
                continue;
            };
            let Some(val) = arr.select(&BV::from_u64(i, 64)).as_bv() else {
                continue;
            };
            if let Some(e) = m.eval(&val, true) {
                if let Some(b) = bv_bytes(m, &e) {
                    if !a.elements.iter().any(|(x, y, _)| *x == *arg && *y == i) {
                        a.elements.push((*arg, i, b));
                    }
                }
            }
        }
        for g in &self.gid {
            a.work_item
                .push(m.eval(g, true).and_then(|v| v.as_u64()).unwrap_or(0));
        }
        a
    }

    fn fork_budget(&mut self, span: Span) -> bool {
        self.states += 1;
        if self.states > self.limits.max_states * 16 {
            self.incomplete.get_or_insert_with(|| {
                format!(
                    "more than {} path states (at line {})",
                    self.limits.max_states * 16,
                    at(span)
                )
            });
            return false;
        }
        true
    }

    /// Splits `st` on `c`: the states where it holds and where it does not (feasible ones).
    fn split(&mut self, st: State, c: &Bool, span: Span) -> (Option<State>, Option<State>) {
        if !self.fork_budget(span) || self.stopped() {
            return (None, None);
        }
        let t = if self.feasible(&st.pc, c) {
            let mut s = st.clone();
            s.pc.push(c.clone());
            Some(s)
        } else {
            None
        };
        let nc = c.not();
        let f = if self.feasible(&st.pc, &nc) {
            let mut s = st;
            s.pc.push(nc);
            Some(s)
        } else {
            None
        };
        (t, f)
    }

    // ---- statements ----

    fn stmts_seq(&mut self, items: &[&Stmt], st: State) -> Outs<Flow> {
        let mut live = vec![st];
        let mut done = Vec::new();
        for s in items {
            let mut next = Vec::new();
            for st in live {
                for (st2, f) in self.stmt(s, st) {
                    match f {
                        Flow::Normal => next.push(st2),
                        other => done.push((st2, other)),
                    }
                }
            }
            live = next;
            if live.len() > self.limits.max_states {
                self.cut.get_or_insert_with(|| {
                    format!(
                        "more than {} live paths (at line {})",
                        self.limits.max_states,
                        at(s.span)
                    )
                });
                live.truncate(self.limits.max_states);
            }
        }
        done.extend(live.into_iter().map(|s| (s, Flow::Normal)));
        done
    }

    fn stmt(&mut self, s: &Stmt, st: State) -> Outs<Flow> {
        if self.stopped() {
            return Vec::new();
        }
        match &s.kind {
            StmtKind::Compound(items) => {
                let depth = st.vars.len();
                let refs: Vec<&Stmt> = items.iter().collect();
                let mut out = self.stmts_seq(&refs, st);
                for (st, _) in &mut out {
                    st.vars.truncate(depth);
                }
                out
            }
            StmtKind::Decl(vars) => {
                let mut live = vec![st];
                for v in vars {
                    let mut next = Vec::new();
                    for st in live {
                        let dims = array_dims(&v.ty);
                        if !dims.is_empty() && v.init.is_none() {
                            // An array of structs (`__local S tmp[16]`): a region whose
                            // elements have the struct's layout, as a buffer of structs.
                            let name = strip_qualifiers(array_elem(&v.ty));
                            let name = name.trim_start_matches("struct ").trim();
                            if parse_value_type(array_elem(&v.ty)).is_none() {
                                if let Some(l) = layout_of(&self.structs, name).cloned() {
                                    let mut st = st;
                                    let arr = Array::fresh_const(
                                        &v.name,
                                        &Sort::bitvector(64),
                                        &Sort::bitvector(l.size as u32 * 8),
                                    );
                                    let p = st.add_region(
                                        Region {
                                            layout: Some(l),
                                            elem: u8_type(),
                                            array: arr,
                                            arg: None,
                                            len: Some(dims.iter().product()),
                                        },
                                        &dims,
                                    );
                                    st.vars.push((v.name.clone(), p));
                                    next.push(st);
                                    continue;
                                }
                            }
                        }
                        if !dims.is_empty() {
                            let Some(elem) = parse_value_type(array_elem(&v.ty)) else {
                                self.unsupported(
                                    format!("array {} of type {}", v.name, v.ty),
                                    v.span,
                                );
                                continue;
                            };
                            let mut st = st;
                            let arr = Array::fresh_const(
                                &v.name,
                                &Sort::bitvector(64),
                                &Sort::bitvector(elem.size() as u32 * 8),
                            );
                            let p = st.add_region(
                                Region {
                                    layout: None,
                                    elem,
                                    array: arr,
                                    arg: None,
                                    len: Some(dims.iter().product()),
                                },
                                &dims,
                            );
                            let region = st.regions.len() - 1;
                            st.vars.push((v.name.clone(), p));
                            if let Some(init) = &v.init {
                                let mut leaves = Vec::new();
                                flatten_init(init, &mut leaves);
                                let mut live = vec![st];
                                for (k, leaf) in leaves.into_iter().enumerate() {
                                    let mut n2 = Vec::new();
                                    for s in live {
                                        for (mut s2, val) in self.expr(leaf, s) {
                                            let at = BV::from_u64(k as u64, 64);
                                            if self.store(&mut s2, region, &at, val, v.span) {
                                                n2.push(s2);
                                            }
                                        }
                                    }
                                    live = n2;
                                }
                                next.extend(live);
                                continue;
                            }
                            next.push(st);
                            continue;
                        }
                        match &v.init {
                            None => {
                                let t = parse_value_type(&v.ty);
                                let mut st = st;
                                let name = format!("uninit_{}_{}", v.name, v.span.start);
                                let layout = layout_of(&self.structs, &v.ty).cloned();
                                match (t, layout) {
                                    (Some(t), _) => {
                                        st.vars.push((v.name.clone(), Val::fresh(&name, t)));
                                        next.push(st);
                                    }
                                    (None, Some(layout)) => {
                                        let bits = BV::new_const(name, layout.size as u32 * 8);
                                        st.vars
                                            .push((v.name.clone(), Val::Struct { bits, layout }));
                                        next.push(st);
                                    }
                                    (None, None) => self.unsupported(
                                        format!("a variable of type {}", v.ty),
                                        v.span,
                                    ),
                                }
                            }
                            Some(init) => {
                                for (mut st, val) in self.expr(init, st) {
                                    match convert(val, &v.ty) {
                                        Ok(val) => {
                                            st.vars.push((v.name.clone(), val));
                                            next.push(st);
                                        }
                                        Err(w) => self.unsupported(w, v.span),
                                    }
                                }
                            }
                        }
                    }
                    live = next;
                }
                live.into_iter().map(|s| (s, Flow::Normal)).collect()
            }
            StmtKind::Expr(e) => self
                .expr(e, st)
                .into_iter()
                .map(|(s, _)| (s, Flow::Normal))
                .collect(),
            StmtKind::If { cond, then, els } => {
                let mut out = Vec::new();
                for (st, v) in self.expr(cond, st) {
                    let c = match v.truthy() {
                        Ok(c) => c,
                        Err(w) => {
                            self.unsupported(w, cond.span);
                            continue;
                        }
                    };
                    self.reach2(&st, cond.span, &[Construct::If], &c);
                    let (t, f) = self.split(st, &c, cond.span);
                    if let Some(t) = t {
                        out.extend(self.stmt(then, t));
                    }
                    if let Some(f) = f {
                        match els {
                            Some(e) => out.extend(self.stmt(e, f)),
                            None => out.push((f, Flow::Normal)),
                        }
                    }
                }
                out
            }
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::Do { .. } => {
                self.loop_stmt(s, st)
            }
            StmtKind::Attributed { body } => self.stmt(body, st),
            StmtKind::Switch { cond, body } => self.switch(cond, body, st),
            StmtKind::Case { body, .. } | StmtKind::Default { body, .. } => {
                // Reached by falling through (labels are handled by `switch`).
                self.stmt(body, st)
            }
            StmtKind::Return(e) => match e {
                None => vec![(st, Flow::Return(Val::Void))],
                Some(e) => self
                    .expr(e, st)
                    .into_iter()
                    .map(|(s, v)| (s, Flow::Return(v)))
                    .collect(),
            },
            StmtKind::Break => vec![(st, Flow::Break)],
            StmtKind::Continue => vec![(st, Flow::Continue)],
            StmtKind::Label { body, .. } => self.stmt(body, st),
            StmtKind::Goto(l) => {
                self.unsupported(format!("goto {l}"), s.span);
                Vec::new()
            }
            StmtKind::Null => vec![(st, Flow::Normal)],
            StmtKind::Other(what) => {
                self.unsupported(format!("statement {what}"), s.span);
                Vec::new()
            }
        }
    }

    fn loop_stmt(&mut self, s: &Stmt, st: State) -> Outs<Flow> {
        let (construct, init, cond, inc, body, is_do) = match &s.kind {
            StmtKind::For {
                init,
                cond,
                inc,
                body,
            } => (
                Construct::For,
                init.as_deref(),
                cond.as_ref(),
                inc.as_ref(),
                body,
                false,
            ),
            StmtKind::While { cond, body } => {
                (Construct::While, None, Some(cond), None, body, false)
            }
            StmtKind::Do { body, cond } => (Construct::Do, None, Some(cond), None, body, true),
            _ => return Vec::new(),
        };
        let depth = st.vars.len();
        let starts: Vec<State> = match init {
            Some(i) => self
                .stmt(i, st)
                .into_iter()
                .filter_map(|(s, f)| matches!(f, Flow::Normal).then_some(s))
                .collect(),
            None => vec![st],
        };
        let mut out: Outs<Flow> = Vec::new();
        // (state at the loop head, iterations done so far)
        let mut live: Vec<State> = starts;
        let mut iter = 0u32;
        let mut forked = 0u32;
        let exit = |ex: &mut Self, st: &State, n: u32| {
            let o = match n {
                0 => Outcome::Zero,
                1 => Outcome::Once,
                _ => Outcome::Many,
            };
            let t = Bool::from_bool(true);
            ex.reach(st, s.span, &[construct], o, &t);
        };
        while !live.is_empty() {
            if self.stopped() {
                return out;
            }
            // The bound counts iterations whose condition could go both ways; a loop with a
            // fixed trip count is run out (up to a hard cap).
            if forked >= self.limits.loop_bound || iter >= self.limits.loop_bound * 64 {
                self.cut.get_or_insert_with(|| {
                    format!(
                        "loop bound {} hit at line {}",
                        self.limits.loop_bound,
                        at(s.span)
                    )
                });
                break;
            }
            let mut bodies = Vec::new();
            let mut both = false;
            for st in live {
                let check_cond = !(is_do && iter == 0);
                match (cond, check_cond) {
                    (Some(c), true) => {
                        for (st, v) in self.expr(c, st) {
                            let cv = match v.truthy() {
                                Ok(b) => b,
                                Err(w) => {
                                    self.unsupported(w, c.span);
                                    continue;
                                }
                            };
                            self.reach2(&st, c.span, &[construct], &cv);
                            let (t, f) = self.split(st, &cv, c.span);
                            both |= t.is_some() && f.is_some();
                            if let Some(t) = t {
                                bodies.push(t);
                            }
                            if let Some(mut f) = f {
                                exit(self, &f, iter);
                                f.vars.truncate(depth);
                                out.push((f, Flow::Normal));
                            }
                        }
                    }
                    _ => bodies.push(st),
                }
            }
            let mut next = Vec::new();
            for st in bodies {
                let bdepth = st.vars.len();
                for (mut st, f) in self.stmt(body, st) {
                    st.vars.truncate(bdepth);
                    match f {
                        Flow::Normal | Flow::Continue => match inc {
                            Some(e) => next.extend(self.expr(e, st).into_iter().map(|(s, _)| s)),
                            None => next.push(st),
                        },
                        Flow::Break => {
                            exit(self, &st, iter + 1);
                            st.vars.truncate(depth);
                            out.push((st, Flow::Normal));
                        }
                        Flow::Return(v) => {
                            exit(self, &st, iter + 1);
                            out.push((st, Flow::Return(v)));
                        }
                    }
                }
            }
            iter += 1;
            if both || cond.is_none() {
                forked += 1;
            }
            if next.len() > self.limits.max_states {
                self.cut.get_or_insert_with(|| {
                    format!(
                        "more than {} live paths in the loop at line {}",
                        self.limits.max_states,
                        at(s.span)
                    )
                });
                next.truncate(self.limits.max_states);
            }
            live = next;
        }
        out
    }

    fn switch(&mut self, cond: &Expr, body: &Stmt, st: State) -> Outs<Flow> {
        // Flatten the body into labels and statements.
        enum Item<'s> {
            Case(&'s Expr, Span),
            Default(Span),
            Stmt(&'s Stmt),
        }
        fn flatten<'s>(s: &'s Stmt, items: &mut Vec<Item<'s>>) {
            match &s.kind {
                StmtKind::Case { value, body, .. } => {
                    items.push(Item::Case(value, s.span));
                    flatten(body, items);
                }
                StmtKind::Default { body, .. } => {
                    items.push(Item::Default(s.span));
                    flatten(body, items);
                }
                _ => items.push(Item::Stmt(s)),
            }
        }
        let mut items = Vec::new();
        match &body.kind {
            StmtKind::Compound(v) => v.iter().for_each(|s| flatten(s, &mut items)),
            _ => flatten(body, &mut items),
        }
        let mut out = Vec::new();
        for (st, v) in self.expr(cond, st) {
            let Val::Int { bv, .. } = &v else {
                self.unsupported("a switch on a non-integer", cond.span);
                continue;
            };
            // Case values, converted to the condition's type.
            let mut entries: Vec<(usize, Bool)> = Vec::new();
            let mut default_at = None;
            let mut none = Vec::new();
            for (i, it) in items.iter().enumerate() {
                match it {
                    Item::Case(e, span) => {
                        let cv = self.expr(e, st.clone());
                        let Some((_, Val::Int { bv: c, .. })) = cv.into_iter().next() else {
                            self.unsupported("a case value", *span);
                            continue;
                        };
                        let c = match c.get_size().cmp(&bv.get_size()) {
                            std::cmp::Ordering::Equal => c,
                            std::cmp::Ordering::Less => c.sign_ext(bv.get_size() - c.get_size()),
                            std::cmp::Ordering::Greater => c.extract(bv.get_size() - 1, 0),
                        };
                        let eq = bv.eq(&c);
                        none.push(eq.not());
                        entries.push((i, eq));
                    }
                    Item::Default(_) => default_at = Some(i),
                    Item::Stmt(_) => {}
                }
            }
            let none_matched = Bool::and(&none);
            let mut starts: Vec<(State, usize)> = Vec::new();
            for (i, eq) in &entries {
                if self.feasible(&st.pc, eq) {
                    let mut s2 = st.clone();
                    s2.pc.push(eq.clone());
                    starts.push((s2, *i));
                }
            }
            match default_at {
                Some(i) => {
                    if self.feasible(&st.pc, &none_matched) {
                        let mut s2 = st.clone();
                        s2.pc.push(none_matched.clone());
                        starts.push((s2, i));
                    }
                }
                None => {
                    self.reach(
                        &st,
                        cond.span,
                        &[Construct::ImplicitDefault],
                        Outcome::Taken,
                        &none_matched,
                    );
                    if self.feasible(&st.pc, &none_matched) {
                        let mut s2 = st.clone();
                        s2.pc.push(none_matched.clone());
                        out.push((s2, Flow::Normal));
                    }
                }
            }
            for (s0, from) in starts {
                let depth = s0.vars.len();
                let mut live = vec![s0];
                for it in &items[from..] {
                    let mut next = Vec::new();
                    for s in live {
                        match it {
                            Item::Case(_, span) => {
                                self.reach(
                                    &s,
                                    *span,
                                    &[Construct::Case],
                                    Outcome::Taken,
                                    &Bool::from_bool(true),
                                );
                                next.push(s);
                            }
                            Item::Default(span) => {
                                self.reach(
                                    &s,
                                    *span,
                                    &[Construct::Default],
                                    Outcome::Taken,
                                    &Bool::from_bool(true),
                                );
                                next.push(s);
                            }
                            Item::Stmt(x) => {
                                for (mut s2, f) in self.stmt(x, s) {
                                    match f {
                                        Flow::Normal => next.push(s2),
                                        Flow::Break => {
                                            s2.vars.truncate(depth);
                                            out.push((s2, Flow::Normal));
                                        }
                                        other => out.push((s2, other)),
                                    }
                                }
                            }
                        }
                    }
                    live = next;
                }
                for mut s in live {
                    s.vars.truncate(depth);
                    out.push((s, Flow::Normal));
                }
            }
        }
        out
    }

    // ---- expressions ----

    /// A program-scope `__constant` variable, its initialiser read from the program text
    /// (numbers only); made once per path and kept for the rest of it.
    fn program_global(&mut self, st: &mut State, name: &str) -> Result<Val, String> {
        if let Some((_, v)) = st.globals.iter().find(|(n, _)| n == name) {
            return Ok(v.clone());
        }
        let g = self
            .program
            .globals
            .iter()
            .find(|g| g.name == name)
            .ok_or_else(|| format!("variable {name}"))?;
        let span = g
            .span
            .ok_or_else(|| format!("{name} (declared in a header)"))?;
        let text = self
            .program
            .source
            .get(span.start as usize..span.end as usize)
            .unwrap_or("");
        let init = text
            .split_once('=')
            .map(|(_, i)| i.trim().trim_end_matches(';'))
            .ok_or_else(|| format!("program-scope variable {name} without an initialiser"))?;
        let dims = array_dims(&g.ty);
        let elem = parse_value_type(array_elem(&g.ty))
            .filter(|t| t.lanes == 1)
            .ok_or_else(|| format!("program-scope variable {name} of type {}", g.ty))?;
        let words: Vec<&str> = init
            .split(['{', '}', ','])
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect();
        let mut vals = Vec::new();
        for w in &words {
            let (neg, body) = match w.strip_prefix('-') {
                Some(b) => (true, b.trim()),
                None => (false, *w),
            };
            let v = match elem.scalar {
                crate::interface::Scalar::Int { bits, signed } => {
                    let n = crate::interface::parse_int_literal(body)
                        .ok_or_else(|| format!("the initialiser of {name} ({w})"))?;
                    Val::int(if neg { n.wrapping_neg() } else { n }, bits, signed)
                }
                crate::interface::Scalar::Float { .. } => {
                    let f = crate::interface::parse_float_literal(body)
                        .ok_or_else(|| format!("the initialiser of {name} ({w})"))?;
                    let f = if neg { -f } else { f };
                    convert(
                        Val::Flt {
                            f: z3::ast::Float::from_f64(f),
                            bits: 64,
                        },
                        elem.scalar.name(),
                    )?
                }
            };
            vals.push(v);
        }
        let v = if dims.is_empty() {
            vals.into_iter()
                .next()
                .ok_or_else(|| format!("the initialiser of {name}"))?
        } else {
            let total: u64 = dims.iter().product();
            let arr = Array::const_array(
                &Sort::bitvector(64),
                &BV::from_u64(0, elem.size() as u32 * 8),
            );
            let mut arr = arr;
            for (k, v) in vals.into_iter().enumerate() {
                arr = arr.store(&BV::from_u64(k as u64, 64), &v.to_bits()?);
            }
            let region = Region {
                layout: None,
                elem,
                array: arr,
                arg: None,
                len: Some(total),
            };
            st.add_region(region, &dims)
        };
        st.globals.push((name.to_string(), v.clone()));
        Ok(v)
    }

    fn lookup(st: &State, name: &str) -> Option<Val> {
        st.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    fn load(&mut self, st: &mut State, region: usize, off: &BV, span: Span) -> Option<Val> {
        let r = st.regions.get(region)?.clone();
        if let Some(len) = r.len {
            st.pc.push(off.bvult(BV::from_u64(len, 64)));
        }
        if let Some(arg) = r.arg {
            st.reads.push((arg, off.clone()));
        }
        let Some(bits) = r.array.select(off).as_bv() else {
            self.unsupported("a memory read", span);
            return None;
        };
        Some(match r.layout {
            Some(layout) => Val::Struct { bits, layout },
            None => Val::from_bits(&bits, r.elem),
        })
    }

    fn store(&mut self, st: &mut State, region: usize, off: &BV, v: Val, span: Span) -> bool {
        let Some(r) = st.regions.get(region).cloned() else {
            return false;
        };
        let v = match (&r.layout, v) {
            (Some(_), v @ Val::Struct { .. }) => v,
            (Some(l), _) => {
                self.unsupported(
                    format!("storing a non-struct into a {} element", l.name),
                    span,
                );
                return false;
            }
            (None, v) => match convert(v, &r.elem.name()) {
                Ok(v) => v,
                Err(w) => {
                    self.unsupported(w, span);
                    return false;
                }
            },
        };
        let Ok(bits) = v.to_bits() else {
            self.unsupported("storing this value", span);
            return false;
        };
        if let Some(len) = r.len {
            st.pc.push(off.bvult(BV::from_u64(len, 64)));
        }
        st.regions[region].array = r.array.store(off, &bits);
        true
    }

    fn expr(&mut self, e: &Expr, st: State) -> Outs<Val> {
        if self.stopped() {
            return Vec::new();
        }
        match self.expr_inner(e, st) {
            Ok(v) => v,
            Err(what) => {
                self.unsupported(what, e.span);
                Vec::new()
            }
        }
    }

    fn map1(
        &mut self,
        a: &Expr,
        st: State,
        f: &mut dyn FnMut(&mut Self, &mut State, Val) -> Result<Val, String>,
    ) -> Result<Outs<Val>, String> {
        let mut out = Vec::new();
        for (mut s, v) in self.expr(a, st) {
            let r = f(self, &mut s, v)?;
            out.push((s, r));
        }
        Ok(out)
    }

    fn expr_inner(&mut self, e: &Expr, st: State) -> Result<Outs<Val>, String> {
        match &e.kind {
            ExprKind::Paren(i) => Ok(self.expr(i, st)),
            ExprKind::Implicit(i) | ExprKind::Cast { operand: i } => {
                let ty = e.ty.clone();
                self.map1(i, st, &mut |_, _, v| convert(v, &ty))
            }
            ExprKind::IntLit(t) => {
                let v = self.int_literal(t).ok_or_else(|| format!("literal {t}"))?;
                let ty = parse_value_type(&e.ty).ok_or_else(|| format!("literal type {}", e.ty))?;
                let crate::interface::Scalar::Int { bits, signed } = ty.scalar else {
                    return Err(format!("literal {t}"));
                };
                Ok(vec![(st, Val::int(v, bits, signed))])
            }
            ExprKind::FloatLit(t) => {
                let v = crate::interface::parse_float_literal(t)
                    .ok_or_else(|| format!("literal {t}"))?;
                let ty = parse_value_type(&e.ty).ok_or_else(|| format!("literal type {}", e.ty))?;
                let crate::interface::Scalar::Float { bits } = ty.scalar else {
                    return Err(format!("literal {t}"));
                };
                let f = match bits {
                    64 => z3::ast::Float::from_f64(v),
                    _ => z3::ast::Float::from_f32(v as f32),
                };
                let f = if bits == 16 {
                    f.to_fp_with_rounding_mode(
                        &z3::ast::RoundingMode::round_nearest_ties_to_even(),
                        &value::float_sort(16),
                    )
                } else {
                    f
                };
                Ok(vec![(st, Val::Flt { f, bits })])
            }
            ExprKind::OtherLit(t) => {
                let b = t.as_bytes();
                if b.len() == 3 && b[0] == b'\'' && b[2] == b'\'' {
                    Ok(vec![(st, Val::int(b[1] as i64, 32, true))])
                } else {
                    Err(format!("literal {t}"))
                }
            }
            ExprKind::DeclRef(name) => match Self::lookup(&st, name) {
                Some(v) => Ok(vec![(st, v)]),
                None => {
                    if name == "CLK_LOCAL_MEM_FENCE" || name == "CLK_GLOBAL_MEM_FENCE" {
                        Ok(vec![(st, Val::int(1, 32, false))])
                    } else {
                        let mut st = st;
                        let v = self.program_global(&mut st, name)?;
                        Ok(vec![(st, v)])
                    }
                }
            },
            ExprKind::SizeOf => Err("sizeof".into()),
            ExprKind::Binary { op: None, .. } => Err("an operator written in a macro body".into()),
            ExprKind::Binary {
                op: Some(op),
                lhs,
                rhs,
                ..
            } => self.binary_expr(e, *op, lhs, rhs, st),
            ExprKind::Unary { op: None, .. } => Err("an operator written in a macro body".into()),
            ExprKind::Unary {
                op: Some(op),
                operand,
            } => match op {
                UnOp::Plus => Ok(self.expr(operand, st)),
                UnOp::Minus => self.map1(operand, st, &mut |_, _, v| value::neg(v)),
                UnOp::BitNot => self.map1(operand, st, &mut |_, _, v| value::bitnot(v)),
                UnOp::LNot => self.map1(operand, st, &mut |_, _, v| value::lnot(v)),
                UnOp::Deref => {
                    let span = e.span;
                    self.map1(operand, st, &mut |ex, s, v| match v {
                        Val::Ptr { region, off } => ex
                            .load(s, region, &off, span)
                            .ok_or_else(|| "a memory read".to_string()),
                        _ => Err("dereferencing a non-pointer".into()),
                    })
                }
                UnOp::AddrOf => match &operand.peel().kind {
                    ExprKind::Index { base, index } => Ok(self
                        .index_ptr(base, index, st)?
                        .into_iter()
                        .map(|(s, (p, _))| (s, p))
                        .collect()),
                    _ => Err("taking the address of a variable".into()),
                },
                UnOp::PreInc | UnOp::PreDec | UnOp::PostInc | UnOp::PostDec => {
                    let pre = matches!(op, UnOp::PreInc | UnOp::PreDec);
                    let add = matches!(op, UnOp::PreInc | UnOp::PostInc);
                    let mut out = Vec::new();
                    for (s, old) in self.expr(operand, st) {
                        let one = match &old {
                            Val::Int { bv, signed } => Val::int(1, bv.get_size(), *signed),
                            Val::Flt { bits, .. } => {
                                convert(Val::int(1, 32, true), value_name(*bits))?
                            }
                            Val::Ptr { .. } => Val::int(1, 64, true),
                            _ => return Err("++/-- on a vector".into()),
                        };
                        let new =
                            binary(if add { BinOp::Add } else { BinOp::Sub }, old.clone(), one)?;
                        for s2 in self.assign(operand, new.clone(), s.clone())? {
                            out.push((s2, if pre { new.clone() } else { old.clone() }));
                        }
                    }
                    Ok(out)
                }
            },
            ExprKind::Conditional { cond, then, els } => {
                let mut out = Vec::new();
                for (s, v) in self.expr(cond, st) {
                    let c = v.truthy()?;
                    self.reach2(&s, cond.span, &[Construct::Conditional], &c);
                    let (t, f) = self.split(s, &c, cond.span);
                    let ty = e.ty.clone();
                    if let Some(t) = t {
                        for (s2, v) in self.expr(then, t) {
                            out.push((s2, convert(v, &ty)?));
                        }
                    }
                    if let Some(f) = f {
                        for (s2, v) in self.expr(els, f) {
                            out.push((s2, convert(v, &ty)?));
                        }
                    }
                }
                Ok(out)
            }
            ExprKind::Index { base, index } => {
                let span = e.span;
                let mut out = Vec::new();
                for (mut s, (p, row)) in self.index_ptr(base, index, st)? {
                    if row {
                        out.push((s, p));
                        continue;
                    }
                    let Val::Ptr { region, off } = p else {
                        return Err("indexing a non-pointer".into());
                    };
                    let v = self
                        .load(&mut s, region, &off, span)
                        .ok_or("a memory read")?;
                    out.push((s, v));
                }
                Ok(out)
            }
            ExprKind::Swizzle { base, components } => {
                let comps = components.clone();
                self.map1(base, st, &mut |_, _, v| match v {
                    Val::Vector(l) => {
                        let idx = value::swizzle(&comps, l.len())
                            .ok_or_else(|| format!("swizzle .{comps}"))?;
                        let lanes: Vec<Val> = idx
                            .iter()
                            .map(|i| {
                                l.get(*i)
                                    .cloned()
                                    .ok_or_else(|| format!("swizzle .{comps}"))
                            })
                            .collect::<Result<_, _>>()?;
                        Ok(if lanes.len() == 1 {
                            lanes[0].clone()
                        } else {
                            Val::Vector(lanes)
                        })
                    }
                    _ => Err("a swizzle of a scalar".into()),
                })
            }
            ExprKind::VectorLiteral(parts) => {
                let ty = parse_value_type(&e.ty)
                    .ok_or_else(|| format!("vector literal of type {}", e.ty))?;
                let mut outs: Outs<Vec<Val>> = vec![(st, Vec::new())];
                for p in parts {
                    let mut next = Vec::new();
                    for (s, acc) in outs {
                        for (s2, v) in self.expr(p, s) {
                            let mut acc = acc.clone();
                            match v {
                                Val::Vector(l) => acc.extend(l),
                                x => acc.push(x),
                            }
                            next.push((s2, acc));
                        }
                    }
                    outs = next;
                }
                let mut out = Vec::new();
                for (s, mut lanes) in outs {
                    if lanes.len() == 1 {
                        lanes = vec![lanes[0].clone(); ty.lanes as usize];
                    }
                    if lanes.len() != ty.lanes as usize {
                        return Err("a vector literal with the wrong number of lanes".into());
                    }
                    let sname = ty.scalar.name();
                    let lanes = lanes
                        .into_iter()
                        .map(|l| convert(l, sname))
                        .collect::<Result<_, _>>()?;
                    out.push((s, Val::Vector(lanes)));
                }
                Ok(out)
            }
            ExprKind::Call { callee, args, .. } => self.call(e, callee, args, st),
            ExprKind::Member { base, field, arrow } => {
                let span = e.span;
                let field = field.clone();
                let arrow = *arrow;
                self.map1(base, st, &mut |ex, s, v| {
                    let v = if arrow {
                        let Val::Ptr { region, off } = v else {
                            return Err(format!("->{field} on a non-pointer"));
                        };
                        ex.load(s, region, &off, span).ok_or("a memory read")?
                    } else {
                        v
                    };
                    field_of(&v, &field)
                })
            }
            ExprKind::InitList(_) => Err("an initialiser list".into()),
            ExprKind::Opaque { what, .. } => Err(format!("expression {what}")),
        }
    }

    /// An integer literal's value; a literal written by a macro shows the macro's name: its
    /// definition in the program, or OpenCL's fence flags (defined by the implementation).
    fn int_literal(&self, t: &str) -> Option<i64> {
        if let Some(v) = crate::interface::parse_int_literal(t) {
            return Some(v);
        }
        match t {
            "CLK_LOCAL_MEM_FENCE" => return Some(1),
            "CLK_GLOBAL_MEM_FENCE" => return Some(2),
            "CLK_IMAGE_MEM_FENCE" => return Some(4),
            _ => {}
        }
        let body = self.program.macro_defs.get(t)?;
        let text: String = body.iter().map(String::as_str).collect();
        let text = text.trim_start_matches('(').trim_end_matches(')');
        match text.strip_prefix('-') {
            Some(n) => crate::interface::parse_int_literal(n).map(i64::wrapping_neg),
            None => crate::interface::parse_int_literal(text),
        }
    }

    /// The address `base[index]`, and whether it is a row of a multi-dimensional array (an
    /// array value, not an element to load).
    fn index_ptr(
        &mut self,
        base: &Expr,
        index: &Expr,
        st: State,
    ) -> Result<Outs<(Val, bool)>, String> {
        let mut out = Vec::new();
        for (s, b) in self.expr(base, st) {
            let (region, off, dims) = match b {
                Val::Ptr { region, off } => (region, off, Vec::new()),
                Val::Rows { region, off, dims } => (region, off, dims),
                _ => return Err("indexing a non-pointer".into()),
            };
            let stride: u64 = dims.iter().product();
            for (s2, i) in self.expr(index, s) {
                let Val::Int { bv, signed } = i else {
                    return Err("a non-integer index".into());
                };
                let step = widen64(bv, signed).bvmul(BV::from_u64(stride, 64));
                let off = off.bvadd(step);
                let v = match dims.len() {
                    0 | 1 => Val::Ptr { region, off },
                    _ => Val::Rows {
                        region,
                        off,
                        dims: dims[1..].to_vec(),
                    },
                };
                out.push((s2, (v, !dims.is_empty())));
            }
        }
        Ok(out)
    }

    /// Stores `v` into the lvalue `target`.
    fn assign(&mut self, target: &Expr, v: Val, st: State) -> Result<Vec<State>, String> {
        let t = target.peel();
        match &t.kind {
            ExprKind::DeclRef(name) => {
                let mut st = st;
                let v = convert(v, &t.ty)?;
                let Some(slot) = st.vars.iter_mut().rev().find(|(n, _)| n == name) else {
                    return Err(format!("assigning to {name}"));
                };
                slot.1 = v;
                Ok(vec![st])
            }
            ExprKind::Index { base, index } => {
                let mut out = Vec::new();
                for (mut s, (p, row)) in self.index_ptr(base, index, st)? {
                    let Val::Ptr { region, off } = p else {
                        return Err("indexing a non-pointer".into());
                    };
                    if row {
                        return Err("assigning to a whole array row".into());
                    }
                    if self.store(&mut s, region, &off, v.clone(), t.span) {
                        out.push(s);
                    }
                }
                Ok(out)
            }
            ExprKind::Unary {
                op: Some(UnOp::Deref),
                operand,
            } => {
                let mut out = Vec::new();
                for (mut s, p) in self.expr(operand, st) {
                    let Val::Ptr { region, off } = p else {
                        return Err("dereferencing a non-pointer".into());
                    };
                    if self.store(&mut s, region, &off, v.clone(), t.span) {
                        out.push(s);
                    }
                }
                Ok(out)
            }
            ExprKind::Swizzle { base, components } => {
                let mut out = Vec::new();
                for (s, old) in self.expr(base, st) {
                    let Val::Vector(mut lanes) = old else {
                        return Err("a swizzle of a scalar".into());
                    };
                    let idx = value::swizzle(components, lanes.len())
                        .ok_or_else(|| format!("swizzle .{components}"))?;
                    let new: Vec<Val> = match &v {
                        Val::Vector(l) => l.clone(),
                        x => vec![x.clone()],
                    };
                    for (k, i) in idx.iter().enumerate() {
                        if let (Some(dst), Some(src)) = (lanes.get_mut(*i), new.get(k)) {
                            *dst = src.clone();
                        }
                    }
                    out.extend(self.assign(base, Val::Vector(lanes), s)?);
                }
                Ok(out)
            }
            ExprKind::Member { base, field, arrow } => {
                let mut out = Vec::new();
                if *arrow {
                    for (mut s, p) in self.expr(base, st) {
                        let Val::Ptr { region, off } = p else {
                            return Err(format!("->{field} on a non-pointer"));
                        };
                        let old = self
                            .load(&mut s, region, &off, t.span)
                            .ok_or("a memory read")?;
                        let new = with_field(&old, field, v.clone())?;
                        if self.store(&mut s, region, &off, new, t.span) {
                            out.push(s);
                        }
                    }
                } else {
                    for (s, old) in self.expr(base, st) {
                        let new = with_field(&old, field, v.clone())?;
                        out.extend(self.assign(base, new, s)?);
                    }
                }
                Ok(out)
            }
            _ => Err("this assignment target".into()),
        }
    }

    fn binary_expr(
        &mut self,
        e: &Expr,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
        st: State,
    ) -> Result<Outs<Val>, String> {
        use BinOp::*;
        match op {
            LAnd | LOr => {
                let and = op == LAnd;
                let mut out = Vec::new();
                for (s, a) in self.expr(lhs, st) {
                    let ca = a.truthy()?;
                    // The left operand is a target even when it is itself `&&`/`||`, as
                    // in the coverage map (its outcome decides whether `rhs` runs).
                    self.reach2(&s, lhs.span, &[Construct::ShortCircuit], &ca);
                    let (t, f) = self.split(s, &ca, lhs.span);
                    let (go_on, short) = if and { (t, f) } else { (f, t) };
                    if let Some(s) = short {
                        out.push((s, value::from_bool(Bool::from_bool(!and))));
                    }
                    if let Some(s) = go_on {
                        for (s2, b) in self.expr(rhs, s) {
                            let cb = b.truthy()?;
                            if !is_logical(rhs) {
                                self.reach2(&s2, rhs.span, &[Construct::ShortCircuit], &cb);
                            }
                            out.push((s2, value::from_bool(cb)));
                        }
                    }
                }
                Ok(out)
            }
            Comma => {
                let mut out = Vec::new();
                for (s, _) in self.expr(lhs, st) {
                    out.extend(self.expr(rhs, s));
                }
                Ok(out)
            }
            Assign => {
                let mut out = Vec::new();
                for (s, v) in self.expr(rhs, st) {
                    let v = match v {
                        Val::Ptr { .. } => v,
                        v => convert(v, &lhs.ty)?,
                    };
                    for s2 in self.assign(lhs, v.clone(), s)? {
                        out.push((s2, v.clone()));
                    }
                }
                Ok(out)
            }
            MulAssign | DivAssign | RemAssign | AddAssign | SubAssign | ShlAssign | ShrAssign
            | AndAssign | XorAssign | OrAssign => {
                let base = match op {
                    MulAssign => Mul,
                    DivAssign => Div,
                    RemAssign => Rem,
                    AddAssign => Add,
                    SubAssign => Sub,
                    ShlAssign => Shl,
                    ShrAssign => Shr,
                    AndAssign => BitAnd,
                    XorAssign => BitXor,
                    _ => BitOr,
                };
                let mut out = Vec::new();
                for (s, old) in self.expr(lhs, st) {
                    for (s2, r) in self.expr(rhs, s) {
                        // Computation type: the right operand's (clang converted it), except
                        // for shifts (the left operand's promoted type) and pointers.
                        let new = match (&old, base) {
                            (Val::Ptr { .. }, _) => binary(base, old.clone(), r)?,
                            (_, Shl | Shr) => {
                                let promoted = promote(&old);
                                binary(base, promoted, r)?
                            }
                            _ => {
                                let ct = rhs.ty.clone();
                                binary(base, convert(old.clone(), &ct)?, r)?
                            }
                        };
                        let new = match new {
                            Val::Ptr { .. } => new,
                            n => convert(n, &lhs.ty)?,
                        };
                        for s3 in self.assign(lhs, new.clone(), s2.clone())? {
                            out.push((s3, new.clone()));
                        }
                    }
                }
                Ok(out)
            }
            _ => {
                let ty = e.ty.clone();
                let mut out = Vec::new();
                for (s, a) in self.expr(lhs, st) {
                    for (s2, b) in self.expr(rhs, s.clone()) {
                        let r = binary(op, a.clone(), b)?;
                        // Arithmetic results take the expression's type (e.g. pointer
                        // differences, comparisons stay int).
                        let r = match (&r, op) {
                            (Val::Ptr { .. }, _) => r,
                            (_, Lt | Gt | Le | Ge | Eq | Ne) if !matches!(r, Val::Vector(_)) => r,
                            _ => convert(r, &ty).unwrap_or_else(|_| Val::Void),
                        };
                        if matches!(r, Val::Void) {
                            return Err(format!("operator {} of type {ty}", op.token()));
                        }
                        out.push((s2, r));
                    }
                }
                Ok(out)
            }
        }
    }

    fn call(
        &mut self,
        e: &Expr,
        callee: &str,
        args: &[Expr],
        st: State,
    ) -> Result<Outs<Val>, String> {
        // Evaluate the arguments first (left to right).
        let mut outs: Outs<Vec<Val>> = vec![(st, Vec::new())];
        for a in args {
            let mut next = Vec::new();
            for (s, acc) in outs {
                for (s2, v) in self.expr(a, s) {
                    let mut acc = acc.clone();
                    acc.push(v);
                    next.push((s2, acc));
                }
            }
            outs = next;
        }
        let mut out = Vec::new();
        for (s, vals) in outs {
            if let Some(f) = self.program.function(callee) {
                if f.body.is_some() {
                    out.extend(self.inline(f, vals, s, e.span)?);
                    continue;
                }
            }
            let mut s = s;
            if let Some(v) = self.atomic(callee, &vals, &mut s, e.span)? {
                out.push((s, v));
                continue;
            }
            if let Some(v) = self.vector_memory(callee, &vals, &mut s, e.span)? {
                out.push((s, v));
                continue;
            }
            let v = self.builtin(callee, &vals, &e.ty)?;
            out.push((s, v));
        }
        Ok(out)
    }

    fn inline(
        &mut self,
        f: &Function,
        vals: Vec<Val>,
        st: State,
        span: Span,
    ) -> Result<Outs<Val>, String> {
        if self.depth > 16 {
            return Err(format!("recursion into {}", f.name));
        }
        let Some(body) = &f.body else {
            return Err(format!("call to {}", f.name));
        };
        let mut st = st;
        let depth = st.vars.len();
        // Callee scope: parameters only (globals of the kernel are not visible, but the
        // caller's variables stay below and are shadowed by name).
        for (p, v) in f.params.iter().zip(vals) {
            let v = if p.ty.contains('*') {
                v
            } else {
                convert(v, &p.ty)?
            };
            st.vars.push((p.name.clone(), v));
        }
        self.depth += 1;
        let res = self.stmt(body, st);
        self.depth -= 1;
        let ret = f.return_type.clone();
        let mut out = Vec::new();
        for (mut s, fl) in res {
            s.vars.truncate(depth);
            let v = match fl {
                Flow::Return(v) => v,
                _ => Val::Void,
            };
            let v = if strip_qualifiers(&ret) == "void" || ret.contains('*') {
                v
            } else {
                match convert(v, &ret) {
                    Ok(v) => v,
                    Err(w) => {
                        self.unsupported(w, span);
                        continue;
                    }
                }
            };
            out.push((s, v));
        }
        Ok(out)
    }

    /// `atomic_*` / `atom_*` on this work-item's view of memory: read, modify, write, return
    /// the old value (other work-items' updates are not modelled, as for every access).
    fn atomic(
        &mut self,
        name: &str,
        vals: &[Val],
        st: &mut State,
        span: Span,
    ) -> Result<Option<Val>, String> {
        let Some(op) = name
            .strip_prefix("atomic_")
            .or_else(|| name.strip_prefix("atom_"))
        else {
            return Ok(None);
        };
        let Some(Val::Ptr { region, off }) = vals.first().cloned() else {
            return Err(format!("{name} on a non-pointer"));
        };
        let old = self
            .load(st, region, &off, span)
            .ok_or_else(|| name.to_string())?;
        let Val::Int { bv, signed } = &old else {
            return Err(format!("{name} on a non-integer"));
        };
        let w = bv.get_size();
        let operand = |i: usize| -> Result<Val, String> {
            let v = vals
                .get(i)
                .cloned()
                .ok_or_else(|| format!("{name} arguments"))?;
            convert(
                v,
                crate::interface::Scalar::Int {
                    bits: w,
                    signed: *signed,
                }
                .name(),
            )
        };
        let one = Val::int(1, w, *signed);
        let new = match op {
            "add" => binary(BinOp::Add, old.clone(), operand(1)?)?,
            "sub" => binary(BinOp::Sub, old.clone(), operand(1)?)?,
            "inc" => binary(BinOp::Add, old.clone(), one)?,
            "dec" => binary(BinOp::Sub, old.clone(), one)?,
            "xchg" => operand(1)?,
            "and" => binary(BinOp::BitAnd, old.clone(), operand(1)?)?,
            "or" => binary(BinOp::BitOr, old.clone(), operand(1)?)?,
            "xor" => binary(BinOp::BitXor, old.clone(), operand(1)?)?,
            "min" | "max" => {
                let b = operand(1)?;
                let lt = binary(BinOp::Lt, old.clone(), b.clone())?.truthy()?;
                let keep_old = if op == "min" { lt } else { lt.not() };
                ite_val(&keep_old, &old, &b)?
            }
            "cmpxchg" => {
                let cmp = operand(1)?;
                let val = operand(2)?;
                let eq = binary(BinOp::Eq, old.clone(), cmp)?.truthy()?;
                ite_val(&eq, &val, &old)?
            }
            _ => return Err(format!("built-in {name}")),
        };
        if !self.store(st, region, &off, new, span) {
            return Err(name.to_string());
        }
        Ok(Some(old))
    }

    /// `vloadN(offset, p)` and `vstoreN(data, offset, p)`: N consecutive elements of a
    /// buffer of scalars from element `offset * N` on, read or written lane by lane (each
    /// lane an ordinary load or store, so bounds and input reads are recorded as for `p[i]`).
    /// `None` when `name` is not one of them.
    fn vector_memory(
        &mut self,
        name: &str,
        vals: &[Val],
        st: &mut State,
        span: Span,
    ) -> Result<Option<Val>, String> {
        let (store, n) = match name
            .strip_prefix("vload")
            .map(|n| (false, n))
            .or_else(|| name.strip_prefix("vstore").map(|n| (true, n)))
        {
            Some((store, n @ ("2" | "3" | "4" | "8" | "16"))) => {
                (store, n.parse::<u64>().unwrap_or(0))
            }
            _ => return Ok(None),
        };
        let (data, rest) = if store {
            (vals.first(), vals.get(1..).unwrap_or(&[]))
        } else {
            (None, vals)
        };
        let (Some(Val::Int { bv, signed }), Some(Val::Ptr { region, off })) =
            (rest.first().cloned(), rest.get(1).cloned())
        else {
            return Err(format!("{name} arguments"));
        };
        let scalar_elems = st
            .regions
            .get(region)
            .is_some_and(|r| r.layout.is_none() && r.elem.lanes == 1);
        if !scalar_elems {
            return Err(format!("{name} from a buffer of vectors or structs"));
        }
        let base = off.bvadd(widen64(bv, signed).bvmul(BV::from_u64(n, 64)));
        let lane_off = |k: u64| base.bvadd(BV::from_u64(k, 64));
        if let Some(data) = data {
            let Val::Vector(lanes) = data else {
                return Err(format!("{name} of a non-vector"));
            };
            for (k, lane) in lanes.iter().enumerate().take(n as usize) {
                if !self.store(st, region, &lane_off(k as u64), lane.clone(), span) {
                    return Err(name.to_string());
                }
            }
            return Ok(Some(Val::Void));
        }
        let mut lanes = Vec::new();
        for k in 0..n {
            lanes.push(
                self.load(st, region, &lane_off(k), span)
                    .ok_or_else(|| name.to_string())?,
            );
        }
        Ok(Some(Val::Vector(lanes)))
    }

    fn dim(&self, vals: &[Val]) -> Result<usize, String> {
        match vals.first() {
            Some(Val::Int { bv, .. }) => bv
                .simplify()
                .as_u64()
                .map(|d| d as usize)
                .ok_or_else(|| "a work-item function with a symbolic dimension".into()),
            _ => Err("a work-item function without a dimension".into()),
        }
    }

    fn builtin(&mut self, name: &str, vals: &[Val], ty: &str) -> Result<Val, String> {
        if builtins::is_elementwise(name) {
            if let Some(n) = builtins::lanes(vals) {
                let lane_ty = builtins::lane_type(ty);
                let lanes = (0..n)
                    .map(|i| self.builtin(name, &builtins::lane(vals, i)?, &lane_ty))
                    .collect::<Result<_, _>>()?;
                return Ok(Val::Vector(lanes));
            }
        }
        let size_t = |bv: BV| Val::Int { bv, signed: false };
        let geo = self.geo;
        let g = |d: usize| geo.global.get(d).copied().unwrap_or(1);
        let l = |d: usize| -> Result<u64, String> {
            match &geo.local {
                Some(l) => Ok(l.get(d).copied().unwrap_or(1)),
                None => Err("local ids or group ids with a NULL local size".into()),
            }
        };
        let off = |d: usize| {
            geo.offset
                .as_ref()
                .and_then(|o| o.get(d))
                .copied()
                .unwrap_or(0)
        };
        let c = |v: u64| Val::Int {
            bv: BV::from_u64(v, 64),
            signed: false,
        };
        Ok(match name {
            "get_global_id" => {
                let d = self.dim(vals)?;
                if d > 2 {
                    c(0)
                } else {
                    size_t(self.gid[d].clone())
                }
            }
            "get_local_id" => {
                let d = self.dim(vals)?;
                if d > 2 {
                    c(0)
                } else {
                    let rel = self.gid[d].bvsub(BV::from_u64(off(d), 64));
                    size_t(rel.bvurem(BV::from_u64(l(d)?, 64)))
                }
            }
            "get_group_id" => {
                let d = self.dim(vals)?;
                if d > 2 {
                    c(0)
                } else {
                    let rel = self.gid[d].bvsub(BV::from_u64(off(d), 64));
                    size_t(rel.bvudiv(BV::from_u64(l(d)?, 64)))
                }
            }
            "get_global_size" => c(g(self.dim(vals)?)),
            "get_local_size" | "get_enqueued_local_size" => {
                let d = self.dim(vals)?;
                c(if d > 2 { 1 } else { l(d)? })
            }
            "get_num_groups" => {
                let d = self.dim(vals)?;
                c(if d > 2 {
                    1
                } else {
                    g(d).div_ceil(l(d)?.max(1))
                })
            }
            "get_global_offset" => c(off(self.dim(vals)?)),
            "get_work_dim" => Val::int(geo.global.len() as i64, 32, false),
            "barrier" | "work_group_barrier" | "mem_fence" | "read_mem_fence"
            | "write_mem_fence" => Val::Void,
            "min" | "max" | "fmin" | "fmax" if vals.len() == 2 => {
                let lt = binary(BinOp::Lt, vals[0].clone(), vals[1].clone())?;
                let c = lt.truthy()?;
                let pick_first = if name.ends_with("min") { c } else { c.not() };
                ite_val(&pick_first, &vals[0], &vals[1])?
            }
            "abs" if vals.len() == 1 => {
                let v = &vals[0];
                let Val::Int { bv, .. } = v else {
                    return Err("abs of a non-integer".into());
                };
                let neg = bv.bvslt(BV::from_u64(0, bv.get_size()));
                let r = neg.ite(&bv.bvneg(), bv);
                convert(
                    Val::Int {
                        bv: r,
                        signed: true,
                    },
                    ty,
                )?
            }
            "mad" | "fma" | "mad24" if vals.len() == 3 => {
                let m = binary(BinOp::Mul, vals[0].clone(), vals[1].clone())?;
                binary(BinOp::Add, m, vals[2].clone())?
            }
            "mul24" if vals.len() == 2 => binary(BinOp::Mul, vals[0].clone(), vals[1].clone())?,
            "sqrt" | "native_sqrt" | "half_sqrt" | "floor" | "ceil" | "trunc" | "round"
            | "rint" | "isnan" | "isinf" | "isfinite" | "signbit"
                if vals.len() == 1 =>
            {
                float_unary(name, &vals[0])?
            }
            "select" if vals.len() == 3 => {
                // Scalar condition: c ? b : a (vector conditions select by each lane's sign).
                match (&vals[2], &vals[0], &vals[1]) {
                    (Val::Vector(c), Val::Vector(a), Val::Vector(b)) if c.len() == a.len() => {
                        let mut lanes = Vec::new();
                        for ((c, a), b) in c.iter().zip(a).zip(b) {
                            let Val::Int { bv, .. } = c else {
                                return Err("select with a non-integer condition".into());
                            };
                            let msb = bv.extract(bv.get_size() - 1, bv.get_size() - 1);
                            let set = msb.eq(BV::from_u64(1, 1));
                            lanes.push(ite_val(&set, b, a)?);
                        }
                        Val::Vector(lanes)
                    }
                    (c, a, b) => ite_val(&c.truthy()?, b, a)?,
                }
            }
            "fabs" if vals.len() == 1 => match &vals[0] {
                Val::Flt { f, bits } => Val::Flt {
                    f: f.unary_abs(),
                    bits: *bits,
                },
                _ => return Err("fabs of a non-float".into()),
            },
            "clamp" if vals.len() == 3 => {
                let lo = binary(BinOp::Lt, vals[0].clone(), vals[1].clone())?.truthy()?;
                let v = ite_val(&lo, &vals[1], &vals[0])?;
                let hi = binary(BinOp::Gt, v.clone(), vals[2].clone())?.truthy()?;
                ite_val(&hi, &vals[2], &v)?
            }
            other if other.starts_with("convert_") || other.starts_with("as_") => {
                if other.starts_with("as_") {
                    let t = parse_value_type(ty).ok_or_else(|| other.to_string())?;
                    let bits = vals.first().ok_or("as_ without argument")?.to_bits()?;
                    Val::from_bits(&bits, t)
                } else {
                    let v = vals.first().cloned().ok_or("convert without argument")?;
                    builtins::convert_named(other, v, ty)?
                }
            }
            other => match builtins::scalar_builtin(other, vals, ty) {
                Some(r) => r?,
                None => return Err(format!("built-in {other}")),
            },
        })
    }
}

fn u8_type() -> ValueType {
    ValueType {
        scalar: crate::interface::Scalar::Int {
            bits: 8,
            signed: false,
        },
        lanes: 1,
    }
}

/// Field `name` of a struct value.
fn field_of(v: &Val, name: &str) -> Result<Val, String> {
    let Val::Struct { bits, layout } = v else {
        return Err(format!("member .{name} of a non-struct"));
    };
    let f = layout
        .field(name)
        .ok_or_else(|| format!("field .{name} of {}", layout.name))?;
    let lo = f.offset as u32 * 8;
    let hi = lo + f.ty.size() as u32 * 8 - 1;
    Ok(Val::from_bits(&bits.extract(hi, lo), f.ty))
}

/// The struct value with field `name` replaced by `v`.
fn with_field(s: &Val, name: &str, v: Val) -> Result<Val, String> {
    let Val::Struct { bits, layout } = s else {
        return Err(format!("member .{name} of a non-struct"));
    };
    let f = layout
        .field(name)
        .ok_or_else(|| format!("field .{name} of {}", layout.name))?;
    let v = convert(v, &f.ty.name())?;
    let new = v.to_bits()?;
    let lo = f.offset as u32 * 8;
    let hi = lo + f.ty.size() as u32 * 8 - 1;
    let w = bits.get_size();
    let mut acc = new;
    if lo > 0 {
        acc = acc.concat(bits.extract(lo - 1, 0));
    }
    if hi + 1 < w {
        acc = bits.extract(w - 1, hi + 1).concat(&acc);
    }
    Ok(Val::Struct {
        bits: acc,
        layout: layout.clone(),
    })
}

/// Float built-ins of one argument, lane-wise on vectors.
fn float_unary(name: &str, v: &Val) -> Result<Val, String> {
    use z3::ast::RoundingMode as Rm;
    match v {
        Val::Vector(l) => Ok(Val::Vector(
            l.iter()
                .map(|x| float_unary(name, x))
                .collect::<Result<_, _>>()?,
        )),
        Val::Flt { f, bits } => {
            let flt = |f| Ok(Val::Flt { f, bits: *bits });
            let test = |b: z3::ast::Bool| Ok(value::from_bool(b));
            match name {
                "sqrt" | "native_sqrt" | "half_sqrt" => flt(f.sqrt()),
                "floor" => {
                    flt(f.round_to_integral_with_rounding_mode(&Rm::round_towards_negative()))
                }
                "ceil" => {
                    flt(f.round_to_integral_with_rounding_mode(&Rm::round_towards_positive()))
                }
                "trunc" => flt(f.round_to_integral_with_rounding_mode(&Rm::round_towards_zero())),
                "round" => {
                    flt(f.round_to_integral_with_rounding_mode(&Rm::round_nearest_ties_to_away()))
                }
                "rint" => {
                    flt(f.round_to_integral_with_rounding_mode(&Rm::round_nearest_ties_to_even()))
                }
                "isnan" => test(f.is_nan()),
                "isinf" => test(f.is_infinite()),
                "isfinite" => test(f.is_nan().not() & f.is_infinite().not()),
                "signbit" => test(f.is_negative()),
                _ => Err(format!("built-in {name}")),
            }
        }
        _ => Err(format!("{name} of a non-float")),
    }
}

fn promote(v: &Val) -> Val {
    match v {
        Val::Int { bv, signed } if bv.get_size() < 32 => Val::Int {
            bv: if *signed {
                bv.sign_ext(32 - bv.get_size())
            } else {
                bv.zero_ext(32 - bv.get_size())
            },
            signed: true,
        },
        other => other.clone(),
    }
}

fn value_name(bits: u32) -> &'static str {
    match bits {
        16 => "half",
        64 => "double",
        _ => "float",
    }
}

/// Whether `e` is itself `&&` / `||`: as a right operand its leaves are the branch points,
/// not it (a left operand is a branch point either way, as in the coverage map).
fn is_logical(e: &Expr) -> bool {
    matches!(
        e.peel().kind,
        ExprKind::Binary {
            op: Some(BinOp::LAnd | BinOp::LOr),
            ..
        }
    )
}

/// `int[4][8]` → [4, 8] (empty when not an array of known size).
fn array_dims(ty: &str) -> Vec<u64> {
    let mut dims = Vec::new();
    let mut rest = ty;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            return Vec::new();
        };
        match rest[open + 1..open + close].trim().parse() {
            Ok(n) => dims.push(n),
            Err(_) => return Vec::new(),
        }
        rest = &rest[open + close + 1..];
    }
    dims
}

/// The leaves of a (nested) initialiser list, in memory order.
fn flatten_init<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match &e.peel().kind {
        ExprKind::InitList(items) => items.iter().for_each(|i| flatten_init(i, out)),
        _ => out.push(e),
    }
}

fn array_elem(ty: &str) -> &str {
    ty.split('[').next().unwrap_or(ty).trim()
}

/// Little-endian bytes of a bit-vector numeral of any width.
fn bv_bytes(m: &Model, v: &BV) -> Option<Vec<u8>> {
    let w = v.get_size();
    let mut out = Vec::new();
    let mut lo = 0;
    while lo < w {
        let hi = (lo + 64).min(w) - 1;
        let part = m.eval(&v.extract(hi, lo), true)?.as_u64()?;
        let n = ((hi - lo + 1) / 8) as usize;
        out.extend_from_slice(&part.to_le_bytes()[..n.max(1)]);
        lo += 64;
    }
    Some(out)
}
