//! Typed findings of `cltrap check`: what an engine (Oclgrind or the native instrumented
//! run) reported, per launch, and deduplicated.
//!
//! Why a type of its own: the terminal, JSON and SARIF reports all render the same findings,
//! and the deduplication rule (one finding per kind and source-location pair) lives here once.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The class of a defect.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Two work-items access the same address without synchronisation, one of them writing.
    DataRace,
    /// A load outside every allocation (or past the end of one).
    InvalidRead,
    /// A store outside every allocation (or past the end of one).
    InvalidWrite,
    /// A value that was never initialised is used (Oclgrind reports where it escapes).
    Uninitialized,
    /// A barrier not reached by every work-item of a work-group.
    BarrierDivergence,
    /// The launch itself misuses the API: an error Oclgrind's API checks raise when the
    /// launch is replayed there (`CL_INVALID_WORK_GROUP_SIZE`, ...), or what the capture shows
    /// without running anything (a local size that does not divide the global size).
    ApiMisuse,
    /// Any other diagnostic Oclgrind prints: kept, not lost. (What Oclgrind cannot simulate
    /// is not one: see `oclgrind::engine_failures`.)
    Other,
}

impl Kind {
    /// The stable rule id used in JSON and SARIF (`data-race`, `invalid-read`, ...).
    pub fn rule_id(&self) -> &'static str {
        match self {
            Kind::DataRace => "data-race",
            Kind::InvalidRead => "invalid-read",
            Kind::InvalidWrite => "invalid-write",
            Kind::Uninitialized => "uninitialized",
            Kind::BarrierDivergence => "barrier-divergence",
            Kind::ApiMisuse => "api-misuse",
            Kind::Other => "other",
        }
    }

    /// `error` for defects in the kernel's behaviour, `warning` for API misuse (the launch
    /// ran where it was captured, but is not portable).
    pub fn level(&self) -> &'static str {
        match self {
            Kind::ApiMisuse => "warning",
            _ => "error",
        }
    }

    /// Which `--races/--bounds/--uninit` family selects this kind; `None` = always reported.
    pub fn family(&self) -> Option<Family> {
        match self {
            Kind::DataRace => Some(Family::Races),
            Kind::InvalidRead | Kind::InvalidWrite => Some(Family::Bounds),
            Kind::Uninitialized => Some(Family::Uninit),
            Kind::BarrierDivergence | Kind::ApiMisuse | Kind::Other => None,
        }
    }
}

/// The check families a user switches on (`--races`, `--bounds`, `--uninit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Data races (Oclgrind's `OCLGRIND_DATA_RACES`).
    Races,
    /// Out-of-bounds accesses (Oclgrind's memory checks, always on there).
    Bounds,
    /// Uninitialised values (Oclgrind's `OCLGRIND_UNINITIALIZED`).
    Uninit,
}

/// One memory access (or barrier) at a source location, by one work-item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// 1-based line in the program's source (the concatenation of its source strings).
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// The source line as Oclgrind printed it (used when the capture lacks the source).
    pub code: String,
    /// Global id of the work-item, when Oclgrind names one.
    pub global: Option<[u64; 3]>,
    /// Local id of the work-item.
    pub local: Option<[u64; 3]>,
    /// Work-group id.
    pub group: Option<[u64; 3]>,
}

impl Access {
    /// `work-item (15,0,0) of group (0,0,0)`, or as much of it as is known.
    pub fn who(&self) -> String {
        let t = |v: &[u64; 3]| format!("({},{},{})", v[0], v[1], v[2]);
        match (&self.global, &self.group) {
            (Some(g), Some(w)) => format!("work-item {} of group {}", t(g), t(w)),
            (None, Some(w)) => format!("group {}", t(w)),
            (Some(g), None) => format!("work-item {}", t(g)),
            (None, None) => "a work-item".into(),
        }
    }
}

/// Where a bad memory access landed, mapped back to the launch's arguments when possible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// `global`, `local`, `constant` or `private`.
    pub space: String,
    /// Oclgrind's address (buffer number in the top 16 bits, byte offset below).
    pub address: u64,
    /// Access size in bytes, when given.
    pub size: Option<u32>,
    /// The kernel argument index the buffer was created for, when it could be mapped.
    pub arg_index: Option<usize>,
    /// That argument's name.
    pub arg_name: Option<String>,
    /// Byte offset into the buffer, in two's complement: an access before the buffer's start
    /// has a negative offset ([`Target::signed_offset`]).
    pub offset: u64,
    /// The buffer's size in bytes, when mapped.
    pub arg_size: Option<u64>,
}

impl Target {
    /// [`Target::offset`] as the signed distance from the buffer's start (-4: the four bytes
    /// just before it).
    pub fn signed_offset(&self) -> i64 {
        self.offset as i64
    }

    /// `argument 0 (out), byte offset 256 of 256` or the raw address.
    pub fn describe(&self) -> String {
        match (&self.arg_index, &self.arg_name, self.arg_size) {
            (Some(i), Some(n), Some(s)) => {
                format!(
                    "argument {i} ({n}), byte offset {} of a {s}-byte buffer",
                    self.signed_offset()
                )
            }
            _ => format!("{} memory address {:#x}", self.space, self.address),
        }
    }
}

/// One diagnostic as Oclgrind printed it, for one launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// The class.
    pub kind: Kind,
    /// Oclgrind's headline (`Invalid write of size 4 at global memory address 0x...`).
    pub message: String,
    /// Further lines of explanation (`Only 8 out of 16 work-items executed barrier`).
    pub detail: Vec<String>,
    /// The kernel it names.
    pub kernel: String,
    /// The (first) access: where the defect is.
    pub first: Option<Access>,
    /// The other access of a race.
    pub second: Option<Access>,
    /// The memory touched, for memory errors and races.
    pub target: Option<Target>,
    /// Who reported it: the engine (`oclgrind`), or `capture` for what the capture shows
    /// without running anything ([`super::api`]).
    pub by: String,
}

/// A deduplicated finding: one per kind and source-location pair.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The class.
    pub kind: Kind,
    /// The kernel.
    pub kernel: String,
    /// The program (its hash in the capture) whose source the lines refer to.
    pub program: String,
    /// Launch ids where it occurred, ascending.
    pub launches: Vec<u64>,
    /// How many times Oclgrind reported it, over all those launches.
    pub count: usize,
    /// One occurrence, as an example.
    pub example: Diagnostic,
}

/// A source position `(line, column)`.
type Position = Option<(u32, u32)>;

/// What makes two findings the same: kind, kernel, message (for `Other`), both positions.
type Identity = (Kind, String, String, Position, Position);

impl Finding {
    /// `(kind, kernel, first line:col, second line:col)`: the identity used to deduplicate.
    fn key(&self) -> Identity {
        let at = |a: &Option<Access>| a.as_ref().map(|a| (a.line, a.column));
        // Races arrive here in source order (see `deduplicate`), so A-B and B-A are one key.
        let pair = (at(&self.example.first), at(&self.example.second));
        let other = if matches!(self.kind, Kind::Other | Kind::ApiMisuse) {
            self.example.message.clone()
        } else {
            String::new()
        };
        (
            self.kind.clone(),
            self.kernel.clone(),
            other,
            pair.0,
            pair.1,
        )
    }
}

/// Merges per-launch diagnostics into findings, one per kind and location pair, in a stable
/// order (kernel, kind, line).
///
/// Each finding's example is its smallest occurrence ([`example_order`]), not the first one
/// that arrived: which occurrence an engine records first depends on how the device's threads
/// interleaved, and the launches may arrive in any order from a campaign's workers, so a
/// report is the same on every run only if the choice does not depend on arrival order.
pub fn deduplicate(items: impl IntoIterator<Item = (u64, String, Diagnostic)>) -> Vec<Finding> {
    let mut by_key: BTreeMap<_, Finding> = BTreeMap::new();
    for (launch, program, mut d) in items {
        // Oclgrind simulates work-groups on several threads, so either access of a race may
        // come first: the example lists them in source order (then by group and work-item
        // when both are at one position), the same on every run.
        if d.kind == Kind::DataRace && access_order(&d.second) < access_order(&d.first) {
            std::mem::swap(&mut d.first, &mut d.second);
        }
        let f = Finding {
            kind: d.kind.clone(),
            kernel: d.kernel.clone(),
            program,
            launches: vec![launch],
            count: 1,
            example: d,
        };
        match by_key.entry(f.key()) {
            std::collections::btree_map::Entry::Occupied(mut e) => {
                let kept = e.get_mut();
                kept.count += 1;
                // The example is the smallest occurrence, so its launch is the first of the
                // (sorted) launches seen before this one.
                let example_launch = kept.launches[0];
                if example_order(launch, &f.example) < example_order(example_launch, &kept.example)
                {
                    kept.example = f.example;
                    kept.program = f.program;
                }
                if !kept.launches.contains(&launch) {
                    kept.launches.push(launch);
                    kept.launches.sort_unstable();
                }
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(f);
            }
        }
    }
    let mut all: Vec<Finding> = by_key.into_values().collect();
    all.sort_by(|a, b| {
        let line = |f: &Finding| f.example.first.as_ref().map(|a| a.line);
        (&a.kernel, line(a), &a.kind).cmp(&(&b.kernel, line(b), &b.kind))
    });
    all
}

/// Where an access is and by whom, as an ordering key: position, then group, work-item
/// and local id.
type AccessOrder = Option<(
    u32,
    u32,
    Option<[u64; 3]>,
    Option<[u64; 3]>,
    Option<[u64; 3]>,
)>;

/// The key that orders two accesses of a race within an example.
fn access_order(a: &Option<Access>) -> AccessOrder {
    a.as_ref()
        .map(|a| (a.line, a.column, a.group, a.global, a.local))
}

/// The key that picks a finding's example among its occurrences: the smallest launch, then
/// the smallest first access (group, work-item), second access, byte offset and message.
fn example_order(
    launch: u64,
    d: &Diagnostic,
) -> (u64, AccessOrder, AccessOrder, Option<u64>, &str) {
    (
        launch,
        access_order(&d.first),
        access_order(&d.second),
        d.target.as_ref().map(|t| t.offset),
        d.message.as_str(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An access at `line:column` by work-item `global` of group `group`.
    fn access(line: u32, column: u32, global: u64, group: u64) -> Access {
        Access {
            line,
            column,
            code: String::new(),
            global: Some([global, 0, 0]),
            local: Some([global % 16, 0, 0]),
            group: Some([group, 0, 0]),
        }
    }

    /// The race of `global_race` between group `g` and group `g - 1` at the group boundary.
    fn race(g: u64) -> Diagnostic {
        let offset = g * 64;
        Diagnostic {
            kind: Kind::DataRace,
            message: format!("race at byte offset {offset} of `out`"),
            detail: Vec::new(),
            kernel: "global_race".into(),
            first: Some(access(25, 5, g * 16, g)),
            second: Some(access(28, 19, g * 16 - 1, g - 1)),
            target: Some(Target {
                space: "global".into(),
                address: offset,
                size: Some(4),
                arg_index: Some(0),
                arg_name: Some("out".into()),
                offset,
                arg_size: Some(256),
            }),
            by: "native".into(),
        }
    }

    #[test]
    fn the_example_is_the_smallest_occurrence_whatever_the_arrival_order() {
        let orders: [[u64; 3]; 6] = [
            [1, 2, 3],
            [1, 3, 2],
            [2, 1, 3],
            [2, 3, 1],
            [3, 1, 2],
            [3, 2, 1],
        ];
        for order in orders {
            let items = order.iter().map(|&g| (0, "p".to_string(), race(g)));
            let found = deduplicate(items);
            assert_eq!(found.len(), 1, "{order:?}");
            assert_eq!(found[0].count, 3);
            assert_eq!(found[0].example, race(1), "arrival order {order:?}");
        }
    }

    #[test]
    fn the_example_comes_from_the_smallest_launch_with_its_program() {
        let items = vec![
            (7, "seven".to_string(), race(1)),
            (2, "two".to_string(), race(3)),
            (5, "five".to_string(), race(2)),
        ];
        let found = deduplicate(items);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].launches, vec![2, 5, 7]);
        assert_eq!(found[0].example, race(3));
        assert_eq!(found[0].program, "two");
    }

    #[test]
    fn a_race_at_one_position_lists_the_smaller_group_first() {
        let mut d = race(1);
        d.first = Some(access(25, 5, 20, 1));
        d.second = Some(access(25, 5, 3, 0));
        let found = deduplicate(vec![(0, "p".to_string(), d)]);
        let ex = &found[0].example;
        assert_eq!(ex.first.as_ref().and_then(|a| a.group), Some([0, 0, 0]));
        assert_eq!(ex.second.as_ref().and_then(|a| a.group), Some([1, 0, 0]));
    }
}
