//! SARIF 2.1.0 output of `cltrap check`, so code-scanning tools place findings on the kernel
//! source lines. Plain serde structs for the subset of the 2.1.0 schema used (the crates that
//! model the whole schema pull in far more than these few objects need).

use super::finding::{Access, Finding, Kind};
use super::report::source_name;
use super::{CheckReport, LaunchStatus};
use serde::Serialize;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

#[derive(Serialize)]
struct Log {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run>,
}

#[derive(Serialize)]
struct Run {
    tool: Tool,
    invocations: Vec<Invocation>,
    results: Vec<SarifResult>,
}

/// The run of the tool: whether it did all it was asked, and what it could not do — each
/// access not checked and each launch not checked (whole or in part) is a notification, so a
/// clean result that checked little does not read as clean.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Notification {
    level: &'static str,
    message: Message,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<Location>,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: &'static str,
    short_description: Message,
}

#[derive(Serialize)]
struct Message {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: &'static str,
    level: &'static str,
    message: Message,
    locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<Location>,
    occurrence_count: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u32>,
    physical_location: PhysicalLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Message>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: u32,
    start_column: u32,
}

const RULES: [(Kind, &str); 6] = [
    (
        Kind::DataRace,
        "Data race: unsynchronised accesses to one address, one a write",
    ),
    (
        Kind::InvalidRead,
        "Read outside the bounds of a memory object",
    ),
    (
        Kind::InvalidWrite,
        "Write outside the bounds of a memory object",
    ),
    (Kind::Uninitialized, "Use of an uninitialised value"),
    (
        Kind::BarrierDivergence,
        "Barrier not reached by every work-item of a work-group",
    ),
    (
        Kind::ApiMisuse,
        "The launch misuses the OpenCL API (rejected by OpenCL 1.2 or by Oclgrind's API checks)",
    ),
];

fn location(uri: &str, a: &Access, id: Option<u32>, text: Option<String>) -> Location {
    Location {
        id,
        physical_location: PhysicalLocation {
            artifact_location: ArtifactLocation {
                uri: uri.to_string(),
            },
            region: Region {
                start_line: a.line.max(1),
                start_column: a.column.max(1),
            },
        },
        message: text.map(|text| Message { text }),
    }
}

fn result(f: &Finding, sources_uri: &str) -> SarifResult {
    let uri = format!("{sources_uri}/{}", source_name(&f.program));
    let mut text = format!("{} in kernel {} (launch", f.example.message, f.kernel);
    for l in &f.launches {
        text.push_str(&format!(" {l}"));
    }
    text.push(')');
    if let Some(t) = &f.example.target {
        text.push_str(&format!("; {}", t.describe()));
    }
    if let Some(a) = &f.example.first {
        text.push_str(&format!("; {}", a.who()));
    }
    SarifResult {
        rule_id: f.kind.rule_id(),
        level: f.kind.level(),
        message: Message { text },
        locations: f
            .example
            .first
            .iter()
            .map(|a| location(&uri, a, None, None))
            .collect(),
        related_locations: f
            .example
            .second
            .iter()
            .map(|b| {
                location(
                    &uri,
                    b,
                    Some(1),
                    Some(format!("the other access, by {}", b.who())),
                )
            })
            .collect(),
        occurrence_count: f.count,
    }
}

/// What the check could not do, as SARIF notifications.
fn invocation(report: &CheckReport, sources_uri: &str) -> Invocation {
    let mut notes = Vec::new();
    if let Some(line) = super::report::access_summary(report) {
        notes.push(Notification {
            level: "note",
            message: Message { text: line },
            locations: vec![],
        });
    }
    for n in &report.not_checked {
        let uri = format!("{sources_uri}/{}", source_name(&n.program));
        let at = Access {
            line: n.at.line,
            column: n.at.column,
            code: String::new(),
            global: None,
            local: None,
            group: None,
        };
        notes.push(Notification {
            level: "warning",
            message: Message {
                text: format!(
                    "not checked (kernel {}, in {}): {}",
                    n.kernel, n.at.function, n.at.why
                ),
            },
            locations: vec![location(&uri, &at, None, None)],
        });
    }
    for l in &report.launches {
        let why = match &l.status {
            LaunchStatus::Checked { .. } => None,
            LaunchStatus::Skipped { reason } => Some(format!("skipped: {reason}")),
            LaunchStatus::TimedOut { seconds } => {
                Some(format!("not finished within the {seconds} s deadline"))
            }
            LaunchStatus::Failed { reason } => Some(format!("not checked: {reason}")),
            LaunchStatus::EngineLimit { reason } => Some(format!("not checked: {reason}")),
        };
        for text in why.into_iter().chain(l.notes.iter().cloned()) {
            notes.push(Notification {
                level: "warning",
                message: Message {
                    text: format!("launch {} ({}): {text}", l.id, l.kernel),
                },
                locations: vec![],
            });
        }
    }
    Invocation {
        execution_successful: report.exit_code() != 2,
        tool_execution_notifications: notes,
    }
}

/// The SARIF 2.1.0 log as pretty JSON; artifact URIs are `sources_uri/program-<hash>.cl`
/// (relative to the SARIF file, where [`super::sarif_sources_dir`] holds the sources).
pub fn render(report: &CheckReport, sources_uri: &str) -> Result<String, serde_json::Error> {
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: Driver {
                    name: "cltrap check",
                    version: env!("CARGO_PKG_VERSION"),
                    rules: RULES
                        .iter()
                        .map(|(k, d)| Rule {
                            id: k.rule_id(),
                            short_description: Message { text: (*d).into() },
                        })
                        .collect(),
                },
            },
            invocations: vec![invocation(report, sources_uri)],
            results: report
                .findings
                .iter()
                .map(|f| result(f, sources_uri))
                .collect(),
        }],
    };
    serde_json::to_string_pretty(&log)
}
