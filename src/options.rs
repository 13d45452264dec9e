//! Options shared by several commands: the handoff schedule, the sampler, the precision
//! and how answers are graded.

use anyhow::Result;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use trlvr::data::ReferenceFormat;
use trlvr::prelude::*;
use trlvr_verifiers::{Extraction, MathVerifier};

use crate::recipe::Precision;

/// The built-in handoff schedules.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScheduleName {
    /// The senior writes everything.
    Solo,
    /// A draw at each word boundary (method.md §2).
    Word,
    /// A draw at every token.
    Token,
    /// Strict alternation per paragraph, senior first (the evaluation schedule).
    Step,
}

/// `--schedule`, `--p-sen`, `--max-gap`.
#[derive(Debug, clap::Args)]
pub struct ScheduleArgs {
    /// Which schedule.
    #[arg(long, value_enum, default_value = "word")]
    pub schedule: ScheduleName,
    /// Probability that the senior wins a draw (word, token).
    #[arg(long, default_value_t = 0.5)]
    pub p_sen: f64,
    /// K: redraw after this many tokens without one (word).
    #[arg(long, default_value_t = 32)]
    pub max_gap: usize,
}

impl ScheduleArgs {
    /// The schedule these options name.
    pub fn build(&self) -> Result<Box<dyn HandoffSchedule>> {
        Ok(match self.schedule {
            ScheduleName::Solo => Box::new(Solo::senior()),
            ScheduleName::Word => Box::new(WordBoundary::new(self.p_sen, self.max_gap)?),
            ScheduleName::Token => Box::new(TokenBernoulli::new(self.p_sen)?),
            ScheduleName::Step => Box::new(StepAlternation::default()),
        })
    }
}

/// `--temperature`, `--top-p`, `--top-k`, `--seed`.
#[derive(Debug, clap::Args)]
pub struct SamplingArgs {
    /// Sampling temperature; 0 is greedy.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass (1 = off).
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Keep this many most likely tokens (0 = off).
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    /// Seed of every random stream.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl SamplingArgs {
    /// The sampler, with `temperature` when none was given.
    pub fn sampling(&self, temperature: f32) -> Sampling {
        Sampling {
            temperature: self.temperature.unwrap_or(temperature),
            top_p: self.top_p,
            top_k: self.top_k,
        }
    }
}

/// `--dtype`.
#[derive(Debug, clap::Args)]
pub struct PrecisionArgs {
    /// The models' weights and forward pass in this precision (bf16 halves their memory
    /// and KV caches; log-probs stay f32). Default f32.
    #[arg(long, value_enum)]
    pub dtype: Option<Precision>,
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
