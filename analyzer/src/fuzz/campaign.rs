//! One fuzzing campaign for one kernel: run the seeds, then mutate one argument (or buffer
//! element) of a kept case at a time and keep the result only when it reaches a branch side or
//! loop-boundary class no earlier case reached; stop at saturation or the budget.
//!
//! The coverage-instrumented program is compiled once (by the [`Runner`]) and every execution
//! reuses it; the counter buffer is the only extra argument.

use super::mutate::{mutate, shapes, Dictionary, Rng};
use super::roles::Roles;
use super::runner::{Ran, Runner};
use super::FuzzError;
use crate::executor::{InputArg, LaunchInput};
use crate::variant::{word_buffer, words};
use cltrap_kernel::coverage::{CoverageMap, Slot};
use cltrap_kernel::interface::KernelInterface;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// When to stop.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Stop after this many executions.
    pub executions: Option<u64>,
    /// Stop after this long.
    pub time: Option<Duration>,
    /// Stop after this many mutations without new coverage (`None` = 50 per mutable argument).
    pub fruitless: Option<u64>,
}

/// What one execution reached (counter slots) and left in memory (per argument).
pub type Executed = (BTreeSet<u32>, Vec<Option<Vec<u8>>>);

/// A kept test case.
#[derive(Debug, Clone)]
pub struct KeptCase {
    /// The launch.
    pub input: LaunchInput,
    /// Contents of every memory argument after the run (the expected outputs).
    pub outputs: Vec<Option<Vec<u8>>>,
    /// Counter slots this case reaches.
    pub covers: BTreeSet<u32>,
    /// How it was made (`seed`, `mutation: ...`, `solved`).
    pub origin: String,
}

/// A crash, fault or hang, with the input that caused it.
#[derive(Debug, Clone)]
pub struct Finding {
    /// What happened.
    pub what: String,
    /// The input.
    pub input: LaunchInput,
}

/// The state and result of one kernel's campaign.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// Kernel name.
    pub kernel: String,
    /// The interface derived from the model.
    pub iface: KernelInterface,
    /// The coverage map of the instrumented program.
    pub map: CoverageMap,
    /// Slots (branch sides and loop-boundary classes) of this kernel.
    pub slots: Vec<Slot>,
    /// Slots reached by some kept case.
    pub covered: BTreeSet<u32>,
    /// Kept cases.
    pub cases: Vec<KeptCase>,
    /// Crashes and hangs.
    pub findings: Vec<Finding>,
    /// Executions run.
    pub executions: u64,
    /// Time spent executing (compile excluded).
    pub run_time: Duration,
    /// Time to build the instrumented program.
    pub compile_time: Duration,
    /// Time from the first execution to the last new coverage by fuzzing.
    pub saturation_time: Duration,
    /// When set, every input offered is first narrowed to these scalar ranges
    /// (`cltrap fuzz --captured-ranges`).
    pub scalar_bounds: Option<crate::generalise::ScalarBounds>,
    /// What the kernel does with its arguments' values (for the role-aware input class).
    pub roles: Roles,
    /// Why the campaign kept no case at all (every input class crashed or hung).
    pub no_case: Option<String>,
}

impl Campaign {
    /// A campaign with nothing run yet.
    pub fn new(kernel: &str, iface: KernelInterface, map: CoverageMap) -> Campaign {
        let functions: Vec<String> = map
            .kernels
            .iter()
            .find(|k| k.name == kernel)
            .map(|k| k.functions.clone())
            .unwrap_or_default();
        let slots = map
            .slots
            .iter()
            .filter(|s| functions.contains(&s.function))
            .cloned()
            .collect();
        Campaign {
            kernel: kernel.into(),
            iface,
            map,
            slots,
            covered: BTreeSet::new(),
            cases: Vec::new(),
            findings: Vec::new(),
            executions: 0,
            run_time: Duration::ZERO,
            compile_time: Duration::ZERO,
            saturation_time: Duration::ZERO,
            scalar_bounds: None,
            roles: Roles::default(),
            no_case: None,
        }
    }

    /// Whether every slot is covered.
    pub fn complete(&self) -> bool {
        self.slots.iter().all(|s| self.covered.contains(&s.index))
    }

    /// Runs `input` with fresh counters: the slots it reaches and its outputs (counters
    /// removed), or `None` after recording a finding.
    pub fn execute(
        &mut self,
        runner: &mut dyn Runner,
        input: &LaunchInput,
    ) -> Result<Option<Executed>, FuzzError> {
        let init = self
            .map
            .initial_buffer(&input.global_size, input.local_size.as_deref());
        let extras: [InputArg; 1] = [word_buffer(&init)];
        let start = Instant::now();
        let ran = runner.run(input, &extras)?;
        self.run_time += start.elapsed();
        self.executions += 1;
        match ran {
            Ran::Done(mut outputs, breaches) => {
                let counters = outputs.pop().flatten().unwrap_or_default();
                // Every buffer ran between guard zones (see `executor::guard`): a write into
                // one is a finding (PoCL itself does not fault on small overruns).
                // Findings group by their text, so it names the argument and side only.
                // The input is a finding, never a case: a suite must not carry it.
                for b in &breaches {
                    let name = self
                        .iface
                        .args
                        .get(b.arg_index)
                        .map_or("", |a| a.name.as_str());
                    self.findings.push(Finding {
                        what: b.summary(name),
                        input: input.clone(),
                    });
                }
                if !breaches.is_empty() {
                    return Ok(None);
                }
                let result =
                    self.map
                        .evaluate(&self.kernel, &words(&counters), &input.global_size)?;
                let hits = result
                    .slots
                    .iter()
                    .filter(|s| s.hit)
                    .map(|s| s.index)
                    .collect();
                Ok(Some((hits, outputs)))
            }
            Ran::Crashed(why) => {
                self.findings.push(Finding {
                    what: format!("crash: {why}"),
                    input: input.clone(),
                });
                Ok(None)
            }
            Ran::Hung => {
                self.findings.push(Finding {
                    what: "hang: the watchdog stopped the kernel".into(),
                    input: input.clone(),
                });
                Ok(None)
            }
        }
    }

    /// Runs `input` and keeps it when it reaches something new (`force`: keep anyway).
    pub fn offer(
        &mut self,
        runner: &mut dyn Runner,
        input: LaunchInput,
        origin: String,
        force: bool,
    ) -> Result<bool, FuzzError> {
        let input = match &self.scalar_bounds {
            Some(b) => b.narrowed(input),
            None => input,
        };
        let Some((hits, outputs)) = self.execute(runner, &input)? else {
            return Ok(false);
        };
        let new = hits.iter().any(|h| !self.covered.contains(h));
        if new || force {
            self.covered.extend(hits.iter().copied());
            self.cases.push(KeptCase {
                input,
                outputs,
                covers: hits,
                origin,
            });
        }
        Ok(new)
    }

    /// The fuzzing loop over `seeds` (at least one).
    pub fn fuzz(
        &mut self,
        runner: &mut dyn Runner,
        seeds: Vec<LaunchInput>,
        budget: &Budget,
        seed: u64,
        progress: bool,
    ) -> Result<(), FuzzError> {
        let start = Instant::now();
        let template = seeds.first().cloned();
        let n_seeds = seeds.len();
        for (i, s) in seeds.into_iter().enumerate() {
            let force = self.cases.is_empty();
            if self.offer(runner, s, format!("seed {i}"), force)? {
                self.saturation_time = start.elapsed();
            }
        }
        // Other input classes: kept when they reach something new, or when no seed ran.
        if let Some(template) = &template {
            let shapes = shapes(&self.iface, template);
            let mut rng = Rng::new(seed ^ 0xC1A5_5E5C_1A55_E5C1);
            let classes =
                super::classes::inputs(&self.iface, &self.roles, template, &shapes, &mut rng);
            let names: Vec<String> = classes.iter().map(|c| c.0.clone()).collect();
            for (name, input) in classes {
                if self.complete() {
                    break;
                }
                let force = self.cases.is_empty();
                if self.offer(runner, input, name, force)? {
                    self.saturation_time = start.elapsed();
                }
            }
            if self.cases.is_empty() {
                self.no_case = Some(format!(
                    "every input class crashed, hung or wrote out of bounds: {n_seeds} seed(s), {}",
                    names.join(", ")
                ));
            }
        }
        let Some(first) = self.cases.first() else {
            return Ok(());
        };
        let shapes = shapes(&self.iface, &first.input);
        let mutable = shapes
            .iter()
            .filter(|s| !matches!(s, super::mutate::Shape::Fixed))
            .count() as u64;
        let dict = Dictionary::new(&self.iface, &first.input);
        let k = budget.fruitless.unwrap_or(50 * mutable.max(1));
        let mut rng = Rng::new(seed);
        // One random seed shaped like the first one (captured values are often too tame).
        if mutable > 0 && k > 0 && !self.complete() {
            let random = super::mutate::randomize(&first.input, &shapes, &dict, &mut rng);
            if self.offer(runner, random, "random seed".into(), false)? {
                self.saturation_time = start.elapsed();
            }
        }
        let bar = if progress {
            let b = ProgressBar::new(self.slots.len() as u64);
            b.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} slots, {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.set_prefix(self.kernel.clone());
            b
        } else {
            ProgressBar::hidden()
        };
        let mut fruitless = 0u64;
        while mutable > 0 && fruitless < k && !self.complete() {
            if budget.executions.is_some_and(|n| self.executions >= n)
                || budget.time.is_some_and(|t| start.elapsed() >= t)
            {
                break;
            }
            let parent = rng.below(self.cases.len() as u64) as usize;
            let mut input = self.cases[parent].input.clone();
            let Some(how) = mutate(&mut input, &shapes, &dict, &mut rng) else {
                break;
            };
            if self.offer(
                runner,
                input,
                format!("mutation of case {parent}: {how}"),
                false,
            )? {
                fruitless = 0;
                self.saturation_time = start.elapsed();
            } else {
                fruitless += 1;
            }
            bar.set_position(self.covered.len() as u64);
            bar.set_message(format!(
                "{} executions, {} cases, {} findings",
                self.executions,
                self.cases.len(),
                self.findings.len()
            ));
        }
        bar.finish_and_clear();
        Ok(())
    }
}
