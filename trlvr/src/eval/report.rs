//! The figures of an evaluation, per dataset and macro-averaged, with intervals; as JSON
//! (serde) and as the Markdown tables a paper would print.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::config::EvalConfig;
use super::figure::{Columns, Figure, Formula, ProblemResult};
use super::stats::{Bootstrap, Estimate};
use super::store::Mode;
use crate::Result;

/// pass@k at one k.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassAt {
    /// k.
    pub k: usize,
    /// Percent.
    #[serde(flatten)]
    pub estimate: Estimate,
}

/// The communication tax (paired over problems).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tax {
    /// Solo pass@1 − handoff pass@1, in points.
    pub points: Estimate,
    /// Handoff pass@1 / solo pass@1 (NaN when solo is 0).
    pub ratio: Estimate,
}

/// How legible the senior's solo chains are to the junior (method.md §5): per chain, the
/// mean over its tokens (EOS left out); then the mean over chains.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Legibility {
    /// The junior's per-token cross-entropy, nats: the mean of per-chain means.
    pub junior_ce: Estimate,
    /// Percent of a chain's tokens that are the junior's top-1 guess, mean over chains.
    pub junior_top1: Estimate,
    /// The junior's cross-entropy over all tokens together (long chains weigh more),
    /// nats; the same as [`Drift::junior_nll`].
    pub junior_ce_tokens: Estimate,
}

/// How far the senior is from the junior, per token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// KL(senior ‖ junior), k3 estimate on the senior's solo tokens, nats. The tokens are
    /// drawn at the evaluation's sampler (T 0.7, top-p 0.8, top-k 20 by default), not
    /// from the senior's raw distribution the estimator assumes, so it is an estimate on
    /// those samples; `kl_exact` needs no samples of its own.
    pub kl_k3: Estimate,
    /// KL(senior ‖ junior) of the next-token distributions, exact over the vocabulary,
    /// at the positions of the senior's solo chains, nats.
    pub kl_exact: Estimate,
    /// The junior's NLL of the senior's solo tokens, nats (the legibility cross-entropy
    /// again, under the name the drift tracking uses).
    pub junior_nll: Estimate,
    /// The junior's NLL of the senior-written tokens of the handoff chains, nats.
    pub junior_nll_handoff: Estimate,
}

/// Every figure of one dataset, or macro-averaged over datasets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Problems (summed over datasets for the macro figures).
    pub problems: usize,
    /// Solo pass@k, percent.
    pub solo: Vec<PassAt>,
    /// Handoff pass@k, percent.
    pub handoff: Vec<PassAt>,
    /// The communication tax.
    pub tax: Tax,
    /// Legibility.
    pub legibility: Legibility,
    /// Drift.
    pub drift: Drift,
    /// Mean solo response length, tokens.
    pub solo_mean_tokens: f64,
    /// Mean handoff response length, tokens.
    pub handoff_mean_tokens: f64,
    /// Fraction of handoff tokens the senior wrote.
    pub handoff_senior_share: f64,
}

/// One dataset's figures and per-problem results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetReport {
    /// The dataset.
    pub name: String,
    /// Its figures.
    pub figures: Figures,
    /// Per problem.
    pub problems: Vec<ProblemResult>,
}

/// Tokens drawn and seconds spent in this run (zero for samples read from the store).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Solo tokens drawn.
    pub solo_tokens: usize,
    /// Seconds drawing them.
    pub solo_seconds: f64,
    /// Handoff tokens drawn (both models).
    pub handoff_tokens: usize,
    /// Seconds drawing them.
    pub handoff_seconds: f64,
}

impl Throughput {
    /// Adds a batch.
    pub fn add(&mut self, mode: Mode, tokens: usize, seconds: f64) {
        match mode {
            Mode::Solo => {
                self.solo_tokens += tokens;
                self.solo_seconds += seconds;
            }
            Mode::Handoff => {
                self.handoff_tokens += tokens;
                self.handoff_seconds += seconds;
            }
        }
    }

    /// Tokens drawn, both modes.
    pub fn tokens(&self) -> usize {
        self.solo_tokens + self.handoff_tokens
    }

    /// Seconds drawing, both modes.
    pub fn seconds(&self) -> f64 {
        self.solo_seconds + self.handoff_seconds
    }

    /// Tokens per second over both modes (0 when nothing was drawn).
    pub fn tokens_per_second(&self) -> f64 {
        if self.seconds() > 0.0 { self.tokens() as f64 / self.seconds() } else { 0.0 }
    }
}

/// An evaluation's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The settings.
    pub config: EvalConfig,
    /// Per dataset.
    pub sets: Vec<SetReport>,
    /// Macro-averaged over datasets (each dataset weighs the same).
    #[serde(rename = "macro")]
    pub macro_figures: Figures,
    /// Sampling speed of this run.
    pub throughput: Throughput,
}

impl Report {
    /// The figures of `results` (per dataset: its name and per-problem results), with
    /// the intervals `config` asks for; what [`Evaluation::measure`] returns.
    ///
    /// # Errors
    /// [`Error::Config`](crate::Error::Config) for a bad confidence, or a problem with
    /// fewer samples than a k.
    ///
    /// [`Evaluation::measure`]: super::Evaluation::measure
    pub fn from_results(
        config: &EvalConfig,
        results: Vec<(String, Vec<ProblemResult>)>,
        throughput: Throughput,
    ) -> Result<Self> {
        let sizes: Vec<usize> = results.iter().map(|(_, p)| p.len()).collect();
        let boot = Bootstrap::new(&sizes, config.bootstrap, config.bootstrap_seed, config.confidence)?;
        let columns: Vec<Columns> =
            results.iter().map(|(_, p)| Columns::new(&config.ks, p)).collect::<Result<_>>()?;
        let sets = results
            .iter()
            .enumerate()
            .map(|(d, (name, problems))| SetReport {
                name: name.clone(),
                figures: figures(&boot, &columns, &config.ks, Some(d)),
                problems: problems.clone(),
            })
            .collect();
        let macro_figures = figures(&boot, &columns, &config.ks, None);
        Ok(Self { config: config.clone(), sets, macro_figures, throughput })
    }

    /// The tables a paper would print: accuracy, communication tax, legibility and
    /// drift; one row per dataset and a macro row. `header` lines come first (models,
    /// settings).
    pub fn to_markdown(&self, header: &[String]) -> String {
        let mut md = String::from("# Evaluation\n\n");
        for line in header {
            let _ = writeln!(md, "{line}  ");
        }
        let c = &self.config;
        write_settings(&mut md, c);
        let rows: Vec<(&str, &Figures)> = self
            .sets
            .iter()
            .map(|s| (s.name.as_str(), &s.figures))
            .chain(std::iter::once(("macro", &self.macro_figures)))
            .collect();
        write_accuracy(&mut md, &c.ks, &rows);
        write_tax(&mut md, &rows);
        write_legibility(&mut md, &rows);
        write_throughput(&mut md, &self.throughput);
        md
    }
}

/// The line under the header: the sampler, the budget, the handoff and the intervals.
fn write_settings(md: &mut String, c: &EvalConfig) {
    let _ = writeln!(
        md,
        "\n{} samples per problem at T {}, top-p {}, top-k {}; budget {} tokens; handoff: step alternation, \
         senior first, at most {} rounds. Brackets: {:.0}% bootstrap interval over problems ({} resamples).\n",
        c.n,
        c.sampling.temperature,
        c.sampling.top_p,
        c.sampling.top_k,
        c.max_new_tokens,
        c.max_rounds,
        100.0 * c.confidence,
        c.bootstrap
    );
}

/// 1. Accuracy: solo and handoff pass@k per dataset.
fn write_accuracy(md: &mut String, ks: &[usize], rows: &[(&str, &Figures)]) {
    *md += "## Accuracy (pass@k, %)\n\n| dataset | problems |";
    for mode in ["solo", "handoff"] {
        for k in ks {
            let _ = write!(md, " {mode} pass@{k} |");
        }
    }
    *md += "\n|---|---:|";
    *md += &"---:|".repeat(2 * ks.len());
    md.push('\n');
    for (name, f) in rows {
        let _ = write!(md, "| {name} | {} |", f.problems);
        for p in f.solo.iter().chain(&f.handoff) {
            let _ = write!(md, " {} |", p.estimate.show(1));
        }
        md.push('\n');
    }
}

/// 2. The tax: pass@1 solo and handoff, their difference and ratio, the senior's share.
fn write_tax(md: &mut String, rows: &[(&str, &Figures)]) {
    *md += "\n## Communication tax\n\n| dataset | solo pass@1 (%) | handoff pass@1 (%) | tax (points) | handoff / solo | senior share of handoff tokens |\n|---|---:|---:|---:|---:|---:|\n";
    for (name, f) in rows {
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {:.2} |",
            f.solo[0].estimate.show(1),
            f.handoff[0].estimate.show(1),
            f.tax.points.show(1),
            f.tax.ratio.show(2),
            f.handoff_senior_share
        );
    }
}

/// 3. Legibility and drift: the junior's cross-entropy and top-1, KL, the handoff NLL.
fn write_legibility(md: &mut String, rows: &[(&str, &Figures)]) {
    *md += "\n## Legibility and drift (per token, nats)\n\nJunior CE and top-1: the mean over chains of each chain's mean (EOS left out); \
           \"token-weighted\": over all tokens together. KL k3 is estimated on the chains as sampled for the \
           evaluation (its sampler, not the senior's raw distribution).\n\n\
           | dataset | junior CE | junior CE, token-weighted | junior top-1 (%) | KL k3 (eval samples) | KL exact | junior NLL, handoff | solo tokens / chain |\n|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (name, f) in rows {
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {} | {} | {:.0} |",
            f.legibility.junior_ce.show(3),
            f.legibility.junior_ce_tokens.show(3),
            f.legibility.junior_top1.show(1),
            f.drift.kl_k3.show(3),
            f.drift.kl_exact.show(3),
            f.drift.junior_nll_handoff.show(3),
            f.solo_mean_tokens
        );
    }
}

/// The sampling throughput of this run, when it drew any tokens.
fn write_throughput(md: &mut String, t: &Throughput) {
    if t.tokens() > 0 {
        let _ = writeln!(
            md,
            "\nSampled in this run: {} tokens in {:.1} s ({:.1} tokens/s; solo {:.1}, handoff {:.1}).",
            t.tokens(),
            t.seconds(),
            t.tokens_per_second(),
            t.solo_tokens as f64 / t.solo_seconds.max(1e-9),
            t.handoff_tokens as f64 / t.handoff_seconds.max(1e-9)
        );
    }
}

/// The figures of dataset `which` (or the macro average when `None`), each as the
/// figure table ([`super::figure`]) reads it off the per-problem columns.
fn figures(boot: &Bootstrap, columns: &[Columns], ks: &[usize], which: Option<usize>) -> Figures {
    let unscaled = |formula: &Formula| boot.estimate(|s| formula.on(columns, which, s));
    let estimate_at = |figure: Figure, k: usize| {
        let formula = figure.formula_at(k);
        unscaled(&formula).scaled(formula.scale)
    };
    let estimate = |figure: Figure| estimate_at(figure, 1);
    let pass = |figure: Figure| -> Vec<PassAt> {
        ks.iter().map(|&k| PassAt { k, estimate: estimate_at(figure.clone(), k) }).collect()
    };
    // The plain figures: the point value before the unit (the senior share a fraction).
    let sizes: Vec<usize> = columns.iter().map(Columns::len).collect();
    let everything: Vec<Vec<usize>> = sizes.iter().map(|&n| (0..n).collect()).collect();
    let everything: Vec<&[usize]> = everything.iter().map(Vec::as_slice).collect();
    let plain = |figure: Figure| {
        let value = figure.formula().on(columns, which, &everything);
        if value.is_nan() { 0.0 } else { value }
    };
    let k = ks[0];
    let (solo, handoff) = (Figure::Solo.formula_at(k), Figure::Handoff.formula_at(k));
    let junior_ce_tokens = estimate(Figure::JuniorCeTokens);
    Figures {
        problems: which.map_or(sizes.iter().sum(), |d| sizes[d]),
        solo: pass(Figure::Solo),
        handoff: pass(Figure::Handoff),
        tax: Tax {
            points: estimate_at(Figure::Tax, k),
            ratio: boot.estimate(|s| handoff.on(columns, which, s) / solo.on(columns, which, s)),
        },
        legibility: Legibility {
            junior_ce: estimate(Figure::JuniorCe),
            junior_top1: estimate(Figure::JuniorTop1),
            junior_ce_tokens,
        },
        drift: Drift {
            kl_k3: estimate(Figure::KlK3),
            kl_exact: estimate(Figure::Kl),
            junior_nll: junior_ce_tokens,
            junior_nll_handoff: estimate(Figure::JuniorNllHandoff),
        },
        solo_mean_tokens: plain(Figure::SoloLength),
        handoff_mean_tokens: plain(Figure::HandoffLength),
        handoff_senior_share: plain(Figure::SeniorShare),
    }
}
