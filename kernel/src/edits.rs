//! Source edits by byte ranges of the user's original text. Passes never print an AST back:
//! they insert and replace bytes, so everything the user wrote (comments, macros, layout, line
//! numbers) survives, and two passes' edits can be checked for conflicts before applying.

use crate::error::KernelError;

/// One insertion (empty range) or replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edit {
    start: usize,
    end: usize,
    text: String,
    order: i64,
    seq: usize,
}

/// An ordered set of edits over one source text.
///
/// Insertions at the same offset are applied by ascending `order`, then in the order they were
/// added: to wrap nested ranges `(outer (inner) )`, give an opening text the nesting depth and a
/// closing text minus the depth (see [`Edits::wrap`]). Replacements must not overlap each other,
/// and no insertion may fall strictly inside a replaced range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edits {
    items: Vec<Edit>,
}

impl Edits {
    /// No edits: applying gives back the original text.
    pub fn new() -> Self {
        Edits::default()
    }

    /// Whether there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Number of edits.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Inserts `text` at byte offset `at`, ordered among insertions at the same offset by `order`.
    pub fn insert(&mut self, at: u32, text: impl Into<String>, order: i64) {
        let seq = self.items.len();
        self.items.push(Edit {
            start: at as usize,
            end: at as usize,
            text: text.into(),
            order,
            seq,
        });
    }

    /// Replaces bytes `start..end` by `text`.
    pub fn replace(&mut self, start: u32, end: u32, text: impl Into<String>) {
        let seq = self.items.len();
        self.items.push(Edit {
            start: start as usize,
            end: end as usize,
            text: text.into(),
            order: 0,
            seq,
        });
    }

    /// Surrounds `start..end` with `open` and `close`; `depth` is the range's nesting depth so
    /// that wrappers of ranges sharing an end nest properly (outer opens first, closes last).
    pub fn wrap(
        &mut self,
        start: u32,
        end: u32,
        open: impl Into<String>,
        close: impl Into<String>,
        depth: i64,
    ) {
        self.insert(start, open, depth);
        self.insert(end, close, -depth);
    }

    /// Adds all edits of `other` (e.g. to combine passes); conflicts surface in [`Edits::apply`].
    pub fn extend(&mut self, other: Edits) {
        for mut e in other.items {
            e.seq = self.items.len();
            self.items.push(e);
        }
    }

    /// Applies the edits to `source`, failing on overlaps or offsets outside the text.
    pub fn apply(&self, source: &str) -> Result<String, KernelError> {
        let mut items: Vec<&Edit> = self.items.iter().collect();
        for e in &items {
            if e.start > e.end
                || e.end > source.len()
                || !source.is_char_boundary(e.start)
                || !source.is_char_boundary(e.end)
            {
                return Err(KernelError::BadInput(format!(
                    "edit {}..{} lies outside the {}-byte source",
                    e.start,
                    e.end,
                    source.len()
                )));
            }
        }
        items.sort_by_key(|e| (e.start, (e.end > e.start) as u8, e.order, e.seq));
        let mut out = String::with_capacity(
            source.len() + self.items.iter().map(|e| e.text.len()).sum::<usize>(),
        );
        let mut pos = 0usize;
        let mut last_repl: Option<(usize, usize)> = None;
        for e in items {
            if let Some((a, b)) = last_repl {
                if e.start < b && (e.end > e.start || e.start > a) {
                    return Err(KernelError::OverlappingEdits {
                        a_start: a,
                        a_end: b,
                        b_start: e.start,
                        b_end: e.end,
                    });
                }
            }
            out.push_str(&source[pos..e.start.max(pos)]);
            out.push_str(&e.text);
            pos = pos.max(e.end);
            if e.end > e.start {
                last_repl = Some((e.start, e.end));
            }
        }
        out.push_str(&source[pos..]);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_edits_give_back_the_original_text() {
        let src = "kernel void k() {\n  // é\n}\n";
        assert_eq!(Edits::new().apply(src).unwrap(), src);
    }

    #[test]
    fn nested_wraps_sharing_both_ends_nest_properly() {
        let mut e = Edits::new();
        e.wrap(0, 5, "A(", ")A", 1);
        e.wrap(0, 5, "B(", ")B", 2);
        e.insert(2, "|", 0);
        assert_eq!(e.apply("x&&yz").unwrap(), "A(B(x&|&yz)B)A");
    }

    #[test]
    fn insertion_next_to_a_replacement_is_allowed_inside_is_not() {
        let mut e = Edits::new();
        e.replace(2, 4, "XY");
        e.insert(2, "<", 0);
        e.insert(4, ">", 0);
        assert_eq!(e.apply("abcdef").unwrap(), "ab<XY>ef");
        e.insert(3, "!", 0);
        assert!(matches!(
            e.apply("abcdef"),
            Err(KernelError::OverlappingEdits { .. })
        ));
        let mut o = Edits::new();
        o.replace(1, 4, "");
        o.replace(3, 5, "");
        assert!(matches!(
            o.apply("abcdef"),
            Err(KernelError::OverlappingEdits { .. })
        ));
    }

    #[test]
    fn out_of_range_edit_is_an_error() {
        let mut e = Edits::new();
        e.insert(10, "x", 0);
        assert!(e.apply("abc").is_err());
    }
}
