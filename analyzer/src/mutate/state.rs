//! The campaign's state file (`state.jsonl` in the output directory): one line per decided
//! mutant, appended as soon as it is decided, so an interrupted campaign (a crash of the
//! parent, Ctrl-C, a machine reboot) resumes without rerunning what it already knows.

use super::Status;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;

/// Decisions of earlier runs, by (program hash, mutant id).
pub type Previous = HashMap<(String, String), (Status, String)>;

#[derive(Serialize, Deserialize)]
struct Line {
    /// The settings that decide verdicts (suite, schedules, repeats, tolerance, budget):
    /// decisions made under other settings are not reused.
    #[serde(default)]
    config: String,
    program: String,
    mutant: String,
    status: Status,
    detail: String,
}

/// Reads the decisions of earlier runs made with settings `config`; a missing file or a torn
/// last line is not an error.
pub fn load(path: &Path, config: &str) -> Previous {
    let mut out = Previous::new();
    let Ok(f) = std::fs::File::open(path) else {
        return out;
    };
    for line in std::io::BufReader::new(f).lines().map_while(Result::ok) {
        if let Ok(l) = serde_json::from_str::<Line>(&line) {
            if l.config != config {
                continue;
            }
            out.insert((l.program, l.mutant), (l.status, l.detail));
        }
    }
    out
}

/// The state file, open for appending.
pub struct StateFile {
    file: std::fs::File,
    config: String,
}

impl StateFile {
    /// Opens (creating) the file for appending decisions made with settings `config`.
    pub fn open(path: &Path, config: &str) -> std::io::Result<StateFile> {
        Ok(StateFile {
            config: config.to_string(),
            file: std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?,
        })
    }

    /// Appends one decision (one line, flushed).
    pub fn record(
        &mut self,
        program: &str,
        mutant: &str,
        status: Status,
        detail: &str,
    ) -> std::io::Result<()> {
        let line = serde_json::to_string(&Line {
            config: self.config.clone(),
            program: program.into(),
            mutant: mutant.into(),
            status,
            detail: detail.into(),
        })
        .map_err(std::io::Error::other)?;
        writeln!(self.file, "{line}")?;
        self.file.flush()
    }
}
