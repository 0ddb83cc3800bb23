//! `cltrap merge OUT SHARD_DIRS...`: the shards of one campaign (`--shard I/N` runs, on one
//! machine or on a cluster's nodes) become the report one run would have written.
//!
//! The shards' journals must all come from the same command line and together hold every
//! shard once. The campaign is built again from that command line (relative paths resolve
//! against the folder it was run in), its unit list is recomputed, and every unit must have
//! a result; then the report goes to stdout and the report files the command names are
//! written into OUT under their own file names, next to a merged journal.

use super::journal::{self, Header, Writer};
use super::{Campaign, Finished, Unit};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Builds the campaign a command line (after `cltrap`, without campaign flags) describes.
pub type Build<'a> = &'a dyn Fn(&[String]) -> Result<Box<dyn Campaign>, String>;

/// Merges `shards` into `out_dir`; returns the command's exit status.
pub fn merge(
    out_dir: &Path,
    shards: &[PathBuf],
    build: Build,
    out: &mut dyn Write,
) -> Result<u8, String> {
    if shards.is_empty() {
        return Err("cltrap merge needs at least one shard folder".into());
    }
    let mut first: Option<(PathBuf, Header)> = None;
    let mut seen: BTreeMap<usize, PathBuf> = BTreeMap::new();
    let mut results: BTreeMap<String, Finished> = BTreeMap::new();
    for dir in shards {
        let j = journal::read(dir).map_err(|e| e.to_string())?;
        if j.refused > 0 {
            return Err(format!(
                "{} holds {} result line(s) that carry no seal of your journal key (written elsewhere, or changed since): shards must come from your own runs",
                dir.display(),
                j.refused
            ));
        }
        match &first {
            None => first = Some((dir.clone(), j.header.clone())),
            Some((d0, h0)) => {
                if h0.fingerprint != j.header.fingerprint || h0.args != j.header.args {
                    return Err(format!(
                        "{} holds a campaign of `cltrap {}` but {} one of `cltrap {}`: shards of different commands cannot be merged",
                        d0.display(),
                        h0.shown_args(),
                        dir.display(),
                        j.header.shown_args()
                    ));
                }
                if h0.shard.map(|s| s.count) != j.header.shard.map(|s| s.count) {
                    return Err(format!(
                        "{} and {} were cut into different numbers of shards",
                        d0.display(),
                        dir.display()
                    ));
                }
            }
        }
        if let Some(s) = j.header.shard {
            if let Some(other) = seen.insert(s.index, dir.clone()) {
                return Err(format!(
                    "{} and {} are both shard {s}",
                    other.display(),
                    dir.display()
                ));
            }
        }
        results.extend(j.finished);
    }
    let Some((_, header)) = first else {
        return Err("cltrap merge needs at least one shard folder".into());
    };
    if let Some(s) = header.shard {
        if let Some(missing) = (0..s.count).find(|i| !seen.contains_key(i)) {
            return Err(format!(
                "shard {missing}/{} is missing: give every shard folder of the campaign",
                s.count
            ));
        }
    }
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let out_dir = out_dir
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", out_dir.display()))?;
    // The command's relative paths (the capture) are relative to where it ran.
    std::env::set_current_dir(&header.cwd).map_err(|e| {
        format!(
            "cannot enter {}, where the shards ran (the capture must be on a filesystem this machine sees): {e}",
            crate::list::escape_controls(&header.cwd.display().to_string())
        )
    })?;
    let mut c = build(&header.args)?;
    c.folders(&out_dir, shards);
    let units = c.units()?;
    if units.len() != header.units {
        return Err(format!(
            "the campaign has {} unit(s) now but {} when the shards ran: its input changed",
            units.len(),
            header.units
        ));
    }
    // A unit a shard did not run because one of its results made it pointless is not
    // missing (each shard drops only what its own results supersede).
    let superseded = super::superseded_by(c.as_ref(), &units, &results);
    let mut merged: Vec<(Unit, Finished)> = Vec::with_capacity(units.len());
    let mut missing: Vec<&str> = Vec::new();
    for u in &units {
        match results.remove(&u.id) {
            Some(f) => merged.push((u.clone(), f)),
            None if superseded.contains(&u.id) => {}
            None => missing.push(&u.id),
        }
    }
    if let Some(m) = missing.first() {
        return Err(format!(
            "{} unit(s) have no result in the shards (first: {m}); run the unfinished shard again with --resume",
            missing.len()
        ));
    }
    // Every report goes into the merge's folder, under its own name; a recorded path with
    // none (`.`, or ending in `..`) is the merge's folder itself, never where the shards'
    // header says.
    for p in c.report_files() {
        *p = match p.file_name() {
            Some(name) => out_dir.join(name),
            None => out_dir.clone(),
        };
    }
    let whole = Header {
        shard: None,
        ..header
    };
    let mut w = Writer::open(&out_dir, &whole, false).map_err(|e| {
        format!(
            "cannot write the merged journal in {}: {e}",
            out_dir.display()
        )
    })?;
    for (_, f) in &merged {
        w.append(f).map_err(|e| {
            format!(
                "cannot write the merged journal in {}: {e}",
                out_dir.display()
            )
        })?;
    }
    c.report(&merged, true, out)
}
