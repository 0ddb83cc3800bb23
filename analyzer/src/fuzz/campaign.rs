//! One fuzzing campaign for one kernel: run the seeds, then mutate one argument (or buffer
//! element) of a kept case at a time and keep the result only when it reaches a branch side or
//! loop-boundary class no earlier case reached; stop at saturation or the budget. Then up to
//! [`OUTPUT_CASES`] more cases are kept for their outputs alone ([`Campaign::diversify`]:
//! boundary values, the input classes, random values), because a suite of one case per branch
//! side lets most value-changing mutants survive. When the checks of kept cases (verify,
//! reproduce, the bounds check) take out the only case of a slot, [`Campaign::resume`]
//! fuzzes again from the cases left.
//!
//! The coverage-instrumented program is compiled once (by the [`Runner`]) and every execution
//! reuses it; the counter buffer is the only extra argument.

use super::error::FuzzError;
use super::mutate::{mutate, mutate_tracked, shapes, Dictionary, Rng, Shape, Touched};
use super::reduce::{Lineage, Residency};
use super::roles::Roles;
use super::runner::{Ran, Runner};
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
    /// Keep mutating until `executions` or `time` runs out, even at full coverage or
    /// saturation (benchmarks: executions per second over a fixed budget).
    pub exhaust: bool,
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
    /// What the progress bar calls it (the kernel name, with its program when the capture
    /// has kernels of that name in several programs).
    pub row_name: String,
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
    /// Reduced executions (a subset of the work-groups, buffers kept in the worker), when
    /// the launch is large enough and the program was built with the subset table.
    pub reduced: Option<Residency>,
    /// Whether the program takes the subset table after the counters (then a run of the
    /// whole launch passes [`cltrap_kernel::permute::full_table`]).
    pub subset_param: bool,
    /// Per kept case (same index), where its contents come from when it was kept by a
    /// reduced execution; `None` for cases run on the whole launch. Emptied by
    /// [`Campaign::confirm`].
    pub lineages: Vec<Option<Lineage>>,
    /// After [`Campaign::confirm`]: cases confirmed on the whole launch, and cases that
    /// failed there (now findings).
    pub confirmed: (usize, usize),
    /// For the user: the reduced executions' geometry, or why a large launch runs whole.
    pub reduced_note: Option<String>,
    /// After [`Campaign::confirm`]: confirmed cases that reached on the subset a slot they do
    /// not reach on the whole launch (0 unless a group's work depends on other groups or on
    /// timing, or a buffer was not restored between reduced runs).
    pub subset_only: usize,
    /// Runs and time of [`Campaign::confirm`] (included in `executions` and `run_time`).
    pub confirm_cost: (u64, Duration),
    /// How many cases, at the start of `cases`, passed the checks of kept cases already
    /// ([`Campaign::verify`], [`Campaign::reproduce`], the bounds check): a later round of
    /// checks ([`Campaign::resume`]) judges only the cases after them.
    pub settled: usize,
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
            row_name: kernel.into(),
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
            reduced: None,
            subset_param: false,
            lineages: Vec::new(),
            confirmed: (0, 0),
            confirm_cost: (0, Duration::ZERO),
            reduced_note: None,
            subset_only: 0,
            settled: 0,
        }
    }

    /// Whether every slot is covered.
    pub fn complete(&self) -> bool {
        self.slots.iter().all(|s| self.covered.contains(&s.index))
    }

    /// Runs `input` (on the whole launch) with fresh counters: the slots it reaches and its
    /// outputs (counters removed), or `None` after recording a finding.
    pub fn execute(
        &mut self,
        runner: &mut dyn Runner,
        input: &LaunchInput,
    ) -> Result<Option<Executed>, FuzzError> {
        let init = self
            .map
            .initial_buffer(&input.global_size, input.local_size.as_deref());
        let mut extras: Vec<InputArg> = vec![word_buffer(&init)];
        if self.subset_param {
            extras.push(word_buffer(&cltrap_kernel::permute::full_table()));
        }
        let start = Instant::now();
        let ran = runner.run(input, &extras)?;
        self.run_time += start.elapsed();
        self.executions += 1;
        let ran = match ran {
            Ran::Done(mut outputs, breaches) => {
                outputs.truncate(input.args.len() + 1);
                Ran::Done(outputs, breaches)
            }
            other => other,
        };
        self.judge(ran, &mut || input.clone(), &input.global_size)
    }

    /// What a run gave: the slots reached and the outputs (counters, the last output,
    /// removed), or `None` after recording a finding for the input `input()` makes.
    fn judge(
        &mut self,
        ran: Ran,
        input: &mut dyn FnMut() -> LaunchInput,
        global: &[u64],
    ) -> Result<Option<Executed>, FuzzError> {
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
                        input: input(),
                    });
                }
                if !breaches.is_empty() {
                    return Ok(None);
                }
                let result = self.map.evaluate(&self.kernel, &words(&counters), global)?;
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
                    input: input(),
                });
                Ok(None)
            }
            Ran::Hung => {
                self.findings.push(Finding {
                    what: "hang: the watchdog stopped the kernel".into(),
                    input: input(),
                });
                Ok(None)
            }
        }
    }

    /// Runs `input`, whose contents `lineage` describes, on the reduced launch: the slots
    /// its work-groups reach, or `None` after recording a finding for `materialise()`.
    fn execute_reduced(
        &mut self,
        runner: &mut dyn Runner,
        input: &LaunchInput,
        lineage: &Lineage,
        materialise: &mut dyn FnMut() -> LaunchInput,
    ) -> Result<Option<BTreeSet<u32>>, FuzzError> {
        let Some(res) = self.reduced.as_mut() else {
            return Err(FuzzError::Worker("no reduced launch".into()));
        };
        // Counters for the slots only: barrier counters would need one word per group of
        // the real launch, and the campaign does not read them (the program flags the
        // overflow and drops the increments).
        let words_len = self.map.static_len() as usize;
        let mut init = vec![0u32; words_len];
        if let Some(w) = init.first_mut() {
            *w = words_len as u32;
        }
        let counters: Vec<u8> = init.iter().flat_map(|w| w.to_le_bytes()).collect();
        let table: Vec<u8> = res
            .reduction
            .table
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let start = Instant::now();
        let generation = runner.generation()?;
        let run = res.run(
            input,
            lineage,
            vec![counters, table],
            words_len * 4,
            generation,
        );
        let ran = runner.run_resident(&res.layout, &run)?;
        if !matches!(ran, Ran::Done(..)) {
            res.forget_worker();
        }
        self.run_time += start.elapsed();
        self.executions += 1;
        let global = res.reduction.real_global.clone();
        Ok(self.judge(ran, materialise, &global)?.map(|(hits, _)| hits))
    }

    /// Whether `input` can run reduced.
    fn reducible(&self, input: &LaunchInput) -> bool {
        self.reduced
            .as_ref()
            .is_some_and(|r| r.reduction.fits(input) && super::reduce::matches(&r.layout, input))
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
        if self.reducible(&input) {
            let lineage = match self.reduced.as_mut() {
                Some(r) => r.root(&input),
                None => Lineage::default(),
            };
            let Some(hits) =
                self.execute_reduced(runner, &input, &lineage, &mut || input.clone())?
            else {
                return Ok(false);
            };
            return Ok(self.keep(input, Vec::new(), hits, origin, force, Some(lineage)));
        }
        let Some((hits, outputs)) = self.execute(runner, &input)? else {
            return Ok(false);
        };
        Ok(self.keep(input, outputs, hits, origin, force, None))
    }

    /// Keeps a case when it reaches something new (or `force`); whether it did.
    fn keep(
        &mut self,
        input: LaunchInput,
        outputs: Vec<Option<Vec<u8>>>,
        hits: BTreeSet<u32>,
        origin: String,
        force: bool,
        lineage: Option<Lineage>,
    ) -> bool {
        let new = hits.iter().any(|h| !self.covered.contains(h));
        if new || force {
            self.covered.extend(hits.iter().copied());
            self.lineages.resize(self.cases.len(), None);
            self.lineages.push(lineage);
            self.cases.push(KeptCase {
                input,
                outputs,
                covers: hits,
                origin,
            });
        }
        new
    }

    /// One mutation of case `parent` run on the reduced launch without copying the case:
    /// the mutation is applied to the case in place, sent as patches, and undone. `None`
    /// when nothing is mutable; otherwise whether it reached something new.
    fn offer_mutation_reduced(
        &mut self,
        runner: &mut dyn Runner,
        parent: usize,
        shapes: &[Shape],
        dict: &Dictionary,
        rng: &mut Rng,
    ) -> Result<Option<bool>, FuzzError> {
        let Some(Some(parent_lineage)) = self.lineages.get(parent).cloned() else {
            return Ok(None);
        };
        let scalars = |i: &LaunchInput| -> Vec<(usize, Vec<u8>)> {
            i.args
                .iter()
                .enumerate()
                .filter_map(|(k, a)| match a {
                    InputArg::Scalar(b) => Some((k, b.clone())),
                    _ => None,
                })
                .collect()
        };
        let saved = scalars(&self.cases[parent].input);
        let Some((how, touched)) = mutate_tracked(&mut self.cases[parent].input, shapes, dict, rng)
        else {
            return Ok(None);
        };
        if let Some(b) = &self.scalar_bounds {
            let i = std::mem::replace(&mut self.cases[parent].input, empty_input());
            self.cases[parent].input = b.narrowed(i);
        }
        let changed = touched.as_ref().map(|t| (t.arg, t.at, t.old.len()));
        let lineage = match self.reduced.as_mut() {
            Some(r) => r.child(&parent_lineage, &self.cases[parent].input, changed),
            None => return Ok(None),
        };
        // The mutated state, to rebuild the input if it is kept or is a finding.
        let after_scalars = scalars(&self.cases[parent].input);
        let after_bytes = touched.as_ref().and_then(|t| {
            buffer_bytes(&self.cases[parent].input, t.arg)
                .and_then(|b| b.get(t.at..t.at + t.old.len()))
                .map(<[u8]>::to_vec)
        });
        let input = std::mem::replace(&mut self.cases[parent].input, empty_input());
        let result = {
            let mut materialise = || input.clone();
            self.execute_reduced(runner, &input, &lineage, &mut materialise)
        };
        self.cases[parent].input = input;
        // Undo: the parent case is as it was.
        undo(&mut self.cases[parent].input, &saved, touched.as_ref());
        let Some(hits) = result? else {
            return Ok(Some(false));
        };
        if !hits.iter().any(|h| !self.covered.contains(h)) {
            return Ok(Some(false));
        }
        let mut input = self.cases[parent].input.clone();
        redo(
            &mut input,
            &after_scalars,
            touched.as_ref(),
            after_bytes.as_deref(),
        );
        let origin = format!("mutation of case {parent}: {how}");
        Ok(Some(self.keep(
            input,
            Vec::new(),
            hits,
            origin,
            false,
            Some(lineage),
        )))
    }

    /// Keeps the cases `judge` finds nothing wrong with (cases already [`Campaign::settled`]
    /// are not judged again); each other one leaves the suite as a finding with the judge's
    /// reason. Covered slots are recounted from the cases kept.
    /// Returns how many left.
    fn keep_judged(
        &mut self,
        mut judge: impl FnMut(&mut Self, &KeptCase) -> Result<Option<String>, FuzzError>,
    ) -> Result<usize, FuzzError> {
        let cases = std::mem::take(&mut self.cases);
        let mut kept = Vec::with_capacity(cases.len());
        let mut dropped = 0;
        for (k, case) in cases.into_iter().enumerate() {
            if k < self.settled {
                kept.push(case);
                continue;
            }
            match judge(self, &case)? {
                None => kept.push(case),
                Some(what) => {
                    dropped += 1;
                    self.findings.push(Finding {
                        what,
                        input: case.input,
                    });
                }
            }
        }
        self.covered = kept.iter().flat_map(|k| k.covers.iter().copied()).collect();
        self.cases = kept;
        Ok(dropped)
    }

    /// Runs every kept case again, independently, through `original` (the user's program,
    /// not instrumented, on the executor replay, cover and mutate use): a case is kept only
    /// when that run gives the outputs it records. One that crashes, hangs, writes out of
    /// bounds or gives other outputs (its kernel reads memory it never set, or the suite
    /// could not express how it ran) becomes a finding; a suite must replay as recorded.
    /// `covered` is recomputed from the cases kept. Returns the cases dropped.
    pub fn verify(&mut self, original: &mut dyn Runner) -> Result<usize, FuzzError> {
        self.keep_judged(|this, case| {
            let ran = original.run(&case.input, &[])?;
            Ok(match ran {
                Ran::Done(mut outputs, breaches) => {
                    outputs.truncate(case.input.args.len());
                    if let Some(b) = breaches.first() {
                        let name = this
                            .iface
                            .args
                            .get(b.arg_index)
                            .map_or("", |a| a.name.as_str());
                        Some(b.summary(name))
                    } else {
                        outputs
                            .iter()
                            .zip(&case.outputs)
                            .position(|(a, b)| a != b)
                            .map(|i| {
                                let name = this.iface.args.get(i).map_or("", |a| a.name.as_str());
                                format!(
                                    "not reproducible: an independent run of the original gave other contents of argument {i} {name}"
                                )
                            })
                    }
                }
                Ran::Crashed(why) => Some(format!("crash: {why}")),
                Ran::Hung => Some("hang: the watchdog stopped the kernel".into()),
            })
        })
    }

    /// Moves the cases named in `why` (case index → what is wrong) to the findings and
    /// recounts the covered slots from the cases left.
    pub fn drop_cases(&mut self, why: &std::collections::BTreeMap<usize, String>) {
        if why.is_empty() {
            return;
        }
        let cases = std::mem::take(&mut self.cases);
        for (k, case) in cases.into_iter().enumerate() {
            match why.get(&k) {
                Some(what) => self.findings.push(Finding {
                    what: what.clone(),
                    input: case.input,
                }),
                None => self.cases.push(case),
            }
        }
        self.covered = self
            .cases
            .iter()
            .flat_map(|k| k.covers.iter().copied())
            .collect();
    }

    /// Runs every kept case once more the way `cltrap cover` runs a suite's launch: the
    /// coverage-instrumented program `cover` (built as `cover` builds it, without the subset
    /// table), without guard zones, in a runner of its own. A case stays only when that run
    /// finishes, reaches exactly the slots the case claims and leaves exactly the case's
    /// outputs; any other case (undefined behaviour such as a division by zero or a read out of
    /// bounds gives another result there) becomes a finding saying why, so that what `fuzz`
    /// reports covered is what `cover` measures on the suite and every case is a test case
    /// for `mutate`. Covered slots are recounted from the cases left. Returns how many left.
    pub fn reproduce(&mut self, cover: &mut dyn Runner) -> Result<usize, FuzzError> {
        self.keep_judged(|this, case| {
            let input = &case.input;
            let init = this
                .map
                .initial_buffer(&input.global_size, input.local_size.as_deref());
            let ran = cover.run_plain(input, &[word_buffer(&init)])?;
            this.executions += 1;
            Ok(match ran {
                Ran::Done(mut outputs, _) => {
                    let counters = outputs
                        .get_mut(input.args.len())
                        .and_then(Option::take)
                        .unwrap_or_default();
                    outputs.truncate(input.args.len());
                    let hits: BTreeSet<u32> = this
                        .map
                        .evaluate(&this.kernel, &words(&counters), &input.global_size)?
                        .slots
                        .iter()
                        .filter(|s| s.hit)
                        .map(|s| s.index)
                        .collect();
                    if let Some(i) = outputs.iter().zip(&case.outputs).position(|(a, b)| a != b) {
                        let name = this.iface.args.get(i).map_or("", |a| a.name.as_str());
                        Some(format!(
                            "not reproducible where the suite is used: a run as `cltrap cover` runs it gave other contents of argument {i} {name}"
                        ))
                    } else if hits != case.covers {
                        Some(
                            "not reproducible where the suite is used: a run as `cltrap cover` runs it reached other branches"
                                .to_string(),
                        )
                    } else {
                        None
                    }
                }
                Ran::Crashed(why) => Some(format!(
                    "crash where the suite is used (a run as `cltrap cover` runs it): {why}"
                )),
                Ran::Hung => Some(
                    "hang where the suite is used: the watchdog stopped a run as `cltrap cover` runs it"
                        .into(),
                ),
            })
        })
    }

    /// Runs every case kept by a reduced execution on the whole launch: its coverage and
    /// outputs there become the case's; a case that crashes, hangs or writes out of bounds
    /// there is a finding and leaves the suite, and one that reaches nothing the cases before
    /// it do not reach there leaves it too. Covered slots are recounted from the cases.
    pub fn confirm(&mut self, runner: &mut dyn Runner) -> Result<(), FuzzError> {
        let lineages = std::mem::take(&mut self.lineages);
        if lineages.iter().all(Option::is_none) {
            return Ok(());
        }
        let (runs0, time0) = (self.executions, self.run_time);
        let cases = std::mem::take(&mut self.cases);
        let mut kept = Vec::with_capacity(cases.len());
        let (mut confirmed, mut failed) = (0, 0);
        for (i, mut case) in cases.into_iter().enumerate() {
            if !matches!(lineages.get(i), Some(Some(_))) {
                kept.push(case);
                continue;
            }
            let before = self.findings.len();
            match self.execute(runner, &case.input)? {
                Some((hits, outputs)) => {
                    // On the whole launch an earlier case may already reach all of it (the
                    // seed's other groups): then it adds nothing to the suite.
                    let adds = hits
                        .iter()
                        .any(|h| !kept.iter().any(|k: &KeptCase| k.covers.contains(h)));
                    if !case.covers.is_subset(&hits) {
                        self.subset_only += 1;
                    }
                    case.covers = hits;
                    case.outputs = outputs;
                    confirmed += 1;
                    if adds || kept.is_empty() {
                        kept.push(case);
                    }
                }
                None => {
                    for f in &mut self.findings[before..] {
                        f.what = format!("{} (on the whole launch only)", f.what);
                    }
                    failed += 1;
                }
            }
        }
        self.cases = kept;
        self.covered = self
            .cases
            .iter()
            .flat_map(|c| c.covers.iter().copied())
            .collect();
        self.confirmed = (confirmed, failed);
        self.confirm_cost = (self.executions - runs0, self.run_time - time0);
        if self.cases.is_empty() && failed > 0 {
            self.no_case = Some(format!(
                "every case kept on the reduced launch ({failed}) crashed, hung or wrote out of \
                 bounds on the whole launch"
            ));
        }
        Ok(())
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
        let spent = |c: &Campaign| {
            budget.executions.is_some_and(|n| c.executions >= n)
                || budget.time.is_some_and(|t| start.elapsed() >= t)
        };
        for (i, s) in seeds.into_iter().enumerate() {
            // Past the budget, only until some seed gave a case.
            if !self.cases.is_empty() && spent(self) {
                break;
            }
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
                if self.complete() || (!self.cases.is_empty() && spent(self)) {
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
        if mutable > 0 && k > 0 && !self.complete() && !spent(self) {
            let random = super::mutate::randomize(&first.input, &shapes, &dict, &mut rng);
            if self.offer(runner, random, "random seed".into(), false)? {
                self.saturation_time = start.elapsed();
            }
        }
        self.mutation_loop(
            runner,
            &shapes,
            &dict,
            &mut rng,
            budget,
            start,
            Some(start),
            progress,
        )?;
        let mut candidates = Vec::new();
        for k in [0, self.cases.len().saturating_sub(1), 0] {
            if let Some(b) = self
                .cases
                .get(k)
                .and_then(|c| super::classes::boundary(&self.iface, &c.input, &shapes, &mut rng))
            {
                candidates.push((format!("boundary values of case {k}"), b));
            }
        }
        if let Some(template) = &template {
            let mut crng = Rng::new(seed ^ 0xB0DA_12E5_B0DA_12E5);
            let mut classes =
                super::classes::inputs(&self.iface, &self.roles, template, &shapes, &mut crng);
            // The all-zero input last: its outputs are the least telling.
            classes.rotate_left(1);
            candidates.extend(classes);
            if mutable > 0 {
                candidates.push((
                    "random values".into(),
                    super::mutate::randomize(template, &shapes, &dict, &mut crng),
                ));
            }
        }
        self.diversify(runner, candidates, budget, start)?;
        self.confirm(runner)
    }

    /// Mutates kept cases one argument or element at a time, keeping each result that
    /// reaches something new, until `budget` (counted from `start`) runs out, every slot is
    /// covered, or saturation; `saturation_from`: the time new coverage is measured from.
    #[allow(clippy::too_many_arguments)]
    fn mutation_loop(
        &mut self,
        runner: &mut dyn Runner,
        shapes: &[Shape],
        dict: &Dictionary,
        rng: &mut Rng,
        budget: &Budget,
        start: Instant,
        saturation_from: Option<Instant>,
        progress: bool,
    ) -> Result<(), FuzzError> {
        let bar = if progress {
            let b = ProgressBar::new(self.slots.len() as u64);
            b.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} slots, {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.set_prefix(match &self.reduced {
                Some(r) => format!(
                    "{} (on {} of {} work-groups)",
                    self.row_name,
                    r.reduction.groups.len(),
                    r.reduction.real_groups.iter().product::<u64>()
                ),
                None => self.row_name.clone(),
            });
            b
        } else {
            ProgressBar::hidden()
        };
        let mut fruitless = 0u64;
        let mutable = shapes
            .iter()
            .filter(|s| !matches!(s, super::mutate::Shape::Fixed))
            .count() as u64;
        let k = budget.fruitless.unwrap_or(50 * mutable.max(1));
        let out_of_budget = |c: &Campaign| {
            budget.executions.is_some_and(|n| c.executions >= n)
                || budget.time.is_some_and(|t| start.elapsed() >= t)
        };
        while mutable > 0 && (budget.exhaust || (fruitless < k && !self.complete())) {
            if out_of_budget(self) {
                break;
            }
            let parent = rng.below(self.cases.len() as u64) as usize;
            let reduced = if matches!(self.lineages.get(parent), Some(Some(_))) {
                self.offer_mutation_reduced(runner, parent, shapes, dict, rng)?
            } else {
                None
            };
            let new = match reduced {
                Some(new) => new,
                None => {
                    let mut input = self.cases[parent].input.clone();
                    let Some(how) = mutate(&mut input, shapes, dict, rng) else {
                        break;
                    };
                    self.offer(
                        runner,
                        input,
                        format!("mutation of case {parent}: {how}"),
                        false,
                    )?
                }
            };
            if new {
                fruitless = 0;
                if let Some(t) = saturation_from {
                    self.saturation_time = t.elapsed();
                }
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

    /// Fuzzes again from the cases left, for at most `budget`: after the checks of the kept
    /// cases (verify, reproduce, the bounds check) took cases out of the suite, the slots only
    /// they reached are open again and the campaign looks for cases that reach them and pass.
    pub fn resume(
        &mut self,
        runner: &mut dyn Runner,
        budget: &Budget,
        seed: u64,
        progress: bool,
    ) -> Result<(), FuzzError> {
        let Some(first) = self.cases.first() else {
            return Ok(());
        };
        if self.complete() {
            return Ok(());
        }
        let shapes = shapes(&self.iface, &first.input);
        let dict = Dictionary::new(&self.iface, &first.input);
        let mut rng = Rng::new(seed);
        self.mutation_loop(
            runner,
            &shapes,
            &dict,
            &mut rng,
            budget,
            Instant::now(),
            None,
            progress,
        )?;
        self.confirm(runner)
    }

    /// Keeps up to [`OUTPUT_CASES`] of `candidates` (in order) that reach no new slot but
    /// leave outputs no kept case leaves: coverage alone keeps one case per branch side, and
    /// a mutant that changes a value without changing a branch (`<` for `<=` on a boundary
    /// value, `-` for `+` under a clamp) is only seen by a case whose values expose it. A
    /// candidate that crashes is a finding like any other input. Only for campaigns run on
    /// whole launches (a reduced run leaves no outputs to compare).
    fn diversify(
        &mut self,
        runner: &mut dyn Runner,
        candidates: Vec<(String, LaunchInput)>,
        budget: &Budget,
        start: Instant,
    ) -> Result<(), FuzzError> {
        if self.reduced.is_some() || self.cases.is_empty() {
            return Ok(());
        }
        let mut seen: Vec<Vec<Option<Vec<u8>>>> = self
            .cases
            .iter()
            .map(|c| written(&c.input, &c.outputs))
            .collect();
        let mut added = 0;
        for (name, input) in candidates {
            if added >= OUTPUT_CASES
                || budget.executions.is_some_and(|n| self.executions >= n)
                || budget.time.is_some_and(|t| start.elapsed() >= t)
            {
                break;
            }
            let input = match &self.scalar_bounds {
                Some(b) => b.narrowed(input),
                None => input,
            };
            if self.cases.iter().any(|c| c.input == input) {
                continue;
            }
            let Some((hits, outputs)) = self.execute(runner, &input)? else {
                continue;
            };
            let w = written(&input, &outputs);
            if w.iter().all(Option::is_none) || seen.contains(&w) {
                continue;
            }
            seen.push(w);
            self.keep(
                input,
                outputs,
                hits,
                format!("{name} (other outputs)"),
                true,
                None,
            );
            added += 1;
        }
        Ok(())
    }
}

/// At most this many cases a campaign keeps for their outputs alone
/// ([`Campaign::diversify`]): each one costs every surviving mutant a run in `cltrap mutate`.
pub const OUTPUT_CASES: usize = 4;

/// Per argument, its contents after a run where the kernel changed them (`None` where the
/// contents are the input's): what a mutant can change.
fn written(input: &LaunchInput, outputs: &[Option<Vec<u8>>]) -> Vec<Option<Vec<u8>>> {
    outputs
        .iter()
        .enumerate()
        .map(|(i, out)| match (input.args.get(i), out) {
            (Some(InputArg::Buffer { bytes, .. }), Some(o)) if bytes == o => None,
            (_, o) => o.clone(),
        })
        .collect()
}

fn empty_input() -> LaunchInput {
    LaunchInput {
        kernel: String::new(),
        work_dim: 0,
        global_offset: None,
        global_size: Vec::new(),
        local_size: None,
        args: Vec::new(),
        stand_ins: Vec::new(),
    }
}

fn buffer_bytes(input: &LaunchInput, arg: usize) -> Option<&[u8]> {
    match input.args.get(arg) {
        Some(InputArg::Buffer { bytes, .. }) => Some(bytes),
        _ => None,
    }
}

fn buffer_bytes_mut(input: &mut LaunchInput, arg: usize) -> Option<&mut Vec<u8>> {
    match input.args.get_mut(arg) {
        Some(InputArg::Buffer { bytes, .. }) => Some(bytes),
        _ => None,
    }
}

fn set_scalars(input: &mut LaunchInput, scalars: &[(usize, Vec<u8>)]) {
    for (k, b) in scalars {
        if let Some(InputArg::Scalar(s)) = input.args.get_mut(*k) {
            s.clone_from(b);
        }
    }
}

/// Puts back the scalars and the buffer bytes a mutation changed.
fn undo(input: &mut LaunchInput, scalars: &[(usize, Vec<u8>)], touched: Option<&Touched>) {
    set_scalars(input, scalars);
    if let Some(t) = touched {
        if let Some(dst) =
            buffer_bytes_mut(input, t.arg).and_then(|b| b.get_mut(t.at..t.at + t.old.len()))
        {
            dst.copy_from_slice(&t.old);
        }
    }
}

/// Applies a mutation again: its scalars and the new bytes of its buffer range.
fn redo(
    input: &mut LaunchInput,
    scalars: &[(usize, Vec<u8>)],
    touched: Option<&Touched>,
    bytes: Option<&[u8]>,
) {
    set_scalars(input, scalars);
    if let (Some(t), Some(new)) = (touched, bytes) {
        if let Some(dst) =
            buffer_bytes_mut(input, t.arg).and_then(|b| b.get_mut(t.at..t.at + new.len()))
        {
            dst.copy_from_slice(new);
        }
    }
}
