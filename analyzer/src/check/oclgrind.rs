//! Oclgrind as the checking engine: registering it as a private OpenCL platform for a child
//! process, the environment that switches its checks on, and the parser of its diagnostics.
//!
//! Why a child process: Oclgrind is a simulator (thousands of times slower than a device) and
//! prints its diagnostics on the process's stderr. A child per launch gets a deadline (killed
//! when it runs out, the rest of the work goes on) and its stderr is read here, whole.

use super::finding::{Access, Diagnostic, Kind, Target};
use std::path::{Path, PathBuf};

/// Where Debian's `oclgrind` package puts the ICD library.
pub const ICD_LIBRARY: &str = "/usr/lib/oclgrind/liboclgrind-rt-icd.so";

/// Low bits of an Oclgrind address that are the byte offset; the bits above number the buffer.
const OFFSET_BITS: u32 = 48;

/// Which of Oclgrind's checks to switch on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Checks {
    /// `OCLGRIND_DATA_RACES=1`.
    pub races: bool,
    /// `OCLGRIND_UNINITIALIZED=1`.
    pub uninit: bool,
    /// `OCLGRIND_QUICK=1`: only the first and last work-groups run.
    pub quick: bool,
}

/// The ICD library, or why it is missing (one sentence for the CLI).
pub fn find_icd() -> Result<PathBuf, String> {
    let p = std::env::var_os("CLTRAP_OCLGRIND_ICD")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(ICD_LIBRARY));
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "Oclgrind's ICD library {} is missing: install Debian's `oclgrind` package (or set CLTRAP_OCLGRIND_ICD)",
            p.display()
        ))
    }
}

/// Writes the vendors file naming only Oclgrind into `dir`, a private folder that exists and
/// is empty (see `super::private::temp_dir`), for `OCL_ICD_VENDORS`. The file is created
/// exclusively: nothing already there is followed or overwritten.
pub fn vendors_dir(icd: &Path, dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join("oclgrind.icd"))?;
    writeln!(f, "{}", icd.display())
}

/// The environment of a child that runs a launch on Oclgrind with `checks`.
pub fn environment(vendors: &Path, checks: Checks) -> Vec<(&'static str, String)> {
    let on = |b: bool| if b { "1" } else { "0" }.to_string();
    vec![
        ("OCL_ICD_VENDORS", vendors.display().to_string()),
        ("OCL_ICD_PLATFORM_SORT", "none".into()),
        ("OCLGRIND_DATA_RACES", on(checks.races)),
        ("OCLGRIND_UNINITIALIZED", on(checks.uninit)),
        ("OCLGRIND_QUICK", on(checks.quick)),
        ("OCLGRIND_CHECK_API", "1".into()),
    ]
}

/// Splits Oclgrind's stderr into diagnostics. A diagnostic is a headline at column 0 followed
/// by tab-indented lines; a blank line ends it. Lines that fit no diagnostic are ignored.
pub fn parse(stderr: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    // The message after a fatal error's headline is Oclgrind's, whatever it says.
    let mut fatal_message = false;
    for line in stderr.lines() {
        if line.is_empty() {
            flush(&mut block, &mut out);
        } else if !line.starts_with('\t') && !line.starts_with(' ') {
            flush(&mut block, &mut out);
            if fatal_message {
                block.push(FATAL);
            }
            fatal_message = line.starts_with(FATAL);
            block.push(line);
        } else if !block.is_empty() {
            block.push(line);
        }
    }
    flush(&mut block, &mut out);
    out
}

/// The headline Oclgrind prints before the message of an error it cannot go on from
/// (`OCLGRIND FATAL ERROR (./src/plugins/Uninitialized.cpp:1805)`).
const FATAL: &str = "OCLGRIND FATAL ERROR";

/// Whether a headline says Oclgrind itself cannot simulate something (`Unsupported
/// instruction: freeze`, `Unhandled operand type`, `Unsupported intrinsic ...`, a feature
/// not implemented): a limit of the engine, never a defect of the kernel.
fn is_engine_failure(headline: &str) -> bool {
    let h = headline.trim();
    h.starts_with(FATAL)
        || h.starts_with("Unsupported ")
        || h.starts_with("Unhandled ")
        || h.contains("not implemented")
        || h.contains("not supported")
}

/// One thing Oclgrind could not simulate, with where in Oclgrind it stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineFailure {
    /// Oclgrind's message (`Unsupported instruction: freeze`).
    pub message: String,
    /// Oclgrind's source file and line of a fatal error (`./src/plugins/Uninitialized.cpp:1805`),
    /// empty when it printed none.
    pub origin: String,
}

impl EngineFailure {
    /// Whether it is the uninitialised-value plugin that stopped (so a run without that
    /// plugin can still check the rest).
    pub fn in_uninitialized_plugin(&self) -> bool {
        self.origin.contains("Uninitialized.cpp")
    }
}

/// What Oclgrind said it cannot simulate, in the order printed: the message after each
/// `OCLGRIND FATAL ERROR (file:line)` headline, and any other headline of that class. These
/// are taken out of [`parse`]'s diagnostics: the launch was not checked whole by Oclgrind.
pub fn engine_failures(stderr: &str) -> Vec<EngineFailure> {
    let mut out: Vec<EngineFailure> = Vec::new();
    let mut lines = stderr
        .lines()
        .filter(|l| !l.starts_with('\t') && !l.starts_with(' '));
    while let Some(line) = lines.next() {
        if let Some(rest) = line.trim().strip_prefix(FATAL) {
            let origin = rest
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .to_string();
            let message = lines.next().unwrap_or("").trim().to_string();
            out.push(EngineFailure { message, origin });
        } else if !line.trim().is_empty() && is_engine_failure(line) {
            out.push(EngineFailure {
                message: line.trim().to_string(),
                origin: String::new(),
            });
        }
    }
    out
}

fn flush(block: &mut Vec<&str>, out: &mut Vec<Diagnostic>) {
    if let Some(d) = diagnostic(block) {
        out.push(d);
    }
    block.clear();
}

fn kind_of(headline: &str) -> Kind {
    if headline.starts_with("Invalid read") {
        Kind::InvalidRead
    } else if headline.starts_with("Invalid write") {
        Kind::InvalidWrite
    } else if headline.contains("data race at") {
        Kind::DataRace
    } else if headline.starts_with("Uninitialized value") {
        Kind::Uninitialized
    } else if headline.starts_with("Work-group divergence detected (barrier)") {
        Kind::BarrierDivergence
    } else if headline.starts_with("Oclgrind - OpenCL runtime error detected") {
        Kind::ApiMisuse
    } else {
        Kind::Other
    }
}

/// `(a,b,c)` after `label`, e.g. `Global(15,0,0)`.
fn triple(text: &str, label: &str) -> Option<[u64; 3]> {
    let rest = &text[text.find(label)? + label.len()..];
    let inner = rest.strip_prefix('(')?.split(')').next()?;
    let v: Vec<u64> = inner
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

/// `At line 25 (column 12) of input.cl:` → (25, 12).
fn line_col(text: &str) -> Option<(u32, u32)> {
    let rest = text.trim().strip_prefix("At line ")?;
    let (line, rest) = rest.split_once(' ')?;
    let col = rest.strip_prefix("(column ")?.split(')').next()?;
    Some((line.parse().ok()?, col.parse().ok()?))
}

/// `... at global memory address 0x2000000000100` → (space, address); `of size 4` → size.
fn memory(headline: &str) -> Option<(String, u64, Option<u32>)> {
    let (before, hex) = headline.rsplit_once(" memory address 0x")?;
    let address = u64::from_str_radix(hex.trim(), 16).ok()?;
    let space = before.rsplit(' ').next()?.to_string();
    let size = headline
        .split_once("of size ")
        .and_then(|(_, r)| r.split(' ').next())
        .and_then(|s| s.parse().ok());
    Some((space, address, size))
}

/// One block → one diagnostic; `None` for blocks that are not Oclgrind diagnostics.
fn diagnostic(block: &[&str]) -> Option<Diagnostic> {
    let (headline, body) = block.split_first()?;
    if is_engine_failure(headline) {
        // Oclgrind's own limit (see `engine_failures`), not a finding.
        return None;
    }
    let kernel = body
        .iter()
        .find_map(|l| l.trim().strip_prefix("Kernel:"))
        .map(|k| k.trim().to_string());
    let kind = kind_of(headline);
    // Without a kernel it is not a kernel diagnostic (an API error names a function instead).
    let kernel = match (kernel, &kind) {
        (Some(k), _) => k,
        (None, Kind::Other | Kind::ApiMisuse) if headline.starts_with("Oclgrind") => String::new(),
        (None, _) => return None,
    };
    let mut accesses: Vec<Access> = Vec::new();
    let mut entity: Option<&str> = None;
    let mut group: Option<[u64; 3]> = None;
    let mut detail = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let t = body[i].trim();
        if let Some(e) = t
            .strip_prefix("Entity:")
            .or_else(|| t.strip_prefix("First entity:"))
            .or_else(|| t.strip_prefix("Second entity:"))
        {
            entity = Some(e);
        } else if let Some(w) = t.strip_prefix("Work-group:") {
            group = triple(&format!("G{}", w.trim()), "G");
        } else if let Some((line, column)) = line_col(t) {
            let code = body
                .get(i + 1)
                .map(|c| c.trim().to_string())
                .unwrap_or_default();
            i += 1;
            let who = entity.take().unwrap_or("");
            accesses.push(Access {
                line,
                column,
                code,
                global: triple(who, "Global"),
                local: triple(who, "Local"),
                group: triple(who, "Group").or(group),
            });
        } else if t.starts_with("Only ")
            || t.starts_with("Function:")
            || t.starts_with("Error:")
            || (kind == Kind::ApiMisuse && !t.is_empty())
        {
            detail.push(t.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        i += 1;
    }
    let target = memory(headline).map(|(space, address, size)| Target {
        space,
        address,
        size,
        arg_index: None,
        arg_name: None,
        offset: address & ((1u64 << OFFSET_BITS) - 1),
        arg_size: None,
    });
    let mut accesses = accesses.into_iter();
    // An API error's headline says only that there is one: the message is its lines.
    let message = if kind == Kind::ApiMisuse && !detail.is_empty() {
        let words: Vec<&str> = detail
            .iter()
            .map(|l| {
                l.strip_prefix("Function:")
                    .or_else(|| l.strip_prefix("Error:"))
                    .unwrap_or(l)
                    .trim()
            })
            .collect();
        words.join(": ")
    } else {
        headline.trim().to_string()
    };
    Some(Diagnostic {
        kind,
        message,
        detail,
        kernel,
        first: accesses.next(),
        second: accesses.next(),
        target,
        by: "oclgrind".into(),
    })
}

/// The API function an [`Kind::ApiMisuse`] diagnostic names (`Function: clEnqueueNDRangeKernel`).
pub fn api_function(d: &Diagnostic) -> Option<&str> {
    d.detail
        .iter()
        .find_map(|l| l.strip_prefix("Function:"))
        .map(str::trim)
}

/// Maps a global-memory target to the launch's arguments: Oclgrind numbers buffers from 1 in
/// the order they are created, and the child process creates nothing but the launch's memory
/// objects, in `buffers` order (argument index, name, size).
///
/// An address is the buffer's number above [`OFFSET_BITS`] plus the offset, so an access a
/// few bytes *before* buffer `n` reads as buffer `n - 1` at an offset near 2^48: offsets in
/// the upper half of the range are such accesses, mapped to the next buffer with a negative
/// offset (no buffer is 2^47 bytes large).
pub fn map_target(target: &mut Target, buffers: &[(usize, String, u64)]) {
    if target.space != "global" && target.space != "constant" {
        return;
    }
    let mut number = (target.address >> OFFSET_BITS) as usize;
    let low = target.address & ((1u64 << OFFSET_BITS) - 1);
    if low >= 1u64 << (OFFSET_BITS - 1) {
        number += 1;
        target.offset = (low as i64 - (1i64 << OFFSET_BITS)) as u64;
    }
    if let Some((index, name, size)) = number.checked_sub(1).and_then(|n| buffers.get(n)) {
        target.arg_index = Some(*index);
        target.arg_name = Some(name.clone());
        target.arg_size = Some(*size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RACE: &str = "\nRead-write data race at global memory address 0x2000000000040\n\tKernel: global_race\n\t\n\tFirst entity:  Global(16,0,0) Local(0,0,0) Group(1,0,0)\n\t  store i32 %0, i32 addrspace(1)* %arrayidx2, align 4\n\tAt line 25 (column 12) of input.cl:\n\t  out[g] = in[g];\n\t\n\tSecond entity: Global(15,0,0) Local(15,0,0) Group(0,0,0)\n\t  %1 = load i32\n\tAt line 28 (column 19) of input.cl:\n\t  out[g] += out[g + 1];\n\t\n\nInvalid write of size 4 at global memory address 0x2000000000100\n\tKernel: off_by_one\n\tEntity: Global(63,0,0) Local(15,0,0) Group(3,0,0)\n\t  store i32 %0\n\tAt line 40 (column 16) of input.cl:\n\t  out[g + 1] = in[g + 1];\n\t\ncheck: all results correct\n\nWork-group divergence detected (barrier)\n\tKernel:     divergent_barrier\n\tWork-group: (1,0,0)\n\tOnly 8 out of 16 work-items executed barrier\n\t  tail call spir_func void @_Z7barrierj(i32 noundef 1)\n\tAt line 71 (column 9) of input.cl:\n\t  barrier(CLK_LOCAL_MEM_FENCE);\n\t\n";

    /// Oclgrind 21.10's words on `freeze` (clang freezes the operands of a `/` and `%` pair),
    /// after a race it found before it stopped.
    const FREEZE: &str = "\nRead-write data race at global memory address 0x2000000000040\n\tKernel: f\n\t\n\tFirst entity:  Global(16,0,0) Local(0,0,0) Group(1,0,0)\n\t  store i32 %0\n\tAt line 5 (column 12) of input.cl:\n\t  out[g] = 1;\n\t\n\tSecond entity: Global(15,0,0) Local(15,0,0) Group(0,0,0)\n\t  %1 = load i32\n\tAt line 6 (column 19) of input.cl:\n\t  x = out[g];\n\t\n\nOCLGRIND FATAL ERROR (./src/plugins/Uninitialized.cpp:1805)\nUnsupported instruction: freeze\n\tKernel: f\n\tEntity: Global(0,0,0) Local(0,0,0) Group(0,0,0)\n\t  %conv.frozen = freeze i32 %conv\n\tDebugging information not available.\n\t\n\t\n\nOCLGRIND FATAL ERROR (./src/core/WorkItem.cpp:10)\nSomething else went wrong\n\tKernel: f\n\nUnhandled operand type: 7\n\tKernel: f\n";

    #[test]
    fn what_oclgrind_cannot_simulate_is_its_failure_not_a_finding() {
        let d = parse(FREEZE);
        assert_eq!(d.len(), 1, "only the race is a finding: {d:#?}");
        assert_eq!(d[0].kind, Kind::DataRace);
        let f = engine_failures(FREEZE);
        assert_eq!(
            f.iter().map(|f| f.message.as_str()).collect::<Vec<_>>(),
            vec![
                "Unsupported instruction: freeze",
                "Something else went wrong",
                "Unhandled operand type: 7"
            ]
        );
        assert_eq!(f[0].origin, "./src/plugins/Uninitialized.cpp:1805");
        assert!(f[0].in_uninitialized_plugin() && !f[1].in_uninitialized_plugin());
        assert_eq!(engine_failures(RACE), vec![]);
    }

    #[test]
    fn oclgrind_text_becomes_typed_diagnostics() {
        let d = parse(RACE);
        assert_eq!(d.len(), 3, "{d:#?}");
        assert_eq!(d[0].kind, Kind::DataRace);
        let (a, b) = (d[0].first.clone().unwrap(), d[0].second.clone().unwrap());
        assert_eq!((a.line, a.column, a.global), (25, 12, Some([16, 0, 0])));
        assert_eq!((b.line, b.column, b.group), (28, 19, Some([0, 0, 0])));
        assert_eq!(b.code, "out[g] += out[g + 1];");
        assert_eq!(d[1].kind, Kind::InvalidWrite);
        let mut t = d[1].target.clone().unwrap();
        assert_eq!(
            (t.space.as_str(), t.offset, t.size),
            ("global", 256, Some(4))
        );
        map_target(&mut t, &[(1, "in".into(), 256), (0, "out".into(), 256)]);
        assert_eq!((t.arg_index, t.arg_name.as_deref()), (Some(0), Some("out")));
        // Four bytes before the second buffer: Oclgrind's address is the first buffer's
        // number with an offset of 2^48 - 4.
        let mut before = Target {
            address: (2u64 << OFFSET_BITS) - 4,
            offset: (1u64 << OFFSET_BITS) - 4,
            ..t.clone()
        };
        map_target(&mut before, &[(0, "src".into(), 64), (5, "dst".into(), 64)]);
        assert_eq!(
            (
                before.arg_index,
                before.arg_name.as_deref(),
                before.signed_offset()
            ),
            (Some(5), Some("dst"), -4)
        );
        assert_eq!(
            before.describe(),
            "argument 5 (dst), byte offset -4 of a 64-byte buffer"
        );
        assert_eq!(d[2].kind, Kind::BarrierDivergence);
        assert_eq!(d[2].kernel, "divergent_barrier");
        let w = d[2].first.clone().unwrap();
        assert_eq!((w.line, w.group), (71, Some([1, 0, 0])));
        assert_eq!(
            d[2].detail,
            vec!["Only 8 out of 16 work-items executed barrier"]
        );
    }
}
