//! Launch-id selections as users type them: `3`, `0,2,5`, `2-7`, or a mix (`0,4-6`).

/// Why an id selection could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdsError {
    #[error("{0:?} is not a launch id selection: expected ids like 3, 0,2,5 or 2-7")]
    /// Not ids, commas and ranges.
    Syntax(String),
    #[error("the range {0:?} is empty: its end is below its start")]
    /// A range whose end is below its start.
    Backwards(String),
}

/// Parses a selection into ids, in the order written, without duplicates.
pub fn parse_ids(text: &str) -> Result<Vec<u64>, IdsError> {
    let syntax = || IdsError::Syntax(text.to_string());
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
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
        for id in a..=b {
            if seen.insert(id) {
                out.push(id);
            }
        }
    }
    Ok(out)
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
}
