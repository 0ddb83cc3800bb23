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
        |c: &Vec<(usize, &spool::Record)>| c.iter().map(|(_, r)| r.content_len()).sum::<u64>();
    let total: u64 = chains.iter().map(size).sum();
    let target = (total / (4 * threads.max(1) as u64)).max(1);
    let mut out = Vec::new();
    let (mut start, mut held) = (0, 0);
    for (i, c) in chains.iter().enumerate() {
        held += size(c);
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
