//! The lab of `trlvr study`: a run is `trlvr train` of its arm's recipe at its seed (into
//! its folder, resumed from its last checkpoint after an interruption), an evaluation is
//! `trlvr eval` of its last checkpoint (or, for an arm not trained, of its recipe's
//! starting senior) with the evaluation's junior and handoff schedule.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use serde_json::json;
use trlvr::eval::EvalConfig;
use trlvr::rollout::Sampling;
use trlvr::study::{Cost, Evaluated, RunKey, plan::fingerprint};
use trlvr::train::StepMetrics;

use super::file::{ArmPlan, Study};
use super::runner::Lab;
use crate::eval::{Job, model_fingerprint, resolve};
use crate::model::resolve_model;
use crate::ranks::Ranks;
use crate::recipe::Recipe;

/// Trains and evaluates a study file's recipes.
pub struct Recipes<'a> {
    study: &'a Study,
    warmups: PathBuf,
    /// Model fingerprints by path: a model's files are hashed once.
    models: Mutex<HashMap<String, String>>,
    /// The command line agreed to load the recipes' plugin libraries.
    trust_plugins: bool,
}

impl std::fmt::Debug for Recipes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recipes").field("study", &self.study.name).finish()
    }
}

impl<'a> Recipes<'a> {
    /// The lab of `study`, whose warm-ups are under `warmups`.
    pub fn new(study: &'a Study, warmups: &Path) -> Self {
        Self {
            study,
            warmups: warmups.to_path_buf(),
            models: Mutex::new(HashMap::new()),
            trust_plugins: false,
        }
    }

    /// Loads the plugin libraries the recipes list when `trusted` (`--trust-plugins`);
    /// otherwise a recipe that lists any is refused before anything runs.
    ///
    /// # Errors
    /// Untrusted plugins, naming them.
    pub fn trusting_plugins(mut self, trusted: bool, runs: &[RunKey]) -> Result<Self> {
        self.trust_plugins = trusted;
        for run in runs {
            let recipe = self.recipe(run)?;
            crate::plugins::consent(&recipe.plugins, trusted, &format!("the recipe of run {run}"))?;
        }
        Ok(self)
    }

    fn arm(&self, run: &RunKey) -> Result<&ArmPlan> {
        self.study.arms.iter().find(|a| a.name == run.arm).ok_or_else(|| anyhow!("no arm {}", run.arm))
    }

    /// The arm's recipe at the run's seed.
    fn recipe(&self, run: &RunKey) -> Result<Recipe> {
        let mut recipe = self.arm(run)?.recipe.clone();
        if let Some(seed) = run.seed {
            recipe.train.seed = seed;
        }
        Ok(recipe)
    }

    /// A model's fingerprint (its weight and config files), hashed once per path.
    fn model(&self, spec: &str) -> Result<String> {
        if let Some(f) = self.models.lock().expect("not poisoned").get(spec) {
            return Ok(f.clone());
        }
        let f = model_fingerprint(&resolve_model(spec)?)?;
        self.models.lock().expect("not poisoned").insert(spec.to_string(), f.clone());
        Ok(f)
    }

    /// Where a run's senior is after training: its last checkpoint (the Hugging Face
    /// layout beside the trainer's state).
    fn senior_of(&self, run: &RunKey, run_dir: &Path) -> Result<PathBuf> {
        let recipe = self.recipe(run)?;
        if run.seed.is_none() {
            return resolve_model(&recipe.senior.path);
        }
        Ok(trlvr::train::RunDir::open(run_dir)?.checkpoint_dir(recipe.train.steps))
    }

    /// The earlier evaluation of a run whose solo samples an evaluation with `junior`
    /// takes: every evaluation of a study shares the senior, problems and sampler, so any
    /// drawn one serves; one with the same junior gives their legibility too.
    fn solo_source(&self, junior: &str, earlier: &[(String, PathBuf)]) -> Result<Option<PathBuf>> {
        let mut drawn = Vec::new();
        for (name, dir) in earlier.iter().filter(|(_, dir)| dir.join("samples.jsonl").exists()) {
            let entry = self.study.evaluations.iter().find(|x| &x.name == name).context("an evaluation")?;
            drawn.push((self.study.eval_junior(entry, &self.warmups)? == junior, dir));
        }
        let same_junior = drawn.iter().find(|(same, _)| *same);
        Ok(same_junior.or(drawn.first()).map(|(_, dir)| (*dir).clone()))
    }
}

impl Lab for Recipes<'_> {
    fn fingerprint(&self, run: &RunKey) -> Result<String> {
        let recipe = self.recipe(run)?;
        let senior = self.model(&recipe.senior.path)?;
        if run.seed.is_none() {
            return Ok(fingerprint(&json!({ "senior": senior }).to_string()));
        }
        let junior = match recipe.junior.as_ref().and_then(|j| j.path.as_deref()) {
            Some(path) => Some(self.model(path)?),
            None => None,
        };
        let mut data = vec![recipe.data.train.path.clone()];
        data.extend(recipe.data.validation.as_ref().map(|v| v.path.clone()));
        let data = trlvr::data::hash_files(&data)?;
        let text = json!({ "recipe": recipe.to_toml()?, "senior": senior, "junior": junior, "data": data });
        Ok(fingerprint(&text.to_string()))
    }

    fn eval_fingerprint(&self, _run: &RunKey, evaluation: &str) -> Result<String> {
        let entry = self.study.evaluations.iter().find(|e| e.name == evaluation).context("an evaluation")?;
        let junior = self.model(&self.study.eval_junior(entry, &self.warmups)?)?;
        let files: Vec<PathBuf> = self
            .study
            .file
            .evaluation
            .data
            .iter()
            .map(|d| resolve(d, None).map(|r| r.spec.path))
            .collect::<Result<_>>()?;
        let text = json!({
            "evaluation": self.study.file.evaluation, "entry": entry, "junior": junior,
            "data": trlvr::data::hash_files(&files)?,
        });
        Ok(fingerprint(&text.to_string()))
    }

    fn train(&self, run: &RunKey, dir: &Path, ranks: &Ranks) -> Result<Cost> {
        let recipe = self.recipe(run)?;
        // A begun run (its recipe written) resumes from its last good checkpoint.
        let resume = dir.join("config.toml").exists();
        let start =
            crate::train::Start { resume, accept_unchecked: false, trust_plugins: self.trust_plugins };
        crate::train::train_run(recipe.clone(), dir, start, Some(&run.folder()), ranks)?;
        // Rank 0 writes the metrics, and the run's record.
        if ranks.leads() { cost(dir, &recipe) } else { Ok(Cost::default()) }
    }

    fn evaluate(
        &self,
        run: &RunKey,
        run_dir: &Path,
        evaluation: &str,
        dir: &Path,
        earlier: &[(String, PathBuf)],
        ranks: &Ranks,
    ) -> Result<Evaluated> {
        let e = &self.study.file.evaluation;
        let entry = self.study.evaluations.iter().find(|x| x.name == evaluation).context("an evaluation")?;
        let junior = self.study.eval_junior(entry, &self.warmups)?;
        let defaults = EvalConfig::default();
        let ks = e.k.clone().unwrap_or_else(|| defaults.ks.iter().copied().filter(|&k| k <= e.n).collect());
        let sampling = Sampling {
            temperature: e.temperature.unwrap_or(defaults.sampling.temperature),
            top_p: e.top_p.unwrap_or(defaults.sampling.top_p),
            top_k: e.top_k.unwrap_or(defaults.sampling.top_k),
        };
        let job = Job {
            senior: self.senior_of(run, run_dir)?,
            junior: Some(resolve_model(&junior)?),
            data: e.data.clone(),
            limit: e.limit,
            config: EvalConfig {
                n: e.n,
                ks,
                sampling,
                max_new_tokens: e.max_new_tokens,
                max_rounds: e.max_rounds,
                seed: e.seed,
                batch_problems: e.batch,
                ..defaults
            },
            grading: e.grading,
            handoff: entry
                .handoff
                .as_ref()
                .map(|h| Ok::<_, anyhow::Error>((h.name.clone(), h.json()?)))
                .transpose()?,
            device: e.device.clone(),
            dtype: e.dtype,
            chat_template: self.recipe(run)?.senior.chat_template.clone(),
            solo_from: self.solo_source(&junior, earlier)?,
            out: dir.to_path_buf(),
            label: Some(format!("{run} {evaluation}")),
        };
        Ok(crate::eval::evaluate(&job, ranks)?.into())
    }
}

/// A trained run's cost, from its metrics (every line, across restarts).
fn cost(dir: &Path, recipe: &Recipe) -> Result<Cost> {
    let path = dir.join("metrics.jsonl");
    let text = trlvr::lines::read_text(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut cost = Cost::default();
    for (i, line) in text.lines().enumerate() {
        let m: StepMetrics =
            serde_json::from_str(line).with_context(|| format!("{}, line {}", path.display(), i + 1))?;
        cost.seconds += m.time_s;
        cost.steps = m.step;
        cost.senior_tokens += m.senior_tokens as u64;
        cost.junior_tokens += (m.tokens - m.senior_tokens) as u64;
    }
    cost.prompts = cost.steps * recipe.train.prompts_per_step;
    Ok(cost)
}
