//! Runs a study's plan: every run trained (resuming what an interrupted start left),
//! every evaluation drawn, independent runs side by side on the cores, or every rank on
//! each run in turn under MPI. What a [`Lab`] does for one run is its own: train a recipe
//! (`trlvr study`), or the demo's tiny models.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use trlvr::study::{AnalysisConfig, ArmResults, Claim, Cost, Evaluated, Plan, PlannedRun, RunKey, State};

use crate::ranks::Ranks;

/// How a study trains and evaluates one run.
pub trait Lab: Sync {
    /// A hash of everything `run`'s training depends on (settings, inputs, seed).
    ///
    /// # Errors
    /// An input that cannot be read.
    fn fingerprint(&self, run: &RunKey) -> Result<String>;

    /// A hash of everything `run`'s evaluation `evaluation` depends on besides the run.
    ///
    /// # Errors
    /// An input that cannot be read.
    fn eval_fingerprint(&self, run: &RunKey, evaluation: &str) -> Result<String>;

    /// Trains `run` into `dir`, resuming what an interrupted start left there; its cost.
    ///
    /// # Errors
    /// Training errors, naming the run.
    fn train(&self, run: &RunKey, dir: &Path, ranks: &Ranks) -> Result<Cost>;

    /// Evaluates `run` (trained into `run_dir`; as it is, for an arm not trained) in
    /// `evaluation`, into `dir` (resuming what an interrupted start left there).
    /// `earlier` names the run's evaluations drawn before this one, with their folders:
    /// what they drew that this one would draw alike may be taken from them.
    ///
    /// # Errors
    /// Evaluation errors.
    fn evaluate(
        &self,
        run: &RunKey,
        run_dir: &Path,
        evaluation: &str,
        dir: &Path,
        earlier: &[(String, PathBuf)],
        ranks: &Ranks,
    ) -> Result<Evaluated>;
}

/// The shape of a study: arms, seeds, evaluations, claims.
#[derive(Debug, Clone)]
pub struct Design {
    /// A name for the report.
    pub name: String,
    /// The arms, in table order.
    pub arms: Vec<DesignArm>,
    /// Every evaluation, the default first.
    pub evaluations: Vec<String>,
    /// The claims, declared before the run.
    pub claims: Vec<Claim>,
    /// How results are read.
    pub analysis: AnalysisConfig,
}

/// One arm of a design.
#[derive(Debug, Clone)]
pub struct DesignArm {
    /// Name.
    pub name: String,
    /// Trained (one run per seed), or evaluated as it is (one run).
    pub trained: bool,
    /// Its seeds.
    pub seeds: Vec<u64>,
    /// Its evaluations.
    pub evaluations: Vec<String>,
}

impl DesignArm {
    /// Its runs.
    pub fn runs(&self) -> Vec<RunKey> {
        if self.trained {
            self.seeds.iter().map(|&s| RunKey { arm: self.name.clone(), seed: Some(s) }).collect()
        } else {
            vec![RunKey { arm: self.name.clone(), seed: None }]
        }
    }
}

impl Design {
    /// The plan: every run with its fingerprints, under `out`.
    ///
    /// # Errors
    /// A fingerprint that cannot be computed.
    pub fn plan(&self, out: &Path, lab: &dyn Lab) -> Result<Plan> {
        let mut runs = Vec::new();
        for arm in &self.arms {
            for key in arm.runs() {
                let evaluations = arm
                    .evaluations
                    .iter()
                    .map(|e| Ok((e.clone(), lab.eval_fingerprint(&key, e)?)))
                    .collect::<Result<_>>()?;
                runs.push(PlannedRun { fingerprint: lab.fingerprint(&key)?, key, evaluations });
            }
        }
        Ok(Plan { out: out.to_path_buf(), runs })
    }
}

/// Each run's training cost and evaluation seconds.
pub type Costs = BTreeMap<RunKey, (Cost, f64)>;

/// What running the plan gave.
#[derive(Debug)]
pub struct Outcome {
    /// Each arm's results per evaluation, in seed order.
    pub results: Vec<ArmResults>,
    /// Each run's training cost and evaluation seconds.
    pub costs: Costs,
    /// Runs trained and evaluations drawn by this start (the rest were kept).
    pub trained_now: usize,
    /// Evaluations drawn by this start.
    pub evaluated_now: usize,
}

/// Prints `[  12s] line` on standard error.
#[derive(Debug)]
pub struct Log {
    started: Instant,
}

impl Log {
    /// From now.
    pub fn new() -> Self {
        Self { started: Instant::now() }
    }

    /// Seconds since the start.
    pub fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// One line.
    pub fn say(&self, line: &str) {
        eprintln!("[{:>6.0}s] {line}", self.seconds());
    }
}

/// What one run of the plan has left to do.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Todo {
    run: usize,
    train: bool,
    evaluations: Vec<usize>,
}

/// Runs `plan` with `lab`: what is not done, `jobs` runs at a time (0: one per core; 1
/// under MPI, where every rank works on each run in turn); then every result.
///
/// # Errors
/// A changed study with [`OnChange::Refuse`] (what changed is named), or the first run
/// that fails.
pub fn run(
    design: &Design,
    plan: &Plan,
    lab: &dyn Lab,
    jobs: usize,
    on_change: OnChange,
    ranks: &Ranks,
    log: &Log,
) -> Result<Outcome> {
    let todo = if ranks.leads() { todo(plan, on_change, log)? } else { Vec::new() };
    // Rank 0 reads the folder; the others follow its list.
    let mut bytes = serde_json::to_vec(&todo)?;
    ranks.collective().broadcast(&mut bytes, 0)?;
    let todo: Vec<Todo> = serde_json::from_slice(&bytes)?;
    let total = plan.runs.len();
    let (trained_now, evaluated_now) =
        (todo.iter().filter(|t| t.train).count(), todo.iter().map(|t| t.evaluations.len()).sum());
    if ranks.leads() {
        log.say(&format!(
            "{}: {total} runs, {} to train and {evaluated_now} evaluations to draw ({} runs kept from an earlier \
             start)",
            design.name,
            trained_now,
            total - todo.len()
        ));
    }
    let done = Mutex::new(total - todo.len());
    let ctx = Work { plan, lab, log };
    let work = |t: &Todo, ranks: &Ranks| -> Result<()> {
        ctx.train(t, ranks)?;
        ctx.evaluate(t, ranks)?;
        let mut done = done.lock().expect("not poisoned");
        *done += 1;
        ctx.say(ranks, &format!("{}: done ({} of {total} runs)", plan.runs[t.run].key, *done));
        Ok(())
    };
    if ranks.size() > 1 || jobs == 1 {
        // Every rank works on each run in turn.
        todo.iter().try_for_each(|t| work(t, ranks))?;
    } else {
        // One process: runs side by side, each with the one-process ranks of its own (an
        // MPI communicator cannot be shared between threads). Runs that train go first, so
        // the short evaluation-only runs fill the end, when fewer runs than jobs are left.
        let mut todo: Vec<&Todo> = todo.iter().collect();
        todo.sort_by_key(|t| !(t.train && plan.runs[t.run].key.seed.is_some()));
        in_parallel(&todo, jobs, &|t| work(t, &Ranks::connect()?))?;
    }
    // Every rank has every result (the records), read by rank 0 only.
    if !ranks.leads() {
        return Ok(Outcome { results: Vec::new(), costs: BTreeMap::new(), trained_now, evaluated_now });
    }
    let (results, costs) = collect(design, plan)?;
    Ok(Outcome { results, costs, trained_now, evaluated_now })
}

/// What each item of the plan's work needs.
struct Work<'a> {
    plan: &'a Plan,
    lab: &'a dyn Lab,
    log: &'a Log,
}

impl Work<'_> {
    /// A line from rank 0.
    fn say(&self, ranks: &Ranks, line: &str) {
        if ranks.leads() {
            self.log.say(line);
        }
    }

    /// Trains `t`'s run if it is to be (an arm not trained is recorded at no cost).
    fn train(&self, t: &Todo, ranks: &Ranks) -> Result<()> {
        if !t.train {
            return Ok(());
        }
        let run = &self.plan.runs[t.run];
        let key = &run.key;
        let dir = self.plan.run_dir(key);
        let leads = ranks.leads();
        if leads {
            self.plan.start_run(run)?;
        }
        let started = Instant::now();
        let cost = if key.seed.is_some() {
            self.say(ranks, &format!("{key}: training"));
            let cost = self
                .lab
                .train(key, &dir, ranks)
                .with_context(|| format!("training run {key} (in {})", dir.display()))?;
            let seconds = started.elapsed().as_secs_f64();
            self.say(ranks, &format!("{key}: trained in {seconds:.0} s ({} steps)", cost.steps));
            cost
        } else {
            Cost::default()
        };
        if leads {
            self.plan.finish_run(run, cost)?;
        }
        // Rank 0 wrote the checkpoint every rank's evaluation reads.
        ranks.collective().barrier()?;
        Ok(())
    }

    /// Draws `t`'s evaluations, each recorded as it finishes.
    fn evaluate(&self, t: &Todo, ranks: &Ranks) -> Result<()> {
        let run = &self.plan.runs[t.run];
        let key = &run.key;
        let dir = self.plan.run_dir(key);
        for &e in &t.evaluations {
            let (name, fingerprint) = &run.evaluations[e];
            let earlier: Vec<(String, PathBuf)> =
                run.evaluations[..e].iter().map(|(n, _)| (n.clone(), self.plan.eval_dir(key, n))).collect();
            let eval_dir = self.plan.eval_dir(key, name);
            if ranks.leads() {
                self.plan.start_eval(run, name, fingerprint)?;
            }
            let started = Instant::now();
            self.say(ranks, &format!("{key}: evaluating ({name})"));
            let evaluated = self
                .lab
                .evaluate(key, &dir, name, &eval_dir, &earlier, ranks)
                .with_context(|| format!("evaluating run {key} ({name}, in {})", eval_dir.display()))?;
            evaluated.validate()?;
            if ranks.leads() {
                self.plan.finish_eval(run, name, fingerprint, started.elapsed().as_secs_f64(), evaluated)?;
            }
        }
        Ok(())
    }
}

/// What to do with runs or evaluations finished (or begun) under another fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnChange {
    /// Stop, naming them.
    Refuse,
    /// Move them under `replaced/` and run them anew.
    SetAside,
    /// Delete them and run them anew (the demo's runs: cheap, and made by another build).
    Replace,
}

/// What is left: per run, whether to train it and which evaluations to draw. A run or
/// evaluation finished under another fingerprint is handled as `on_change` says.
fn todo(plan: &Plan, on_change: OnChange, log: &Log) -> Result<Vec<Todo>> {
    let changed = plan.changed();
    if !changed.is_empty() {
        if on_change == OnChange::Refuse {
            bail!(
                "the study changed since {} was written: {} ran with other settings. Run again with \
                 --rerun-changed to set them aside (under {}) and run them anew, or choose another --out",
                plan.out.display(),
                changed.join(", "),
                plan.out.join("replaced").display()
            );
        }
        for moved in plan.set_changed_aside()? {
            if on_change == OnChange::Replace {
                std::fs::remove_dir_all(&moved).with_context(|| format!("removing {}", moved.display()))?;
            } else {
                log.say(&format!("changed: set aside as {}", moved.display()));
            }
        }
        if on_change == OnChange::Replace {
            log.say(&format!("{} made by another build or settings: run again", changed.join(", ")));
        }
    }
    let mut todo = Vec::new();
    for (i, run) in plan.runs.iter().enumerate() {
        let train = plan.run_state(run) != State::Done;
        let evaluations: Vec<usize> = run
            .evaluations
            .iter()
            .enumerate()
            .filter(|(_, (name, fingerprint))| {
                train || plan.eval_state(run, name, fingerprint) != State::Done
            })
            .map(|(e, _)| e)
            .collect();
        if !train && !evaluations.is_empty() {
            log.say(&format!("{}: trained, kept; {} evaluations to draw", run.key, evaluations.len()));
        }
        if train || !evaluations.is_empty() {
            todo.push(Todo { run: i, train, evaluations });
        } else {
            log.say(&format!("{}: done, kept", run.key));
        }
    }
    Ok(todo)
}

/// Runs `work` on each item in list order, `jobs` at a time: each of a pool of `jobs`
/// threads, which Burn's CPU kernels share (the cores are never oversubscribed), takes
/// the next item when it finishes one. With one job, on the caller's thread (a run then
/// has every core). The first error, after the started items end; no item starts after it.
pub fn in_parallel<I: Sync>(
    items: &[I],
    jobs: usize,
    work: &(dyn Fn(&I) -> Result<()> + Sync),
) -> Result<()> {
    let jobs = match jobs {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    };
    if jobs <= 1 || items.len() <= 1 {
        return items.iter().try_for_each(work);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let first_error = Mutex::new(None);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    pool.scope(|scope| {
        for _ in 0..jobs.min(items.len()) {
            scope.spawn(|_| {
                loop {
                    if first_error.lock().expect("not poisoned").is_some() {
                        return;
                    }
                    let Some(item) = items.get(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) else {
                        return;
                    };
                    if let Err(e) = work(item) {
                        first_error.lock().expect("not poisoned").get_or_insert(e);
                    }
                }
            });
        }
    });
    first_error.into_inner().expect("not poisoned").map_or(Ok(()), Err)
}

/// Every arm's results and costs, from the records.
fn collect(design: &Design, plan: &Plan) -> Result<(Vec<ArmResults>, Costs)> {
    let mut results = Vec::new();
    let mut costs = BTreeMap::new();
    for arm in &design.arms {
        let keys = arm.runs();
        let mut evaluations: BTreeMap<String, Vec<Evaluated>> = BTreeMap::new();
        for key in &keys {
            let cost = plan.run_record_of(key).with_context(|| format!("run {key} has no record"))?.cost;
            let mut seconds = 0.0;
            for e in &arm.evaluations {
                let record = plan
                    .eval_record_of(key, e)
                    .with_context(|| format!("run {key} has no evaluation {e}"))?;
                seconds += record.seconds;
                evaluations.entry(e.clone()).or_default().push(record.evaluated);
            }
            costs.insert(key.clone(), (cost, seconds));
        }
        let seeds = if arm.trained { arm.seeds.clone() } else { vec![0] };
        results.push(ArmResults { name: arm.name.clone(), seeds, evaluations });
    }
    Ok((results, costs))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::in_parallel;

    /// The items started, sorted.
    fn run(items: &[usize], fail_at: Option<usize>) -> (Result<(), String>, Vec<usize>) {
        let started = Mutex::new(Vec::new());
        let out = in_parallel(items, 2, &|&i| {
            started.lock().unwrap().push(i);
            if Some(i) == fail_at {
                anyhow::bail!("item {i}");
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
            Ok(())
        });
        let mut started = started.into_inner().unwrap();
        started.sort_unstable();
        (out.map_err(|e| e.to_string()), started)
    }

    #[test]
    fn items_are_taken_in_list_order_once_each_and_none_after_an_error() {
        let items: Vec<usize> = (0..400).collect();
        let (out, started) = run(&items, None);
        assert_eq!((out, started), (Ok(()), items.clone()));
        let (out, started) = run(&items, Some(5));
        assert_eq!(out, Err("item 5".to_string()));
        // A prefix of the list (taken in order), and the queue stopped at the error.
        assert_eq!(started, (0..started.len()).collect::<Vec<_>>());
        assert!(started.len() < 200, "{} items started", started.len());
    }
}
