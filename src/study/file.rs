//! Long: every section of the study file with its defaults, the checks across them, and
//! their tests.
//!
//! The study file: arms (recipes), seeds, warm-ups, the evaluation, the analysis and the
//! claims, read and checked before anything runs. Every refusal names the file and the
//! key. Paths are read as on the command line (relative to the current folder); a recipe
//! or a model path may name a warm-up's output as `warmup:<name>`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use trlvr::eval::EvalConfig;
use trlvr::rollout::MAX_NEW_TOKENS;
use trlvr::study::{AnalysisConfig, Claim, ClaimSpec, Names, check_claims};

use crate::options::Grading;
use crate::precision::Precision;
use crate::recipe::{Arm, Named, Recipe};

/// A study file as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    /// A name for the report (default: the file's stem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The seeds of every trained arm.
    pub seeds: Vec<u64>,
    /// Supervised warm-ups trained first (`trlvr sft`), named `warmup:<name>` in paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warmups: Vec<WarmupSpec>,
    /// The recipe every arm starts from.
    pub base: RecipeRef,
    /// The arms, in table order.
    pub arms: Vec<ArmSpec>,
    /// How every run is evaluated.
    pub evaluation: EvaluationSpec,
    /// The evaluations (partner and handoff schedule); default one, `step`: the
    /// paper's paragraph alternation with the evaluation's junior.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluations: Vec<EvaluationEntry>,
    /// How the results are read.
    #[serde(default)]
    pub analysis: AnalysisConfig,
    /// The claims, declared before the run.
    pub claims: Vec<ClaimSpec>,
}

/// A recipe file and overrides.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeRef {
    /// The recipe (TOML, as `trlvr train --config` reads).
    pub recipe: PathBuf,
    /// `key=value` overrides, as `--set`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
}

/// One arm.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
    /// Its name (tables, folders, claims).
    pub name: String,
    /// Its own recipe instead of the base's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<PathBuf>,
    /// The recipe's arm: sets its schedule and objective to that arm's defaults (a
    /// `set` may then change them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<Arm>,
    /// Overrides, after the base's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    /// `false`: not trained; the recipe's starting senior is evaluated as it is (the
    /// warm-up, say), once.
    #[serde(default = "yes")]
    pub train: bool,
    /// Its own seeds instead of the study's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds: Option<Vec<u64>>,
    /// The evaluations it gets (default all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluations: Option<Vec<String>>,
}

fn yes() -> bool {
    true
}

/// A supervised warm-up (`trlvr sft`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmupSpec {
    /// Its name: `warmup:<name>` is its output.
    pub name: String,
    /// The model it starts from.
    pub model: String,
    /// JSONL of questions and worked solutions.
    pub data: PathBuf,
    /// The question's field.
    #[serde(default = "question_field")]
    pub question_field: String,
    /// The solution's field.
    #[serde(default = "solution_field")]
    pub solution_field: String,
    /// Only the first N lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Optimizer steps.
    pub steps: usize,
    /// Examples per step.
    pub batch_size: usize,
    /// Learning rate.
    pub lr: f64,
    /// Seed of the batch order.
    #[serde(default)]
    pub seed: u64,
    /// Device.
    #[serde(default = "flex")]
    pub device: String,
    /// How prompts are written (`own`, `chatml`, or a template file), as `trlvr sft
    /// --chat-template`.
    #[serde(default, skip_serializing_if = "crate::recipe::is_own")]
    pub chat_template: crate::model::ChatChoice,
}

fn question_field() -> String {
    "problem".into()
}

fn solution_field() -> String {
    "solution".into()
}

fn flex() -> String {
    "flex".into()
}

/// What every evaluation shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluationSpec {
    /// Datasets, as `trlvr eval --data` names them.
    pub data: Vec<String>,
    /// The first N problems of each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Samples per problem and mode.
    #[serde(default = "default_n")]
    pub n: usize,
    /// The k of pass@k (default 1, 2, 4, 8 up to n).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<Vec<usize>>,
    /// Response cap, tokens.
    #[serde(default = "default_max_new_tokens")]
    pub max_new_tokens: usize,
    /// Paragraph turns before a handoff chain stops.
    #[serde(default = "default_max_rounds")]
    pub max_rounds: usize,
    /// Sampling temperature (default the evaluation sampler's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Top-k.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<usize>,
    /// Seed of every sampling stream (the same for every run: common random numbers).
    #[serde(default)]
    pub seed: u64,
    /// Problems per engine call.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// How answers are found.
    #[serde(default = "boxed")]
    pub grading: Grading,
    /// The junior of every evaluation that names none (default: the base recipe's junior,
    /// or its starting senior: self-paired with the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub junior: Option<String>,
    /// Both models' device.
    #[serde(default = "flex")]
    pub device: String,
    /// Their precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<Precision>,
}

fn default_n() -> usize {
    EvalConfig::default().n
}

fn default_max_new_tokens() -> usize {
    MAX_NEW_TOKENS
}

fn default_max_rounds() -> usize {
    EvalConfig::default().max_rounds
}

fn default_batch() -> usize {
    EvalConfig::default().batch_problems
}

fn boxed() -> Grading {
    Grading::Boxed
}

/// One evaluation: its partner and handoff schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluationEntry {
    /// Its name (tables, claims).
    pub name: String,
    /// Its junior (default the evaluation's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub junior: Option<String>,
    /// The handoff mode's schedule (default the paragraph alternation), as a recipe's
    /// `[schedule]`: `{ name = "word", p_senior = 0.5 }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Named>,
}

/// A checked arm: its resolved recipe (without the seed), seeds, evaluations.
#[derive(Debug, Clone)]
pub struct ArmPlan {
    /// Name.
    pub name: String,
    /// The recipe, overrides applied (the seed is set per run).
    pub recipe: Recipe,
    /// Trained, or evaluated as it is.
    pub train: bool,
    /// Its seeds (one, unused, for an arm not trained).
    pub seeds: Vec<u64>,
    /// The evaluations it gets.
    pub evaluations: Vec<String>,
}

/// A study file, read and checked.
#[derive(Debug, Clone)]
pub struct Study {
    /// The file.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// As written.
    pub file: StudyFile,
    /// The name.
    pub name: String,
    /// The arms.
    pub arms: Vec<ArmPlan>,
    /// The evaluations.
    pub evaluations: Vec<EvaluationEntry>,
    /// The claims, checked.
    pub claims: Vec<Claim>,
}

impl Study {
    /// Reads and checks `path`; `warmups_dir` is where `warmup:<name>` outputs live.
    ///
    /// # Errors
    /// Naming the file and the key: an unknown key, an arm without a recipe or with an
    /// unknown evaluation, a recipe file that does not exist or does not read, a claim
    /// naming an unknown arm or without a threshold, ...
    pub fn read(path: &Path, warmups_dir: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading study file {}", path.display()))?;
        let file: StudyFile = toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let at = |key: String, e: anyhow::Error| anyhow!("{}: {key}: {e:#}", path.display());
        let name = file.name.clone().unwrap_or_else(|| {
            path.file_stem().map_or_else(|| "study".into(), |s| s.to_string_lossy().into_owned())
        });
        if file.seeds.is_empty() {
            bail!("{}: seeds: at least one seed", path.display());
        }
        if file.arms.is_empty() {
            bail!("{}: arms: at least one arm", path.display());
        }
        check_names(path, "warmups", file.warmups.iter().map(|w| w.name.as_str()))?;
        check_names(path, "arms", file.arms.iter().map(|a| a.name.as_str()))?;
        let evaluations = if file.evaluations.is_empty() {
            vec![EvaluationEntry { name: "step".into(), junior: None, handoff: None }]
        } else {
            file.evaluations.clone()
        };
        check_names(path, "evaluations", evaluations.iter().map(|e| e.name.as_str()))?;
        let eval_names: Vec<String> = evaluations.iter().map(|e| e.name.clone()).collect();
        let warmup = |value: &str| warmup_path(value, &file.warmups, warmups_dir);
        let mut arms = Vec::new();
        for (i, spec) in file.arms.iter().enumerate() {
            let key = format!("arms[{i}] ({:?})", spec.name);
            let recipe = arm_recipe(&file.base, spec, &warmup).map_err(|e| at(key.clone(), e))?;
            let evaluations = spec.evaluations.clone().unwrap_or_else(|| eval_names.clone());
            if let Some(e) = evaluations.iter().find(|e| !eval_names.contains(e)) {
                bail!(
                    "{}: {key}.evaluations: no evaluation {e:?} ({})",
                    path.display(),
                    eval_names.join(", ")
                );
            }
            let seeds = match (spec.train, &spec.seeds) {
                (false, _) => vec![0],
                (true, Some(s)) if s.is_empty() => {
                    bail!("{}: {key}.seeds: at least one seed", path.display())
                }
                (true, Some(s)) => s.clone(),
                (true, None) => file.seeds.clone(),
            };
            arms.push(ArmPlan { name: spec.name.clone(), recipe, train: spec.train, seeds, evaluations });
        }
        let e = &file.evaluation;
        if e.data.is_empty() {
            bail!("{}: evaluation.data: at least one dataset", path.display());
        }
        if e.n == 0 || e.k.as_ref().is_some_and(|k| k.iter().any(|&k| k == 0 || k > e.n)) {
            bail!("{}: evaluation: need n >= 1 and every k in 1..=n", path.display());
        }
        let arm_names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
        let claims =
            check_claims(&file.claims, Names { arms: &arm_names, evaluations: &eval_names, columns: &[] })
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        file.analysis.validate().map_err(|e| anyhow!("{}: {e}", path.display()))?;
        // Every test's arms are evaluated where it reads them.
        for (i, c) in claims.iter().enumerate() {
            for t in c.alternatives.iter().flat_map(|a| &a.tests).chain(&c.requires) {
                for arm in std::iter::once(&t.a).chain(&t.b) {
                    let plan = arms.iter().find(|a| &a.name == arm).expect("checked");
                    if !plan.evaluations.contains(&t.evaluation) {
                        bail!(
                            "{}: claims[{i}] ({:?}) reads arm {arm} in evaluation {}, which that arm does not get",
                            path.display(),
                            c.id,
                            t.evaluation
                        );
                    }
                }
            }
        }
        Ok(Self { path: path.to_path_buf(), text, file, name, arms, evaluations, claims })
    }

    /// The junior of evaluation `entry`: its own, the evaluation's, the base recipe's, or
    /// the base recipe's starting senior.
    pub fn eval_junior(&self, entry: &EvaluationEntry, warmups_dir: &Path) -> Result<String> {
        let base = Recipe::load(&self.file.base.recipe, &self.file.base.set)?;
        let given = entry.junior.clone().or_else(|| self.file.evaluation.junior.clone());
        let junior = given
            .or_else(|| base.junior.as_ref().and_then(|j| j.path.clone()))
            .unwrap_or(base.senior.path.clone());
        warmup_path(&junior, &self.file.warmups, warmups_dir)
    }
}

/// Names must be unique and usable as folder names.
fn check_names<'a>(path: &Path, key: &str, names: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut seen = Vec::new();
    for (i, name) in names.enumerate() {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
            bail!("{}: {key}[{i}].name = {name:?}: use letters, digits, '-', '_' and '.'", path.display());
        }
        if seen.contains(&name) {
            bail!("{}: {key}[{i}].name = {name:?} is used twice", path.display());
        }
        seen.push(name);
    }
    Ok(())
}

/// `warmup:<name>` as the warm-up's output folder; any other value as it is.
fn warmup_path(value: &str, warmups: &[WarmupSpec], dir: &Path) -> Result<String> {
    match value.strip_prefix("warmup:") {
        Some(name) if warmups.iter().any(|w| w.name == name) => {
            Ok(dir.join(name).to_string_lossy().into_owned())
        }
        Some(name) => bail!(
            "{value:?}: no warm-up named {name:?} ({})",
            warmups.iter().map(|w| w.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
        None => Ok(value.to_string()),
    }
}

/// An arm's recipe: its own or the base's, the base's overrides (base recipe only), its
/// arm, its overrides, warm-up names resolved.
fn arm_recipe(base: &RecipeRef, spec: &ArmSpec, warmup: &dyn Fn(&str) -> Result<String>) -> Result<Recipe> {
    let path = spec.recipe.as_ref().unwrap_or(&base.recipe);
    if !path.is_file() {
        bail!("recipe {}: no such file", path.display());
    }
    let mut sets = if spec.recipe.is_none() { base.set.clone() } else { Vec::new() };
    sets.extend(spec.set.iter().cloned());
    let mut recipe = Recipe::load_as(path, spec.arm, &sets)?;
    recipe.senior.path = warmup(&recipe.senior.path)?;
    if let Some(junior) = recipe.junior.as_mut()
        && let Some(p) = &junior.path
    {
        junior.path = Some(warmup(p)?);
    }
    Ok(recipe)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trlvr-study-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn study(recipe: &Path, rest: &str) -> String {
        format!(
            "seeds = [1, 2]\n[base]\nrecipe = \"{}\"\n\n[[arms]]\nname = \"grpo\"\narm = \"grpo\"\n\n[[arms]]\nname = \"trlvr\"\n\
             arm = \"trlvr\"\n\n[[arms]]\nname = \"base\"\ntrain = false\n\n[evaluation]\ndata = [\"gsm8k-test\"]\n{rest}",
            recipe.display()
        )
    }

    const CLAIM: &str = "[[claims]]\nid = \"tax\"\nstatement = \"s\"\nfigure = \"tax\"\na = \"trlvr\"\nb = \"grpo\"\nbelow = 0.0\n";

    fn recipe() -> PathBuf {
        write(
            "r.toml",
            "arm = \"trlvr\"\n[senior]\npath = \"m\"\n[data.train]\npath = \"d.jsonl\"\nlayout = \"gsm8k\"\n[schedule]\nname = \"word\"\np_senior = 0.3\n",
        )
    }

    #[test]
    fn arms_take_their_arm_s_schedule_and_seeds() {
        let path = write("ok.toml", &study(&recipe(), CLAIM));
        let s = Study::read(&path, Path::new("/w")).unwrap();
        assert_eq!(s.name, "ok");
        let grpo = &s.arms[0];
        assert_eq!((grpo.recipe.arm, grpo.recipe.schedule().name.as_str()), (Arm::Grpo, "solo"));
        // TRLVR's schedule is the arm's default, not the recipe's p 0.3.
        assert_eq!(s.arms[1].recipe.schedule().json().unwrap()["p_senior"], 0.5);
        assert_eq!(
            (grpo.seeds.clone(), s.arms[2].seeds.clone(), s.arms[2].train),
            (vec![1, 2], vec![0], false)
        );
        assert_eq!(s.evaluations[0].name, "step");
        assert_eq!(s.claims[0].alternatives[0].tests[0].b.as_deref(), Some("grpo"));
    }

    /// Every shipped study reads and checks (its recipes, evaluations and claims).
    #[test]
    fn shipped_studies_read() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut read = 0;
        for entry in std::fs::read_dir(dir.join("studies")).unwrap() {
            let path = entry.unwrap().path();
            // Paths in a study are the repository's, as on the command line there.
            let text = std::fs::read_to_string(&path)
                .unwrap()
                .replace("\"configs/", &format!("\"{}/configs/", dir.display()));
            let copy = write(&format!("shipped-{read}.toml"), &text);
            let study =
                Study::read(&copy, Path::new("/w")).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            assert!(!study.claims.is_empty(), "{}", path.display());
            assert!(
                study.arms.iter().any(|a| !a.train) && study.arms.iter().filter(|a| a.train).count() >= 3
            );
            read += 1;
        }
        assert!(read >= 1);
    }

    /// Each refusal names the file and the key.
    #[test]
    fn bad_study_files_are_refused_before_anything_runs() {
        let r = recipe();
        for (name, text, want) in [
            (
                "unknown-arm",
                study(&r, &CLAIM.replace("a = \"trlvr\"", "a = \"trlvr2\"")),
                "claims[0] (\"tax\"): a = \"trlvr2\": no such arm",
            ),
            (
                "no-margin",
                study(&r, &CLAIM.replace("below = 0.0\n", "")),
                "claims[0] (\"tax\"): no threshold or margin",
            ),
            (
                "missing-recipe",
                study(Path::new("/no/such/recipe.toml"), CLAIM),
                "arms[0] (\"grpo\"): recipe /no/such/recipe.toml: no such file",
            ),
            (
                "bad-key",
                study(&r, &format!("{CLAIM}[analysis]\nconfidance = 0.9\n")),
                "unknown field `confidance`",
            ),
            (
                "bad-set",
                study(&r, CLAIM).replace("arm = \"grpo\"\n", "arm = \"grpo\"\nset = [\"train.stepz=3\"]\n"),
                "arms[0] (\"grpo\"): ",
            ),
            (
                "eval",
                study(&r, CLAIM).replace("train = false\n", "train = false\nevaluations = [\"word\"]\n"),
                "arms[2] (\"base\").evaluations: no evaluation \"word\"",
            ),
            (
                "warmup",
                study(&r, CLAIM)
                    .replace("train = false\n", "train = false\nset = [\"senior.path=warmup:sft\"]\n"),
                "no warm-up named \"sft\"",
            ),
        ] {
            let path = write(&format!("{name}.toml"), &text);
            let err = Study::read(&path, Path::new("/w")).unwrap_err().to_string();
            assert!(err.starts_with(&path.display().to_string()), "{name}: {err}");
            assert!(err.contains(want), "{name}: {err}");
        }
    }
}
