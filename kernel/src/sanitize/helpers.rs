//! Which helper functions (non-kernel functions of the program's own text) the checks
//! instrument, and in what order.
//!
//! Why a module of its own: real kernels put their accesses in helpers (CLBlast's
//! `XgemmBody`), so a helper is rewritten like a kernel body, with the checker's state passed
//! in as extra trailing parameters: the report buffer, a pointer to the caller's barrier
//! interval counter, the `__local` scratch area, and per pointer parameter a *descriptor* of
//! the object it points into (base, extent, shadow, object id, shadow granule). Because the
//! descriptor is a run-time value, one instrumented definition serves every calling context
//! (two call sites handing it different objects, of any address space its parameter allows):
//! no clone is needed. That rewrite needs every call to the helper to take the extra
//! arguments, so a helper is instrumented only when its definition, its declarations and every
//! call to it can be edited in the program text; each one that cannot is named with why.
//! OpenCL C has no recursion, so the call graph is a DAG and helpers are instrumented callees
//! first (a caller needs what its callees do to its pointers).

use std::collections::{BTreeMap, BTreeSet};

use super::objects::Space;
use crate::model::{AddressSpace, ExprKind, Function, Param, Program};
use crate::rewrite::{call_text_editable, calls_to};

/// The helpers to instrument, callees first, and those that are not, with the reason.
pub(crate) struct Plan {
    pub order: Vec<String>,
    pub excluded: BTreeMap<String, String>,
}

/// The space of the descriptor a parameter gets (`None`: not a pointer the checks follow).
pub(crate) fn descriptor_space(param: &Param) -> Option<Space> {
    param.pointee.as_ref()?;
    match param.address_space {
        AddressSpace::Global => Some(Space::Global),
        AddressSpace::Constant => Some(Space::Constant),
        AddressSpace::Local => Some(Space::Local),
        _ => None,
    }
}

/// The extra parameters of an instrumented helper with parameters `params`.
pub(crate) fn extra_params(params: &[Param]) -> String {
    let mut decl =
        String::from("__global uint* __cltrap_rep, uint* __cltrap_epp, __local ulong* __cltrap_ls");
    for (i, p) in params.iter().enumerate() {
        if let Some(space) = descriptor_space(p) {
            let q = space.qualifier();
            decl.push_str(&format!(
                ", {q} char* __cltrap_pb{i}, ulong __cltrap_px{i}, __global uint* __cltrap_ps{i}, uint __cltrap_po{i}, uint __cltrap_pg{i}"
            ));
        }
    }
    decl
}

/// Decides which helpers of `p` are instrumented (see the module doc).
pub(crate) fn plan(p: &Program) -> Plan {
    let mut excluded: BTreeMap<String, String> = BTreeMap::new();
    let mut definitions: BTreeMap<&str, usize> = BTreeMap::new();
    for f in p
        .functions
        .iter()
        .filter(|f| !f.is_kernel && f.body.is_some())
    {
        *definitions.entry(f.name.as_str()).or_default() += 1;
    }
    for f in p.functions.iter().filter(|f| !f.is_kernel) {
        if !definitions.contains_key(f.name.as_str()) || excluded.contains_key(&f.name) {
            continue;
        }
        let why = if definitions.get(f.name.as_str()).copied().unwrap_or(0) > 1 {
            Some("it has several definitions (overloads)")
        } else if f.span.is_none() {
            Some("it is declared or defined in an included header, whose text is not rewritten")
        } else if f.params_open.is_none() || f.params_close.is_none() {
            Some("its parameter list is written inside a macro")
        } else {
            None
        };
        if let Some(why) = why {
            excluded.insert(f.name.clone(), why.to_string());
        }
    }
    let helpers: BTreeSet<String> = definitions.keys().map(|s| s.to_string()).collect();
    loop {
        let mut changed = false;
        for g in p.functions.iter().filter(|g| g.body.is_some()) {
            let caller_ok = if g.is_kernel {
                g.span.is_some()
            } else {
                helpers.contains(&g.name) && !excluded.contains_key(&g.name)
            };
            for call in calls_to(g, &helpers) {
                let ExprKind::Call { callee, .. } = &call.kind else {
                    continue;
                };
                if excluded.contains_key(callee) {
                    continue;
                }
                let why = if !caller_ok {
                    format!("it is called from `{}`, which is not instrumented", g.name)
                } else if !call_text_editable(p, call) {
                    format!(
                        "its call at line {} is written inside a macro, where the checker's state cannot be passed",
                        call.span.line
                    )
                } else {
                    continue;
                };
                excluded.insert(callee.clone(), why);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Callees first (a depth-first post-order; the set guards against a recursive program,
    // which OpenCL C forbids but a parser may still hand over).
    let mut order = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    fn visit(
        p: &Program,
        name: &str,
        excluded: &BTreeMap<String, String>,
        seen: &mut BTreeSet<String>,
        order: &mut Vec<String>,
    ) {
        if !seen.insert(name.to_string()) {
            return;
        }
        let Some(f): Option<&Function> = p.function(name) else {
            return;
        };
        for c in &f.calls {
            if p.function(c).is_some_and(|g| !g.is_kernel) && !excluded.contains_key(c) {
                visit(p, c, excluded, seen, order);
            }
        }
        order.push(name.to_string());
    }
    for name in &helpers {
        if !excluded.contains_key(name) {
            visit(p, name, &excluded, &mut seen, &mut order);
        }
    }
    Plan { order, excluded }
}
