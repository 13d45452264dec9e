//! The figures of an evaluation, written once: name, unit, label and how each is read
//! off the per-problem results ([`ProblemResult`]). The report, the comparison and the
//! study compute every figure from this table.
//!
//! Every figure is, per dataset, Σ over problems of a numerator over Σ of a denominator
//! (pass@1: the fraction of correct samples over one per problem; junior CE: per-chain
//! means over chains), or a signed sum of such ratios (the tax), and the macro figure is
//! the mean over datasets. Written that way a figure can be resampled over problems
//! ([`super::Report`], [`super::compare`]) and pooled over seeds
//! ([`crate::study::resample`]). A study may add columns of its own
//! ([`crate::study::Evaluated::columns`]): the demo's shorthand share is one.

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::legibility::ChainStats;
use super::stats::{pass_at_k, ratio_of_sums};
use crate::Result;

/// What one problem gave: correct counts, token counts and legibility sums.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProblemResult {
    /// Its id in the dataset.
    pub id: usize,
    /// Samples per mode.
    pub n: usize,
    /// Correct solo samples.
    pub solo_correct: usize,
    /// Correct handoff samples.
    pub handoff_correct: usize,
    /// Tokens of the solo samples, together.
    pub solo_tokens: usize,
    /// Tokens of the handoff samples, together.
    pub handoff_tokens: usize,
    /// Senior-written tokens of the handoff samples.
    pub handoff_senior_tokens: usize,
    /// Σ junior NLL of those senior-written handoff tokens.
    pub handoff_junior_nll: f64,
    /// Sums over the solo chains (legibility and drift).
    pub legibility: ChainStats,
    /// [`prompt_hash`](super::prompt_hash) of its prompt, so that two evaluations can be
    /// checked to have posed the same problem (absent in reports from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<u64>,
}

/// Per-problem columns of one dataset, one per sum of the figures' formulas
/// ([`super::figure`]); what the report and [`super::compare`] resample.
pub(crate) struct Columns {
    sums: BTreeMap<Sum, Vec<f64>>,
    /// What a study's own column reads as here (none of the report's figures has one).
    missing: Vec<f64>,
}

impl Columns {
    pub(super) fn new(ks: &[usize], problems: &[ProblemResult]) -> Result<Self> {
        let column = |sum: Sum| -> Result<(Sum, Vec<f64>)> {
            Ok((sum, problems.iter().map(|p| sum.try_of(p)).collect::<Result<Vec<f64>>>()?))
        };
        Ok(Self {
            sums: Sum::all(ks).into_iter().map(column).collect::<Result<_>>()?,
            missing: vec![f64::NAN; problems.len()],
        })
    }

    /// Problems.
    pub(super) fn len(&self) -> usize {
        self.missing.len()
    }

    /// One part's per-problem values.
    pub(super) fn part(&self, part: &Part) -> &[f64] {
        match part {
            Part::Sum(sum) => self.sums.get(sum).unwrap_or(&self.missing),
            Part::Column(..) => &self.missing,
        }
    }
}

/// A figure of an evaluation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Figure {
    /// Solo pass@1, percent.
    Solo,
    /// Handoff pass@1, percent.
    Handoff,
    /// The communication tax, solo − handoff pass@1, points.
    Tax,
    /// The junior's cross-entropy on the senior's solo chains (mean of per-chain means),
    /// nats per token.
    JuniorCe,
    /// The same over all their tokens together (token-weighted), nats per token; not in
    /// a study's tables ([`Figure::BUILT_IN`]).
    JuniorCeTokens,
    /// The junior's top-1 accuracy on those chains, percent (mean over chains).
    JuniorTop1,
    /// KL(senior ‖ junior) per token on the solo chains, exact over the vocabulary, nats.
    Kl,
    /// The same, k3 estimate, nats.
    KlK3,
    /// The share of handoff tokens the senior wrote, percent.
    SeniorShare,
    /// The junior's NLL of the senior-written handoff tokens, nats per token.
    JuniorNllHandoff,
    /// Mean solo response length, tokens.
    SoloLength,
    /// Mean handoff response length, tokens.
    HandoffLength,
    /// A column the study adds ([`crate::study::Evaluated::columns`]), as a percentage of its sums.
    Column(String),
}

/// One side of a ratio: a per-problem value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Sum {
    /// Solo pass@k, a fraction.
    SoloPass(usize),
    /// Handoff pass@k, a fraction.
    HandoffPass(usize),
    Ones,
    ChainCe,
    ChainTop1,
    Chains,
    ChainNll,
    Kl,
    KlK3,
    ChainTokens,
    HandoffSenior,
    HandoffTokens,
    HandoffNll,
    SoloTokens,
    Samples,
}

impl Sum {
    /// Every sum of an evaluation at pass@`ks`.
    pub(crate) fn all(ks: &[usize]) -> Vec<Sum> {
        let pass = ks.iter().flat_map(|&k| [Sum::SoloPass(k), Sum::HandoffPass(k)]);
        let rest = [
            Sum::Ones,
            Sum::ChainCe,
            Sum::ChainTop1,
            Sum::Chains,
            Sum::ChainNll,
            Sum::Kl,
            Sum::KlK3,
            Sum::ChainTokens,
            Sum::HandoffSenior,
            Sum::HandoffTokens,
            Sum::HandoffNll,
            Sum::SoloTokens,
            Sum::Samples,
        ];
        pass.chain(rest).collect()
    }

    /// Its value for one problem; pass@k above the problem's samples is an error.
    pub(crate) fn try_of(self, p: &ProblemResult) -> Result<f64> {
        Ok(match self {
            Sum::SoloPass(k) => pass_at_k(p.n, p.solo_correct, k)?,
            Sum::HandoffPass(k) => pass_at_k(p.n, p.handoff_correct, k)?,
            other => other.of(p),
        })
    }

    /// Its value for one problem (NaN for pass@k above the problem's samples).
    pub(crate) fn of(self, p: &ProblemResult) -> f64 {
        match self {
            Sum::SoloPass(k) => pass_at_k(p.n, p.solo_correct, k).unwrap_or(f64::NAN),
            Sum::HandoffPass(k) => pass_at_k(p.n, p.handoff_correct, k).unwrap_or(f64::NAN),
            Sum::Ones => 1.0,
            Sum::ChainCe => p.legibility.chain_ce,
            Sum::ChainTop1 => p.legibility.chain_top1,
            Sum::Chains => p.legibility.chains as f64,
            Sum::ChainNll => p.legibility.junior_nll,
            Sum::Kl => p.legibility.kl_exact,
            Sum::KlK3 => p.legibility.kl_k3,
            Sum::ChainTokens => p.legibility.tokens as f64,
            Sum::HandoffSenior => p.handoff_senior_tokens as f64,
            Sum::HandoffTokens => p.handoff_tokens as f64,
            Sum::HandoffNll => p.handoff_junior_nll,
            Sum::SoloTokens => p.solo_tokens as f64,
            Sum::Samples => p.n as f64,
        }
    }
}

/// How a figure is computed: per dataset, a signed sum of ratios of per-problem sums
/// (one ratio; the tax: solo minus handoff); the mean over datasets; times `scale`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Formula {
    /// `(sign, numerator, denominator)`.
    pub(crate) terms: Vec<(f64, Part, Part)>,
    /// To the figure's unit (100 for percentages).
    pub(crate) scale: f64,
}

impl Formula {
    /// Its value on the problems `idx` of one dataset's columns, before `scale`.
    pub(super) fn of(&self, columns: &Columns, idx: &[usize]) -> f64 {
        let mut stat = 0.0;
        for (sign, num, den) in &self.terms {
            stat += sign * ratio_of_sums(columns.part(num), columns.part(den), idx);
        }
        stat
    }

    /// Its value for dataset `which` (the mean over datasets when `None`) on the
    /// problems `s[d]` of each dataset `d`, before `scale`.
    pub(super) fn on(&self, columns: &[Columns], which: Option<usize>, s: &[&[usize]]) -> f64 {
        match which {
            Some(d) => self.of(&columns[d], s[d]),
            None => columns.iter().zip(s).map(|(c, idx)| self.of(c, idx)).sum::<f64>() / columns.len() as f64,
        }
    }
}

/// A per-problem column: one of an evaluation's sums, or one the study added.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Sum(Sum),
    /// `(column, 0)`: a study column's numerator; `(column, 1)`: its denominator.
    Column(String, usize),
}

impl Figure {
    /// The built-in figures of a study's tables, in table order.
    pub const BUILT_IN: [Figure; 11] = [
        Figure::Solo,
        Figure::Handoff,
        Figure::Tax,
        Figure::JuniorCe,
        Figure::JuniorTop1,
        Figure::Kl,
        Figure::KlK3,
        Figure::SeniorShare,
        Figure::JuniorNllHandoff,
        Figure::SoloLength,
        Figure::HandoffLength,
    ];

    /// Every built-in figure a study may name: the tables' and the token-weighted
    /// junior CE.
    pub fn all() -> impl Iterator<Item = Figure> {
        Self::BUILT_IN.into_iter().chain([Figure::JuniorCeTokens])
    }

    /// The name a study file uses (`solo`, `tax`, `junior_ce`, ...; a study column's own name).
    pub fn name(&self) -> &str {
        match self {
            Figure::Solo => "solo",
            Figure::Handoff => "handoff",
            Figure::Tax => "tax",
            Figure::JuniorCe => "junior_ce",
            Figure::JuniorCeTokens => "junior_ce_tokens",
            Figure::JuniorTop1 => "junior_top1",
            Figure::Kl => "kl",
            Figure::KlK3 => "kl_k3",
            Figure::SeniorShare => "senior_share",
            Figure::JuniorNllHandoff => "junior_nll_handoff",
            Figure::SoloLength => "solo_length",
            Figure::HandoffLength => "handoff_length",
            Figure::Column(name) => name,
        }
    }

    /// The figure named `name`: a built-in one, or one of `columns` (a study's own).
    pub fn parse(name: &str, columns: &[String]) -> Option<Self> {
        Self::all()
            .find(|f| f.name() == name)
            .or_else(|| columns.iter().any(|c| c == name).then(|| Figure::Column(name.to_string())))
    }

    /// What it measures, in words, with its unit (table headers).
    pub fn label(&self) -> String {
        self.label_at(1)
    }

    /// [`Self::label`] with solo, handoff and tax at pass@`k`.
    pub fn label_at(&self, k: usize) -> String {
        match self {
            Figure::Solo => format!("solo pass@{k} (%)"),
            Figure::Handoff => format!("handoff pass@{k} (%)"),
            Figure::Tax if k == 1 => "tax (points)".into(),
            Figure::Tax => format!("tax at pass@{k} (points)"),
            Figure::JuniorCe => "junior CE (nats/token)".into(),
            Figure::JuniorCeTokens => "junior CE, token-weighted (nats/token)".into(),
            Figure::JuniorTop1 => "junior top-1 (%)".into(),
            Figure::Kl => "KL to the junior (nats/token)".into(),
            Figure::KlK3 => "KL k3 (nats/token)".into(),
            Figure::SeniorShare => "senior share of handoff tokens (%)".into(),
            Figure::JuniorNllHandoff => "junior NLL of senior handoff tokens (nats/token)".into(),
            Figure::SoloLength => "solo length (tokens)".into(),
            Figure::HandoffLength => "handoff length (tokens)".into(),
            Figure::Column(name) => format!("{name} (%)"),
        }
    }

    /// The unit of a difference of it ("points" for percentages).
    pub fn difference_unit(&self) -> &'static str {
        match self {
            Figure::Solo
            | Figure::Handoff
            | Figure::Tax
            | Figure::JuniorTop1
            | Figure::SeniorShare
            | Figure::Column(_) => "points",
            Figure::SoloLength | Figure::HandoffLength => "tokens",
            _ => "nats/token",
        }
    }

    /// Decimals worth printing.
    pub fn decimals(&self) -> usize {
        match self.difference_unit() {
            "nats/token" => 3,
            _ => 1,
        }
    }

    /// How it is read off the per-problem results (pass@1).
    pub(crate) fn formula(&self) -> Formula {
        self.formula_at(1)
    }

    /// [`Self::formula`] with solo, handoff and tax at pass@`k`.
    pub(crate) fn formula_at(&self, k: usize) -> Formula {
        let ratio = |numerator: Sum, denominator: Sum, scale: f64| Formula {
            terms: vec![(1.0, Part::Sum(numerator), Part::Sum(denominator))],
            scale,
        };
        match self {
            Figure::Solo => ratio(Sum::SoloPass(k), Sum::Ones, 100.0),
            Figure::Handoff => ratio(Sum::HandoffPass(k), Sum::Ones, 100.0),
            Figure::Tax => Formula {
                terms: vec![
                    (1.0, Part::Sum(Sum::SoloPass(k)), Part::Sum(Sum::Ones)),
                    (-1.0, Part::Sum(Sum::HandoffPass(k)), Part::Sum(Sum::Ones)),
                ],
                scale: 100.0,
            },
            Figure::JuniorCe => ratio(Sum::ChainCe, Sum::Chains, 1.0),
            Figure::JuniorCeTokens => ratio(Sum::ChainNll, Sum::ChainTokens, 1.0),
            Figure::JuniorTop1 => ratio(Sum::ChainTop1, Sum::Chains, 100.0),
            Figure::Kl => ratio(Sum::Kl, Sum::ChainTokens, 1.0),
            Figure::KlK3 => ratio(Sum::KlK3, Sum::ChainTokens, 1.0),
            Figure::SeniorShare => ratio(Sum::HandoffSenior, Sum::HandoffTokens, 100.0),
            Figure::JuniorNllHandoff => ratio(Sum::HandoffNll, Sum::HandoffSenior, 1.0),
            Figure::SoloLength => ratio(Sum::SoloTokens, Sum::Samples, 1.0),
            Figure::HandoffLength => ratio(Sum::HandoffTokens, Sum::Samples, 1.0),
            Figure::Column(name) => Formula {
                terms: vec![(1.0, Part::Column(name.clone(), 0), Part::Column(name.clone(), 1))],
                scale: 100.0,
            },
        }
    }
}

impl From<Figure> for String {
    fn from(f: Figure) -> Self {
        f.name().to_string()
    }
}

impl TryFrom<String> for Figure {
    type Error = String;

    /// A built-in figure by name; any other name is taken as a study column.
    fn try_from(name: String) -> Result<Self, String> {
        Ok(Self::parse(&name, &[]).unwrap_or(Figure::Column(name)))
    }
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
