//! The one protocol between the runner and its workers: JSON lines.
//!
//! The runner writes one [`ToWorker`] per line on the worker's stdin: a unit to run, or
//! one to get ready for without running it (`warm`: no answer). The worker answers each unit on
//! its stdout with [`FromWorker`] lines: `alive` to restart the unit's deadline, then `done`
//! or `failed`. Lines of stdout that are not protocol lines (a kernel's `printf`, a driver's
//! chatter) are passed on to the runner's stderr, so they never corrupt the exchange.
//!
//! A `done` may carry `"retire": true`: the unit's result stands, but the worker no longer
//! trusts its device or its memory (the unit's kernel faulted on the device, or wrote where it
//! must not: after a device fault CUDA leaves the whole process's context unusable, and a wild
//! write on a CPU device lands in the worker's own heap), so it takes no further unit and
//! ends. Without it, the next unit that worker ran would inherit the damage, and which unit
//! that is depends on how many workers share the queue. The runner closes a retiring worker
//! and sends the unit it had sent ahead to the next one.

use super::Unit;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the runner asks of a worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// Run this unit (`{"run": unit}`).
    Run(Unit),
    /// Get ready for units like this one (open the device, read the inputs, build the
    /// program) without running it: a spare worker started ahead of need, so that replacing
    /// a dead one costs nothing. No answer (`{"warm": unit}`).
    Warm(Unit),
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
        /// The worker's device or memory can no longer be trusted (see the module's doc), so
        /// it takes no further unit and ends; the unit's own result stands. Absent: false.
        #[serde(default, skip_serializing_if = "is_false")]
        retire: bool,
    },
    /// The analysis could not run it: the reason.
    Failed {
        /// One sentence.
        reason: String,
        /// As for [`Event::Done`]: the worker ends after saying so (a unit that failed after
        /// a device fault). Absent: false.
        #[serde(default, skip_serializing_if = "is_false")]
        retire: bool,
    },
}

/// `retire: false` is left off the wire: the line of a worker that goes on is as before.
fn is_false(b: &bool) -> bool {
    !*b
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
    fn a_unit_and_a_warm_up_are_told_apart_on_the_wire() {
        let u = Unit {
            id: "launch-1".into(),
            payload: Value::Null,
        };
        let line = serde_json::to_string(&ToWorker::Run(u.clone())).unwrap();
        assert_eq!(line, r#"{"run":{"id":"launch-1","payload":null}}"#);
        assert!(matches!(serde_json::from_str(&line).unwrap(), ToWorker::Run(v) if v == u));
        let warm = serde_json::to_string(&ToWorker::Warm(u.clone())).unwrap();
        assert_eq!(warm, r#"{"warm":{"id":"launch-1","payload":null}}"#);
        assert!(matches!(serde_json::from_str(&warm).unwrap(), ToWorker::Warm(v) if v == u));
    }

    #[test]
    fn lines_round_trip_and_other_output_is_not_protocol() {
        let l = FromWorker::line(
            "launch-1",
            Event::Done {
                result: serde_json::json!({"ok": true}),
                device: "cpu".into(),
                retire: false,
            },
        );
        assert!(!l.contains("retire"), "{l}");
        let m = FromWorker::parse(l.trim_end()).unwrap();
        assert_eq!(m.id, "launch-1");
        assert!(matches!(m.event, Event::Done { retire: false, .. }));
        assert!(FromWorker::parse("hello from printf").is_none());
        assert!(FromWorker::parse("{\"cltrap_unit\": broken").is_none());
    }

    #[test]
    fn a_retiring_worker_says_so_on_its_last_done() {
        let l = FromWorker::line(
            "mutant-0-3",
            Event::Done {
                result: serde_json::json!({"status": "RuntimeError"}),
                device: "gpu".into(),
                retire: true,
            },
        );
        assert!(l.contains(r#""retire":true"#), "{l}");
        let m = FromWorker::parse(l.trim_end()).unwrap();
        assert!(matches!(m.event, Event::Done { retire: true, .. }));
    }
}
