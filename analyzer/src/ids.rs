//! Launch-id selections as users type them: `3`, `0,2,5`, `2-7`, or a mix (`0,4-6`).

use cltrap_capture::Capture;

/// The most ids [`parse_ids`] expands a selection into without a capture to bound it by
/// (a range such as `0-4000000000` would otherwise be billions of ids held in memory before
/// any is looked up); [`parse_ids_in`] has no such limit: it expands only the capture's ids.
pub const MAX_EXPANDED: u64 = 1 << 24;

/// Why an id selection could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdsError {
    #[error("{0:?} is not a launch id selection: expected ids like 3, 0,2,5 or 2-7")]
    /// Not ids, commas and ranges.
    Syntax(String),
    #[error("the range {0:?} is empty: its end is below its start")]
    /// A range whose end is below its start.
    Backwards(String),
    #[error("the selection {0:?} names more than {MAX_EXPANDED} launch ids")]
    /// More ids than [`MAX_EXPANDED`], with no capture to bound them by.
    TooMany(String),
    #[error("launch {id} is not in this capture ({launches})")]
    /// An id selected that is neither a launch of the capture nor one of its damaged lines;
    /// `launches` says which ids the capture has ([`describe_launch_ids`]).
    NotInCapture { id: u64, launches: String },
}

impl IdsError {
    /// [`IdsError::NotInCapture`] for `id`, naming the launches `capture` has.
    pub fn not_in(capture: &Capture, id: u64) -> IdsError {
        let mut ids: Vec<u64> = capture.launches.iter().map(|l| l.id).collect();
        ids.sort_unstable();
        ids.dedup();
        IdsError::NotInCapture {
            id,
            launches: describe_launch_ids(&ids),
        }
    }
}

/// A selection as written: its ranges (a single id is a range of one), in order, not
/// expanded into ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    ranges: Vec<(u64, u64)>,
}

impl Selection {
    /// Parses `3`, `0,2,5`, `2-7` or a mix; ranges are kept as written, whatever their size.
    pub fn parse(text: &str) -> Result<Selection, IdsError> {
        let syntax = || IdsError::Syntax(text.to_string());
        let mut ranges = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(syntax());
            }
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let a: u64 = a.parse().map_err(|_| syntax())?;
            let b: u64 = b.parse().map_err(|_| syntax())?;
            if b < a {
                return Err(IdsError::Backwards(part.to_string()));
            }
            ranges.push((a, b));
        }
        Ok(Selection { ranges })
    }

    /// The inclusive ranges, in the order written.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// The ids selected, in the order written and without duplicates, when every one is in
    /// `known` (sorted, without duplicates); else `Err` with the first id, in that order,
    /// that is not. Costs time and memory in the ids of `known` that are selected, not in
    /// the width of the ranges: `0-4000000000` over a capture of 4 launches looks at 5 ids.
    pub fn within(&self, known: &[u64]) -> Result<Vec<u64>, u64> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &(a, b) in &self.ranges {
            // The next id of the range that must be known: the first that is not is missing.
            let mut next = Some(a);
            let from = known.partition_point(|&k| k < a);
            for &k in known[from..].iter().take_while(|&&k| k <= b) {
                if Some(k) != next {
                    return Err(next.unwrap_or(k));
                }
                if seen.insert(k) {
                    out.push(k);
                }
                next = k.checked_add(1);
            }
            if let Some(n) = next.filter(|&n| n <= b) {
                return Err(n);
            }
        }
        Ok(out)
    }
}

/// Parses a selection into ids, in the order written, without duplicates. With no capture
/// to bound the ranges by, a selection of more than [`MAX_EXPANDED`] ids is refused
/// ([`IdsError::TooMany`]); [`parse_ids_in`] is the one for a capture's launches.
pub fn parse_ids(text: &str) -> Result<Vec<u64>, IdsError> {
    let sel = Selection::parse(text)?;
    let total = sel
        .ranges
        .iter()
        .try_fold(0u64, |n, &(a, b)| n.checked_add(b - a)?.checked_add(1));
    if total.is_none_or(|n| n > MAX_EXPANDED) {
        return Err(IdsError::TooMany(text.to_string()));
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &(a, b) in &sel.ranges {
        for id in a..=b {
            if seen.insert(id) {
                out.push(id);
            }
        }
    }
    Ok(out)
}

/// Parses a selection of `capture`'s launches: its ids in the order written, without
/// duplicates. A range is bounded by the capture's ids before it is expanded (`0-4000000000`
/// on a capture of 4 launches costs 4 ids, not 4 billion). An id that is neither a launch
/// nor a damaged line of the capture is refused, as a single id or inside a range:
/// [`IdsError::NotInCapture`] names the first one. The ids of damaged lines are kept, for the
/// command to say what they are (`damage::drop_damaged`).
pub fn parse_ids_in(text: &str, capture: &Capture) -> Result<Vec<u64>, IdsError> {
    let sel = Selection::parse(text)?;
    let mut known: Vec<u64> = capture
        .launches
        .iter()
        .map(|l| l.id)
        .chain(capture.damaged.iter().filter_map(|d| d.id))
        .collect();
    known.sort_unstable();
    known.dedup();
    sel.within(&known)
        .map_err(|id| IdsError::not_in(capture, id))
}

/// The launch ids a capture has, for a sentence: `no launches`, `1 launch: id 0`,
/// `5 launches: ids 0 to 4`, `3 launches: ids 0-1,5` (where ids are missing, the runs, or
/// only the first and last when there are many). `ids` sorted, without duplicates.
pub fn describe_launch_ids(ids: &[u64]) -> String {
    const MAX_RUNS: usize = 8;
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
        return "no launches".into();
    };
    let n = ids.len();
    if n == 1 {
        return format!("1 launch: id {first}");
    }
    if last - first == (n - 1) as u64 {
        return format!("{n} launches: ids {first} to {last}");
    }
    let runs = 1 + ids.windows(2).filter(|w| w[1] != w[0] + 1).count();
    if runs <= MAX_RUNS {
        format!("{n} launches: ids {}", format_ids(ids))
    } else {
        format!("{n} launches: ids from {first} to {last}, with gaps (`cltrap list` names them)")
    }
}

/// The inverse of [`parse_ids`] for sorted ids: `0-3,7,9-10` (how listings name the launches
/// a record covers without printing thousands of numbers).
pub fn format_ids(ids: &[u64]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", ids[i], ids[j])
        } else {
            ids[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_lists_and_ranges_parse() {
        assert_eq!(parse_ids("3"), Ok(vec![3]));
        assert_eq!(parse_ids("0,2,5"), Ok(vec![0, 2, 5]));
        assert_eq!(parse_ids("2-7"), Ok(vec![2, 3, 4, 5, 6, 7]));
        assert_eq!(parse_ids("0, 4-5,4"), Ok(vec![0, 4, 5]));
    }

    #[test]
    fn ids_format_as_runs() {
        assert_eq!(format_ids(&[0, 1, 2, 3, 7, 9, 10]), "0-3,7,9-10");
        assert_eq!(format_ids(&[]), "");
        assert_eq!(parse_ids(&format_ids(&[4, 5, 8])), Ok(vec![4, 5, 8]));
    }

    #[test]
    fn malformed_selections_are_refused() {
        assert!(matches!(parse_ids(""), Err(IdsError::Syntax(_))));
        assert!(matches!(parse_ids("a"), Err(IdsError::Syntax(_))));
        assert!(matches!(parse_ids("1,,2"), Err(IdsError::Syntax(_))));
        assert!(matches!(parse_ids("-3"), Err(IdsError::Syntax(_))));
        assert_eq!(parse_ids("7-2"), Err(IdsError::Backwards("7-2".into())));
    }

    #[test]
    fn ranges_are_bounded_by_the_known_ids_before_they_are_expanded() {
        let sel = Selection::parse("0-4000000000").unwrap();
        assert_eq!(sel.ranges(), &[(0, 4_000_000_000)]);
        // Every id known: the ids; else the first one, in the order written, that is not.
        assert_eq!(
            Selection::parse("0-3").unwrap().within(&[0, 1, 2, 3]),
            Ok(vec![0, 1, 2, 3])
        );
        assert_eq!(sel.within(&[0, 1, 2, 3]), Err(4));
        assert_eq!(sel.within(&[]), Err(0));
        assert_eq!(sel.within(&[1, 2]), Err(0));
        assert_eq!(sel.within(&[0, 1, 3]), Err(2));
        let all = Selection::parse("2,0-18446744073709551615").unwrap();
        assert_eq!(all.within(&[0, 1, 2]), Err(3));
        let last = Selection::parse("18446744073709551614-18446744073709551615").unwrap();
        assert_eq!(
            last.within(&[5, u64::MAX - 1, u64::MAX]),
            Ok(vec![u64::MAX - 1, u64::MAX])
        );
        assert_eq!(
            Selection::parse("3,1-3,0").unwrap().within(&[0, 1, 2, 3]),
            Ok(vec![3, 1, 2, 0])
        );
    }

    #[test]
    fn a_huge_selection_without_a_capture_is_refused_not_expanded() {
        assert_eq!(
            parse_ids("0-4000000000"),
            Err(IdsError::TooMany("0-4000000000".into()))
        );
        assert_eq!(
            parse_ids("0-18446744073709551615"),
            Err(IdsError::TooMany("0-18446744073709551615".into()))
        );
        assert!(matches!(
            parse_ids("0-16777215,16777216"),
            Err(IdsError::TooMany(_))
        ));
    }

    #[test]
    fn a_captures_ids_are_described_as_they_are() {
        assert_eq!(describe_launch_ids(&[]), "no launches");
        assert_eq!(describe_launch_ids(&[0]), "1 launch: id 0");
        assert_eq!(describe_launch_ids(&[7]), "1 launch: id 7");
        assert_eq!(
            describe_launch_ids(&[0, 1, 2, 3, 4]),
            "5 launches: ids 0 to 4"
        );
        assert_eq!(describe_launch_ids(&[0, 1, 5]), "3 launches: ids 0-1,5");
        let sparse: Vec<u64> = (0..20).map(|i| i * 2).collect();
        assert_eq!(
            describe_launch_ids(&sparse),
            "20 launches: ids from 0 to 38, with gaps (`cltrap list` names them)"
        );
    }
}
