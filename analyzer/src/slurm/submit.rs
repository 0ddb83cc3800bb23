//! Submitting a Slurm campaign: `sbatch --parsable` for the job array, then for the merge job
//! with `--dependency=afterok:<array job id>`; or, without sbatch, the commands that do it.

use super::script::{quote_path, Plan, MERGE_FILE, TASKS_FILE};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The job ids of a submitted campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The job array (one task per shard).
    pub array: String,
    /// The merge job, which waits for every task of the array to succeed.
    pub merge: String,
}

/// `sbatch` on PATH, if there is one.
pub fn find_sbatch() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("sbatch"))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Submits the array, then the merge job that depends on it.
pub fn submit(sbatch: &Path, plan: &Plan) -> Result<Submitted, String> {
    let tasks = plan.dir.join(TASKS_FILE);
    let merge = plan.dir.join(MERGE_FILE);
    let array = sbatch_parsable(sbatch, &[], &tasks)?;
    let dependency = format!("--dependency=afterok:{array}");
    let merge_id = sbatch_parsable(sbatch, &[&dependency], &merge).map_err(|e| {
        format!(
            "job array {array} is submitted, but the merge job is not ({e}); submit it with `sbatch {dependency} {}`",
            merge.display()
        )
    })?;
    Ok(Submitted {
        array,
        merge: merge_id,
    })
}

/// Runs `sbatch --parsable FLAGS SCRIPT` and returns the job id it prints (`id` or
/// `id;cluster`).
fn sbatch_parsable(sbatch: &Path, flags: &[&str], script: &Path) -> Result<String, String> {
    let out = Command::new(sbatch)
        .arg("--parsable")
        .args(flags)
        .arg(script)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", sbatch.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no message");
        return Err(format!(
            "sbatch refused {} ({}): {why}",
            script.display(),
            out.status
        ));
    }
    parse_job_id(&stdout).ok_or_else(|| {
        format!(
            "sbatch accepted {} but printed no job id (`{}`)",
            script.display(),
            stdout.trim()
        )
    })
}

/// The job id in `sbatch --parsable`'s output: `12345` or `12345;cluster`.
pub fn parse_job_id(stdout: &str) -> Option<String> {
    let line = stdout.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    let id = line.split(';').next()?.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| id.to_string())
}

/// The shell commands that submit the campaign by hand.
pub fn commands(plan: &Plan) -> Result<Vec<String>, String> {
    let tasks = quote_path(&plan.dir.join(TASKS_FILE))?;
    let merge = quote_path(&plan.dir.join(MERGE_FILE))?;
    Ok(vec![
        format!("array=$(sbatch --parsable {tasks})"),
        format!("sbatch --dependency=afterok:\"${{array%%;*}}\" {merge}"),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_of_parsable_output() {
        assert_eq!(parse_job_id("123\n"), Some("123".into()));
        assert_eq!(parse_job_id("123;cluster\n"), Some("123".into()));
        assert_eq!(parse_job_id("warning: x\n77\n"), Some("77".into()));
        assert_eq!(parse_job_id(""), None);
        assert_eq!(parse_job_id("Submitted batch job 5\n"), None);
    }

    #[test]
    fn the_manual_commands_chain_the_dependency() {
        let plan = Plan {
            exe: "/x/cltrap".into(),
            cwd: "/w".into(),
            command: vec!["check".into(), "cap".into()],
            inputs: vec![],
            dir: "/w/my camp".into(),
            tasks: 2,
            gpus_per_task: None,
            partition: None,
            time: None,
            own_devices: false,
        };
        assert_eq!(
            commands(&plan).unwrap(),
            vec![
                "array=$(sbatch --parsable '/w/my camp/tasks.sbatch')".to_string(),
                "sbatch --dependency=afterok:\"${array%%;*}\" '/w/my camp/merge.sbatch'"
                    .to_string(),
            ]
        );
    }
}
