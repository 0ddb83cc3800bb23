//! The flags every campaign command takes, and the command line a worker or a merge rebuilds
//! the campaign from.

use std::path::PathBuf;
use std::str::FromStr;

/// Where and how a campaign's units run.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CampaignArgs {
    /// Spread units over these devices of the platform: `all`, or device indices / name
    /// substrings separated by commas (default: the one device `--device` selects).
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
    /// Worker processes per device.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub workers_per_device: usize,
    /// Run only shard I of N (0 ≤ I < N) of the units, into a shard folder; `cltrap merge`
    /// combines the shard folders into the report one run would have written.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Skip the units an earlier run of the same command already finished (its journal).
    #[arg(long)]
    pub resume: bool,
    /// The campaign's folder: its journal of finished units (default: a folder named after
    /// the command and its arguments under the capture's `campaigns/`).
    #[arg(long, value_name = "DIR")]
    pub campaign_dir: Option<PathBuf>,
    /// Internal: serve units on stdin (a worker of the runner).
    #[arg(long, hide = true)]
    pub unit_worker: bool,
}

impl CampaignArgs {
    /// Whether the command asked for anything beyond one in-order run on one device.
    pub fn spread(&self) -> bool {
        self.devices.is_some() || self.workers_per_device > 1 || self.shard.is_some()
    }
}

/// One shard of a campaign: the units at positions `index`, `index + count`, … of the
/// campaign's order. The partition follows from the order alone, so every shard of the same
/// command sees the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// This shard, from 0.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl Shard {
    /// Whether the unit at `position` in the campaign's order belongs to this shard.
    pub fn owns(&self, position: usize) -> bool {
        position % self.count == self.index
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("--shard wants I/N with 0 <= I < N (like 0/4), not `{s}`");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Flags of [`CampaignArgs`] that take a value.
const VALUED: [&str; 4] = [
    "--devices",
    "--workers-per-device",
    "--shard",
    "--campaign-dir",
];
/// Flags of [`CampaignArgs`] that take none.
const BARE: [&str; 2] = ["--resume", "--unit-worker"];

/// The command line (after the program name) without the campaign flags: what identifies
/// the campaign (its journal's fingerprint) and what a worker or a merge runs again.
pub fn strip(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(it.cloned());
            break;
        }
        if BARE.contains(&a.as_str()) {
            continue;
        }
        if VALUED.contains(&a.as_str()) {
            it.next();
            continue;
        }
        if VALUED
            .iter()
            .any(|f| a.strip_prefix(f).is_some_and(|r| r.starts_with('=')))
        {
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// A short stable name for a command line: the first 16 hex digits of its blake3 digest.
pub fn fingerprint(args: &[String]) -> String {
    let mut h = blake3::Hasher::new();
    for a in args {
        h.update(&(a.len() as u64).to_le_bytes());
        h.update(a.as_bytes());
    }
    h.finalize().to_hex()[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn shards_parse_and_partition() {
        let sh: Shard = "1/3".parse().unwrap();
        assert_eq!(sh, Shard { index: 1, count: 3 });
        let owned: Vec<usize> = (0..7).filter(|p| sh.owns(*p)).collect();
        assert_eq!(owned, vec![1, 4]);
        for bad in ["3/3", "1", "a/2", "0/0", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn strip_removes_campaign_flags_only() {
        let argv = s(&[
            "check",
            "cap",
            "--devices",
            "all",
            "--shard=0/2",
            "--resume",
            "--json",
            "--campaign-dir",
            "d",
            "--unit-worker",
            "3",
        ]);
        assert_eq!(strip(&argv), s(&["check", "cap", "--json", "3"]));
        assert_eq!(
            fingerprint(&strip(&argv)),
            fingerprint(&s(&["check", "cap", "--json", "3"]))
        );
        assert_ne!(fingerprint(&s(&["a", "bc"])), fingerprint(&s(&["ab", "c"])));
    }
}
