//! The one protocol between the runner and its workers: JSON lines.
//!
//! The runner writes one [`ToWorker`] per line on the worker's stdin. The worker answers on
//! its stdout with [`FromWorker`] lines: `alive` to restart the unit's deadline, then `done`
//! or `failed`. Lines of stdout that are not protocol lines (a kernel's `printf`, a driver's
//! chatter) are passed on to the runner's stderr, so they never corrupt the exchange.

use super::Unit;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A unit for the worker to run.
#[derive(Debug, Serialize, Deserialize)]
pub struct ToWorker {
    /// The unit.
    pub run: Unit,
}

/// What a worker says.
#[derive(Debug, Serialize, Deserialize)]
pub struct FromWorker {
    /// Always `"unit"`: marks protocol lines among whatever else reaches stdout.
    pub cltrap_unit: String,
    /// The unit's id.
    pub id: String,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

/// The events of a unit.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Still working on it (restarts the deadline).
    Alive,
    /// Finished with this result.
    Done {
        /// The analysis's result.
        result: Value,
        /// The device it ran on.
        device: String,
    },
    /// The analysis could not run it: the reason.
    Failed {
        /// One sentence.
        reason: String,
    },
}

impl FromWorker {
    /// A protocol line (with its newline).
    pub fn line(id: &str, event: Event) -> String {
        let msg = FromWorker {
            cltrap_unit: "unit".into(),
            id: id.to_string(),
            event,
        };
        // Serialising plain data cannot fail.
        let mut s = serde_json::to_string(&msg).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Parses a line of a worker's stdout: `None` when it is not a protocol line.
    pub fn parse(line: &str) -> Option<FromWorker> {
        if !line.starts_with("{\"cltrap_unit\"") {
            return None;
        }
        serde_json::from_str(line).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_other_output_is_not_protocol() {
        let l = FromWorker::line(
            "launch-1",
            Event::Done {
                result: serde_json::json!({"ok": true}),
                device: "cpu".into(),
            },
        );
        let m = FromWorker::parse(l.trim_end()).unwrap();
        assert_eq!(m.id, "launch-1");
        assert!(matches!(m.event, Event::Done { .. }));
        assert!(FromWorker::parse("hello from printf").is_none());
        assert!(FromWorker::parse("{\"cltrap_unit\": broken").is_none());
    }
}
