//! How a pass's spool records are grouped for its threads: into chains (records that must go
//! in order on one thread) and runs of chains (one thread's share).

use cltrap_capture::spool;

/// `records` (each with its segment's index, in the order written) in chains: every record
/// that names a content another names too, as its own or as its base, goes in one chain
/// with it, in the order written. Why: a chain is one thread's work, so a patch is rebuilt
/// after its base, and a content is stored by one thread once (the others find it stored),
/// never by two at once (each would take the other's half-written index for a damaged one).
pub(super) fn chains<'a>(
    records: &[(usize, &'a spool::Record)],
) -> Vec<Vec<(usize, &'a spool::Record)>> {
    // Union-find over the records: each joins the first record that named each of its names.
    let mut parent: Vec<usize> = (0..records.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut first: std::collections::HashMap<&str, usize> = Default::default();
    for (i, (_, r)) in records.iter().enumerate() {
        let names =
            std::iter::once(r.hash.as_str()).chain(r.patch.as_ref().map(|p| p.base.as_str()));
        for name in names {
            let j = *first.entry(name).or_insert(i);
            let (a, b) = (root(&mut parent, i), root(&mut parent, j));
            // The earlier record's root stays the root (the chain's place among chains).
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut chain_at: std::collections::HashMap<usize, usize> = Default::default();
    let mut chains: Vec<Vec<(usize, &spool::Record)>> = Vec::new();
    for (i, &rec) in records.iter().enumerate() {
        let r = root(&mut parent, i);
        let c = *chain_at.entry(r).or_insert_with(|| {
            chains.push(Vec::new());
            chains.len() - 1
        });
        chains[c].push(rec);
    }
    chains
}

/// Chains of records split into runs of consecutive chains, each compacted by one thread
/// into packs of its own: about four runs per thread (so uneven runs still keep every
/// thread busy), none cut inside a chain (its versions go in order). Why runs, not a
/// thread per chain: a segment of whole records is a chain per record, and a pack per
/// record made creating files most of a compaction's time.
pub(super) fn groups(
    chains: &[Vec<(usize, &spool::Record)>],
    threads: usize,
) -> Vec<std::ops::Range<usize>> {
    let size =
        // Saturating: a forged record may claim any length.
        |c: &Vec<(usize, &spool::Record)>| {
            c.iter()
                .fold(0u64, |n, (_, r)| n.saturating_add(r.content_len()))
        };
    let total: u64 = chains.iter().fold(0u64, |n, c| n.saturating_add(size(c)));
    let target = (total / (4 * threads.max(1) as u64)).max(1);
    let mut out = Vec::new();
    let (mut start, mut held) = (0, 0u64);
    for (i, c) in chains.iter().enumerate() {
        held = held.saturating_add(size(c));
        if held >= target {
            out.push(start..i + 1);
            (start, held) = (i + 1, 0);
        }
    }
    if start < chains.len() {
        out.push(start..chains.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cltrap_capture::{spool::SpoolWriter, writer, writer_fs::Access};

    /// The records of a segment, in order.
    fn records(dir: &std::path::Path) -> Vec<spool::Record> {
        let mut out = Vec::new();
        for name in spool::segments(dir).unwrap() {
            let f = std::fs::File::open(dir.join(spool::SPOOL_DIR).join(name)).unwrap();
            out.extend(spool::scan(&f).unwrap().records);
        }
        out
    }

    /// A content spooled whole (b), another (a), then b again as a patch on a: all three in
    /// one chain, in the order written; an unrelated content (c) in a chain of its own.
    #[test]
    fn a_patch_joins_its_base_and_every_other_record_of_its_content() {
        let (a, c) = (vec![1u8; 4096], vec![3u8; 4096]);
        let mut b = a.clone();
        b[100..110].fill(2);
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        w.put(&writer::digest(&b), &b).unwrap();
        w.put(&writer::digest(&c), &c).unwrap();
        w.put(&writer::digest(&a), &a).unwrap();
        w.put_version(&writer::digest(&b), &b, &writer::digest(&a), &[(100, 10)])
            .unwrap();
        drop(w);
        let recs = records(t.path());
        assert_eq!(recs.len(), 4);
        assert!(recs[3].patch.is_some(), "not a patch record");
        let indexed: Vec<(usize, &spool::Record)> = recs.iter().map(|r| (0, r)).collect();
        let got: Vec<Vec<&str>> = chains(&indexed)
            .iter()
            .map(|ch| ch.iter().map(|(_, r)| r.hash.as_str()).collect())
            .collect();
        let (da, db, dc) = (writer::digest(&a), writer::digest(&b), writer::digest(&c));
        assert_eq!(
            got,
            vec![
                vec![db.as_str(), da.as_str(), db.as_str()],
                vec![dc.as_str()]
            ]
        );
    }

    /// Runs never cut a chain, cover every chain once, and forged lengths do not overflow.
    #[test]
    fn runs_cover_every_chain_once_whatever_the_lengths() {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        for i in 0..10u8 {
            let c = vec![i; 1000 + i as usize];
            w.put(&writer::digest(&c), &c).unwrap();
        }
        drop(w);
        let recs = records(t.path());
        let indexed: Vec<(usize, &spool::Record)> = recs.iter().map(|r| (0, r)).collect();
        let ch = chains(&indexed);
        assert_eq!(ch.len(), 10);
        for threads in [1, 2, 3, 16] {
            let runs = groups(&ch, threads);
            let covered: Vec<usize> = runs.iter().flat_map(|r| r.clone()).collect();
            assert_eq!(covered, (0..10).collect::<Vec<_>>(), "{threads} threads");
        }
    }
}
