//! Long: about 460 lines of one concept (a paired comparison and when two runs pair),
//! then 300 lines of tests and their fixtures.
//!
//! Paired comparison of two evaluations over the same problems: B − A for every figure
//! of a [`Report`], with a bootstrap interval that keeps the pairing.
//!
//! Two seniors evaluated on the same problems share most of their variance: a hard
//! problem is hard for both. Two separate intervals (or resampling each run's problems on
//! its own) count that shared variance twice. [`Comparison::new`] resamples problem
//! *indices* once per resample and applies them to both runs (one [`Bootstrap`] over the
//! problems of every dataset, shared by every figure), so the interval of B − A holds
//! only the variance of the per-problem differences: often far narrower.
//!
//! | figure | B − A of |
//! |---|---|
//! | solo, handoff pass@k | every k of the runs' `ks`, percent |
//! | communication tax | solo − handoff pass@k at the first k (pass@1 by default), points |
//! | legibility | the junior's CE (nats per token; the mean of per-chain means, and token-weighted) and top-1 (percent) on the solo chains |
//! | drift | KL k3 and exact; the junior's NLL of solo and of handoff senior tokens (nats per token) |
//!
//! Every figure is computed from the per-problem results as the report computes it (per
//! dataset a ratio of sums: over chains for legibility, over tokens for drift; the macro
//! figure the mean over datasets), so the point estimate of a difference is B's figure minus A's,
//! exactly. [`Shown`] reads its interval: B above A, below, or no difference shown when
//! the interval holds 0.
//!
//! # What can be compared
//!
//! Pairing needs the same problems measured the same way; the senior (and the sampling
//! seed) may differ. [`Comparison::new`] refuses, with one [`Error::Incomparable`] naming
//! every difference:
//!
//! - other **problems**: dataset names (in order), each dataset's problem ids (in order),
//!   each problem's prompt hash where both reports record it (another dataset file,
//!   template or tokenizer);
//! - other **settings** of [`EvalConfig`]: `n`, `ks`, `sampling`, `max_new_tokens`,
//!   `max_rounds`;
//! - other **recorded settings** ([`Run::recorded`]; from `eval.json`: `grading`,
//!   `template` and the junior's fingerprint), where both runs record them.
//!
//! Free to differ: the senior; `seed` (the same seed gives both runs the same random
//! streams, common random numbers, which pairs them even more closely); what changes
//! speed, not samples (batching, logits budget, catch-up, host sampling); and the reports'
//! own bootstrap settings ([`CompareConfig`] draws new resamples).
//!
//! ```
//! use trlvr::eval::{ChainStats, CompareConfig, Comparison, EvalConfig, ProblemResult, Report, Run, Shown, Throughput};
//!
//! let problem = |id, solo_correct| ProblemResult {
//!     id, n: 4, solo_correct, handoff_correct: solo_correct / 2,
//!     solo_tokens: 40, handoff_tokens: 40, handoff_senior_tokens: 20, handoff_junior_nll: 10.0,
//!     legibility: ChainStats { chains: 4, chain_ce: 2.0, chain_top1: 3.0, tokens: 40, junior_nll: 20.0,
//!         junior_top1: 30, kl_k3: 0.5, kl_exact: 0.6 },
//!     prompt_hash: None,
//! };
//! let config = EvalConfig { n: 4, ks: vec![1, 4], bootstrap: 200, ..EvalConfig::default() };
//! let report = |correct: [usize; 4]| {
//!     let problems = (0..4).map(|i| problem(i, correct[i])).collect();
//!     Report::from_results(&config, vec![("toy".into(), problems)], Throughput::default())
//! };
//! let (a, b) = (report([0, 1, 2, 2])?, report([2, 3, 4, 4])?);
//! let c = Comparison::new(&Run::from(a.clone()), &Run::from(b.clone()), &CompareConfig::default())?;
//! let solo = &c.sets[0].differences.solo[0].difference; // pass@1
//! assert_eq!((solo.a, solo.b), (31.25, 81.25));
//! // Every problem gains 2 of 4 correct: +50 points on every resample.
//! assert_eq!((solo.b_minus_a.value, solo.b_minus_a.low, solo.b_minus_a.high), (50.0, 50.0, 50.0));
//! assert_eq!(solo.shown, Shown::BAbove);
//! # Ok::<(), trlvr::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::EvalConfig;
use super::figure::Columns;
use super::figure::Figure;
use super::report::Report;
use super::stats::{Bootstrap, Estimate};
use crate::{Error, Result};

/// How a comparison resamples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompareConfig {
    /// Bootstrap resamples (default 1000, as `trlvr eval`); at least 1.
    pub bootstrap: usize,
    /// Seed of the resamples.
    pub seed: u64,
    /// Coverage of the intervals (default 0.95).
    pub confidence: f64,
}

impl Default for CompareConfig {
    fn default() -> Self {
        Self { bootstrap: 1000, seed: 0, confidence: 0.95 }
    }
}

/// One side of a comparison: a report, and the settings recorded beside it that its
/// figures depend on but [`EvalConfig`] does not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The evaluation.
    pub report: Report,
    /// Settings by name (`grading`, `template`, `junior fingerprint` in an `eval.json`):
    /// two runs must agree on each one both record.
    pub recorded: BTreeMap<String, Value>,
    /// The senior, as recorded (its path; shown, never compared).
    pub senior: Option<String>,
}

impl From<Report> for Run {
    fn from(report: Report) -> Self {
        Self { report, recorded: BTreeMap::new(), senior: None }
    }
}

impl Run {
    /// Adds a recorded setting.
    #[must_use]
    pub fn with_recorded(mut self, name: impl Into<String>, value: Value) -> Self {
        self.recorded.insert(name.into(), value);
        self
    }

    /// Reads what `trlvr eval` wrote: an `eval.json`, or the folder that holds one. Its
    /// report, with `grading`, `template` and `models.junior.fingerprint` as recorded
    /// settings where present.
    ///
    /// # Errors
    /// [`Error::Data`] naming the file if it cannot be read or holds no report.
    pub fn read(path: &Path) -> Result<Self> {
        let path = if path.is_dir() { path.join("eval.json") } else { path.to_path_buf() };
        let fail = |message: String| Error::Data { path: path.clone(), line: None, message };
        let text = crate::lines::read_text(&path).map_err(|e| fail(format!("cannot read: {e}")))?;
        let json: Value = serde_json::from_str(&text).map_err(|e| fail(format!("not JSON: {e}")))?;
        let report = Report::deserialize(&json)
            .map_err(|e| fail(format!("not an evaluation report (eval.json): {e}")))?;
        let mut run = Self::from(report);
        for (name, pointer) in [
            ("grading", "/grading"),
            ("template", "/template"),
            ("junior fingerprint", "/models/junior/fingerprint"),
        ] {
            if let Some(value) = json.pointer(pointer).filter(|v| !v.is_null()) {
                run.recorded.insert(name.into(), value.clone());
            }
        }
        run.senior = json.pointer("/models/senior/path").and_then(Value::as_str).map(String::from);
        Ok(run)
    }
}

/// What the interval of a difference shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shown {
    /// The whole interval is above 0.
    #[serde(rename = "B > A")]
    BAbove,
    /// The whole interval is below 0.
    #[serde(rename = "B < A")]
    BBelow,
    /// The interval holds 0 (or the figure is undefined).
    #[serde(rename = "no difference shown")]
    Neither,
}

impl Shown {
    /// The reading of `difference`'s interval.
    pub fn of(difference: &Estimate) -> Self {
        if difference.low > 0.0 {
            Self::BAbove
        } else if difference.high < 0.0 {
            Self::BBelow
        } else {
            Self::Neither
        }
    }

    /// As the table writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BAbove => "B > A",
            Self::BBelow => "B < A",
            Self::Neither => "no difference shown",
        }
    }
}

/// One figure of both runs and their paired difference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// A's figure.
    pub a: f64,
    /// B's figure.
    pub b: f64,
    /// B − A, with its paired interval.
    pub b_minus_a: Estimate,
    /// What the interval shows.
    pub shown: Shown,
}

/// pass@k at one k, both runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassAtDifference {
    /// k.
    pub k: usize,
    /// Percent.
    #[serde(flatten)]
    pub difference: Difference,
}

/// Every figure's difference, for one dataset or macro-averaged; units as in [`Figures`](super::Figures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Differences {
    /// Problems (summed over datasets for the macro figures).
    pub problems: usize,
    /// Solo pass@k, percent.
    pub solo: Vec<PassAtDifference>,
    /// Handoff pass@k, percent.
    pub handoff: Vec<PassAtDifference>,
    /// The communication tax, points.
    pub tax_points: Difference,
    /// The junior's cross-entropy on the senior's solo chains, nats per token (the mean
    /// of per-chain means, as the report's).
    pub junior_ce: Difference,
    /// The same over all tokens together.
    pub junior_ce_tokens: Difference,
    /// The junior's top-1 accuracy on them, percent (mean over chains).
    pub junior_top1: Difference,
    /// KL(senior ‖ junior), k3 estimate, nats per token.
    pub kl_k3: Difference,
    /// KL(senior ‖ junior), exact, nats per token.
    pub kl_exact: Difference,
    /// The junior's NLL of the solo tokens (the token-weighted cross-entropy again,
    /// under drift's name).
    pub junior_nll: Difference,
    /// The junior's NLL of the senior-written handoff tokens, nats per token.
    pub junior_nll_handoff: Difference,
}

impl Differences {
    /// The table's rows: label, decimals, difference, as the figure table names them
    /// (`junior_nll` is left out: it is the token-weighted junior CE row).
    pub fn rows(&self) -> Vec<(String, usize, &Difference)> {
        let mut rows = Vec::new();
        for (figure, pass) in [(Figure::Solo, &self.solo), (Figure::Handoff, &self.handoff)] {
            rows.extend(pass.iter().map(|p| (figure.label_at(p.k), figure.decimals(), &p.difference)));
        }
        let k = self.solo.first().map_or(1, |p| p.k);
        let row = |figure: Figure, difference| (figure.label_at(k), figure.decimals(), difference);
        rows.extend([
            row(Figure::Tax, &self.tax_points),
            row(Figure::JuniorCe, &self.junior_ce),
            row(Figure::JuniorCeTokens, &self.junior_ce_tokens),
            row(Figure::JuniorTop1, &self.junior_top1),
            row(Figure::KlK3, &self.kl_k3),
            row(Figure::Kl, &self.kl_exact),
            row(Figure::JuniorNllHandoff, &self.junior_nll_handoff),
        ]);
        rows
    }
}

/// One dataset's differences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetComparison {
    /// The dataset.
    pub name: String,
    /// Its differences.
    pub differences: Differences,
}

/// B − A for every figure, per dataset and macro-averaged, with paired intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// How the intervals were drawn.
    pub config: CompareConfig,
    /// Per dataset.
    pub sets: Vec<SetComparison>,
    /// Macro-averaged over datasets.
    #[serde(rename = "macro")]
    pub macro_differences: Differences,
}

impl Comparison {
    /// B − A of every figure of `a` and `b`, with intervals from `config.bootstrap`
    /// paired resamples of the problems.
    ///
    /// # Errors
    /// [`Error::Incomparable`] for runs over other problems or with other settings (see
    /// the [module docs](self)); [`Error::Config`] for no resamples or a bad confidence.
    pub fn new(a: &Run, b: &Run, config: &CompareConfig) -> Result<Self> {
        check_comparable(a, b)?;
        if config.bootstrap == 0 || a.report.config.ks.is_empty() {
            return Err(Error::Config("a comparison needs at least 1 bootstrap resample and 1 k".into()));
        }
        let (ra, rb) = (&a.report, &b.report);
        let sizes: Vec<usize> = ra.sets.iter().map(|s| s.problems.len()).collect();
        let boot = Bootstrap::new(&sizes, config.bootstrap, config.seed, config.confidence)?;
        let columns = |r: &Report| -> Result<Vec<Columns>> {
            r.sets.iter().map(|s| Columns::new(&r.config.ks, &s.problems)).collect()
        };
        let (ca, cb) = (columns(ra)?, columns(rb)?);
        let identity: Vec<Vec<usize>> = sizes.iter().map(|&n| (0..n).collect()).collect();
        let identity: Vec<&[usize]> = identity.iter().map(Vec::as_slice).collect();
        let differences = |which: Option<usize>| {
            // A figure in its unit on the problems `s[d]` of each dataset of one run.
            let ks = &ra.config.ks;
            let diff_at = |figure: Figure, k: usize| {
                let formula = figure.formula_at(k);
                let on = |c: &[Columns], s: &[&[usize]]| formula.on(c, which, s) * formula.scale;
                let b_minus_a = boot.estimate(|s| on(&cb, s) - on(&ca, s));
                Difference {
                    a: on(&ca, &identity),
                    b: on(&cb, &identity),
                    b_minus_a,
                    shown: Shown::of(&b_minus_a),
                }
            };
            let diff = |figure: Figure| diff_at(figure, ks[0]);
            let pass = |figure: Figure| -> Vec<PassAtDifference> {
                ks.iter().map(|&k| PassAtDifference { k, difference: diff_at(figure.clone(), k) }).collect()
            };
            let junior_ce_tokens = diff(Figure::JuniorCeTokens);
            Differences {
                problems: which.map_or(sizes.iter().sum(), |d| sizes[d]),
                solo: pass(Figure::Solo),
                handoff: pass(Figure::Handoff),
                tax_points: diff(Figure::Tax),
                junior_ce: diff(Figure::JuniorCe),
                junior_ce_tokens,
                junior_top1: diff(Figure::JuniorTop1),
                kl_k3: diff(Figure::KlK3),
                kl_exact: diff(Figure::Kl),
                junior_nll: junior_ce_tokens,
                junior_nll_handoff: diff(Figure::JuniorNllHandoff),
            }
        };
        Ok(Self {
            config: *config,
            sets: ra
                .sets
                .iter()
                .enumerate()
                .map(|(d, s)| SetComparison { name: s.name.clone(), differences: differences(Some(d)) })
                .collect(),
            macro_differences: differences(None),
        })
    }

    /// One table per dataset (and a macro table when there are several): figure, A, B,
    /// B − A with its interval, and what the interval shows. `header` lines come first.
    pub fn to_markdown(&self, header: &[String]) -> String {
        let mut md = String::from("# Comparison: B − A\n\n");
        for line in header {
            let _ = writeln!(md, "{line}  ");
        }
        let percent = 100.0 * self.config.confidence;
        let _ = writeln!(
            md,
            "\nPaired over problems: brackets hold the {percent:.0}% bootstrap interval of B − A ({} resamples \
             of the problems, seed {}, each applied to both runs). \"shown\": B > A or B < A when the \
             interval excludes 0.",
            self.config.bootstrap, self.config.seed
        );
        let mut tables: Vec<(&str, &Differences)> =
            self.sets.iter().map(|s| (s.name.as_str(), &s.differences)).collect();
        if self.sets.len() > 1 {
            tables.push(("macro", &self.macro_differences));
        }
        for (name, differences) in tables {
            let _ = write!(
                md,
                "\n## {name} ({} problems)\n\n| figure | A | B | B − A [{percent:.0}% interval] | shown |\n\
                 |---|---:|---:|---:|---|\n",
                differences.problems
            );
            for (label, decimals, d) in differences.rows() {
                let _ = writeln!(
                    md,
                    "| {label} | {} | {} | {} | {} |",
                    plain(d.a, decimals),
                    plain(d.b, decimals),
                    signed(&d.b_minus_a, decimals),
                    d.shown.as_str()
                );
            }
        }
        md
    }
}

fn plain(x: f64, decimals: usize) -> String {
    if x.is_nan() { "n/a".into() } else { format!("{x:.decimals$}") }
}

/// `+1.2 [-0.4, +2.9]`.
fn signed(e: &Estimate, d: usize) -> String {
    if e.value.is_nan() {
        return "n/a".into();
    }
    format!("{:+.d$} [{:+.d$}, {:+.d$}]", e.value, e.low, e.high)
}

/// The module docs' rule: every difference in problems and settings, in one error.
fn check_comparable(a: &Run, b: &Run) -> Result<()> {
    let (ra, rb) = (&a.report, &b.report);
    let mut problems = Vec::new();
    let names = |r: &Report| r.sets.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    if ra.sets.is_empty() {
        problems.push("A has no datasets".to_string());
    } else if names(ra) != names(rb) {
        problems.push(format!("datasets [{}] in A, [{}] in B", names(ra).join(", "), names(rb).join(", ")));
    }
    let same_datasets = problems.is_empty();
    for (sa, sb) in ra.sets.iter().zip(&rb.sets).filter(|_| same_datasets) {
        let pairs = || sa.problems.iter().zip(&sb.problems);
        if sa.problems.len() != sb.problems.len() {
            problems.push(format!(
                "{}: {} problems in A, {} in B",
                sa.name,
                sa.problems.len(),
                sb.problems.len()
            ));
        } else if let Some((i, (pa, pb))) = pairs().enumerate().find(|(_, (pa, pb))| pa.id != pb.id) {
            problems.push(format!("{}: problem {} is id {} in A, {} in B", sa.name, i + 1, pa.id, pb.id));
        } else {
            let other: Vec<usize> = pairs()
                .filter(|(pa, pb)| matches!((pa.prompt_hash, pb.prompt_hash), (Some(x), Some(y)) if x != y))
                .map(|(pa, _)| pa.id)
                .collect();
            if let Some(first) = other.first() {
                problems.push(format!(
                    "{}: {} of {} problems have other prompts (first: id {first}; another dataset file, \
                     template or tokenizer)",
                    sa.name,
                    other.len(),
                    sa.problems.len()
                ));
            }
        }
    }
    let mut settings = Vec::new();
    let (ca, cb): (&EvalConfig, &EvalConfig) = (&ra.config, &rb.config);
    let mut differ = |name: &str, a: String, b: String| {
        if a != b {
            settings.push(format!("{name} (A {a}, B {b})"));
        }
    };
    differ("n", ca.n.to_string(), cb.n.to_string());
    differ("ks", format!("{:?}", ca.ks), format!("{:?}", cb.ks));
    let sampler = |c: &EvalConfig| {
        let s = c.sampling;
        format!("T {}, top-p {}, top-k {}", s.temperature, s.top_p, s.top_k)
    };
    differ("sampler", sampler(ca), sampler(cb));
    differ("max_new_tokens", ca.max_new_tokens.to_string(), cb.max_new_tokens.to_string());
    differ("max_rounds", ca.max_rounds.to_string(), cb.max_rounds.to_string());
    for (name, va) in &a.recorded {
        if let Some(vb) = b.recorded.get(name)
            && va != vb
        {
            settings.push(format!("{name} (A {}, B {})", brief(va), brief(vb)));
        }
    }
    let mut why = Vec::new();
    if !problems.is_empty() {
        why.push(format!("different problems: {}", problems.join("; ")));
    }
    if !settings.is_empty() {
        why.push(format!("different settings: {}", settings.join(", ")));
    }
    if why.is_empty() { Ok(()) } else { Err(Error::Incomparable(why.join("; "))) }
}

/// A recorded value for an error message: strings unquoted, long ones cut.
fn brief(v: &Value) -> String {
    let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let text = text.escape_debug().to_string();
    if text.chars().count() > 40 { format!("{}…", text.chars().take(40).collect::<String>()) } else { text }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::eval::{ChainStats, Figures, ProblemResult, Throughput};

    /// A problem with varied counts and sums; `shift` makes another senior.
    fn varied(id: usize, shift: usize) -> ProblemResult {
        let tokens = 20 + 7 * id + 3 * shift;
        ProblemResult {
            id,
            n: 8,
            solo_correct: (3 * id + shift) % 9,
            handoff_correct: (5 * id + 3 * shift) % 9,
            solo_tokens: 8 * tokens,
            handoff_tokens: 8 * tokens + id,
            handoff_senior_tokens: 10 + id + shift,
            handoff_junior_nll: 0.3 * (id + 2 * shift) as f64,
            legibility: ChainStats {
                chains: 8,
                chain_ce: 8.0 * (0.5 + 0.1 * ((id + shift) % 5) as f64) + 0.05 * id as f64,
                chain_top1: 8.0 / (2 + (id + shift) % 3) as f64,
                tokens,
                junior_nll: tokens as f64 * (0.5 + 0.1 * ((id + shift) % 5) as f64),
                junior_top1: tokens / (2 + (id + shift) % 3),
                kl_k3: 0.01 * (id * (1 + shift)) as f64,
                kl_exact: 0.02 * (id + shift) as f64,
            },
            prompt_hash: Some(1000 + id as u64),
        }
    }

    fn config() -> EvalConfig {
        EvalConfig { n: 8, ks: vec![1, 2, 8], bootstrap: 50, ..EvalConfig::default() }
    }

    /// Two datasets of 12 and 7 problems.
    fn report(shift: usize) -> Report {
        let set = |name: &str, problems: usize| {
            (name.to_string(), (0..problems).map(|i| varied(i, shift)).collect())
        };
        Report::from_results(&config(), vec![set("easy", 12), set("hard", 7)], Throughput::default()).unwrap()
    }

    fn compare(a: &Report, b: &Report) -> Result<Comparison> {
        Comparison::new(&Run::from(a.clone()), &Run::from(b.clone()), &CompareConfig::default())
    }

    /// Each report figure with its difference.
    fn pairs<'a>(
        fa: &'a Figures,
        fb: &'a Figures,
        d: &'a Differences,
    ) -> Vec<(Estimate, Estimate, &'a Difference)> {
        let mut out = Vec::new();
        for (pa, pb, pd) in [(&fa.solo, &fb.solo, &d.solo), (&fa.handoff, &fb.handoff, &d.handoff)] {
            for ((x, y), z) in pa.iter().zip(pb).zip(pd) {
                assert!(x.k == z.k && y.k == z.k);
                out.push((x.estimate, y.estimate, &z.difference));
            }
        }
        out.extend([
            (fa.tax.points, fb.tax.points, &d.tax_points),
            (fa.legibility.junior_ce, fb.legibility.junior_ce, &d.junior_ce),
            (fa.legibility.junior_ce_tokens, fb.legibility.junior_ce_tokens, &d.junior_ce_tokens),
            (fa.legibility.junior_top1, fb.legibility.junior_top1, &d.junior_top1),
            (fa.drift.kl_k3, fb.drift.kl_k3, &d.kl_k3),
            (fa.drift.kl_exact, fb.drift.kl_exact, &d.kl_exact),
            (fa.drift.junior_nll, fb.drift.junior_nll, &d.junior_nll),
            (fa.drift.junior_nll_handoff, fb.drift.junior_nll_handoff, &d.junior_nll_handoff),
        ]);
        out
    }

    #[test]
    fn the_difference_is_b_s_figure_minus_a_s_to_the_bit() {
        let (a, b) = (report(0), report(1));
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.sets.len(), 2);
        assert_eq!((c.sets[1].differences.problems, c.macro_differences.problems), (7, 19));
        let mut checked = (0, 0);
        let sets = a
            .sets
            .iter()
            .zip(&b.sets)
            .zip(&c.sets)
            .map(|((x, y), z)| (&x.figures, &y.figures, &z.differences));
        for (fa, fb, d) in sets.chain([(&a.macro_figures, &b.macro_figures, &c.macro_differences)]) {
            for (ea, eb, diff) in pairs(fa, fb, d) {
                assert_eq!(diff.a.to_bits(), ea.value.to_bits(), "{diff:?} vs A {ea:?}");
                assert_eq!(diff.b.to_bits(), eb.value.to_bits(), "{diff:?} vs B {eb:?}");
                assert_eq!(diff.b_minus_a.value.to_bits(), (eb.value - ea.value).to_bits());
                assert!(diff.b_minus_a.low <= diff.b_minus_a.high);
                assert_eq!(diff.shown, Shown::of(&diff.b_minus_a));
                checked.0 += 1;
                checked.1 += usize::from(diff.b_minus_a.value != 0.0);
            }
        }
        // 3 tables of 6 pass@k and 8 other figures; most of them moved.
        assert_eq!(checked.0, 3 * 14);
        assert!(checked.1 >= 30, "{checked:?}");
    }

    #[test]
    fn the_paired_interval_is_narrower_than_the_unpaired_one_on_correlated_runs() {
        // 40 problems from unsolved to always solved; B solves one more sample of every
        // 4th problem (9 of them: problem 8 is already solved 8 times of 8).
        let solo = |i: usize, gain: bool| {
            let c = i % 9;
            ProblemResult {
                solo_correct: (c + usize::from(gain && i.is_multiple_of(4))).min(8),
                ..varied(i, 0)
            }
        };
        let config = EvalConfig { bootstrap: 0, ..config() };
        let run = |gain| {
            let problems = (0..40).map(|i| solo(i, gain)).collect();
            Report::from_results(&config, vec![("toy".into(), problems)], Throughput::default()).unwrap()
        };
        let (a, b) = (run(false), run(true));
        let paired = compare(&a, &b).unwrap().sets[0].differences.solo[0].difference;
        assert_eq!(paired.b_minus_a.value, 100.0 * 9.0 / 8.0 / 40.0);
        // Unpaired: A's and B's problems drawn independently (two "datasets" of one Bootstrap).
        let mean = |r: &Report, idx: &[usize]| {
            100.0 * idx.iter().map(|&i| r.sets[0].problems[i].solo_correct as f64 / 8.0).sum::<f64>()
                / idx.len() as f64
        };
        let boot = Bootstrap::new(&[40, 40], 1000, 0, 0.95).unwrap();
        let unpaired = boot.estimate(|s| mean(&b, s[1]) - mean(&a, s[0]));
        assert_eq!(unpaired.value, paired.b_minus_a.value);
        let width = |e: &Estimate| e.high - e.low;
        assert!(
            width(&paired.b_minus_a) < width(&unpaired) / 4.0,
            "paired {:?}, unpaired {unpaired:?}",
            paired.b_minus_a
        );
        // Only the paired interval shows the gain.
        assert_eq!(paired.shown, Shown::BAbove);
        assert_eq!(Shown::of(&unpaired), Shown::Neither);
    }

    #[test]
    fn an_identical_pair_differs_by_zero_with_a_zero_interval() {
        let a = report(2);
        let c = compare(&a, &a).unwrap();
        for d in c.sets.iter().map(|s| &s.differences).chain([&c.macro_differences]) {
            for (_, _, diff) in d.rows() {
                assert_eq!(
                    (diff.b_minus_a.value, diff.b_minus_a.low, diff.b_minus_a.high, diff.shown),
                    (0.0, 0.0, 0.0, Shown::Neither)
                );
                assert_eq!(diff.a, diff.b);
            }
        }
        let md = c.to_markdown(&[]);
        let rows: Vec<&str> =
            md.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| figure")).collect();
        assert_eq!(rows.len(), 3 * 13, "{md}");
        assert!(
            rows.iter().all(|r| r.ends_with("| +0.0 [+0.0, +0.0] | no difference shown |")
                || r.ends_with("| +0.000 [+0.000, +0.000] | no difference shown |")),
            "{md}"
        );
        assert!(md.contains("## macro (19 problems)") && md.contains("| solo pass@8 (%) |"));
    }

    #[test]
    fn runs_over_other_problems_are_refused() {
        let a = report(0);
        let refused = |edit: &dyn Fn(&mut Report)| {
            let mut b = report(1);
            edit(&mut b);
            match compare(&a, &b) {
                Err(Error::Incomparable(why)) => why,
                other => panic!("expected a refusal, got {other:?}"),
            }
        };
        let why = refused(&|b| b.sets[1].name = "other".into());
        assert_eq!(why, "different problems: datasets [easy, hard] in A, [easy, other] in B");
        let why = refused(&|b| {
            b.sets[0].problems.pop();
        });
        assert_eq!(why, "different problems: easy: 12 problems in A, 11 in B");
        let why = refused(&|b| b.sets[1].problems[2].id = 70);
        assert_eq!(why, "different problems: hard: problem 3 is id 2 in A, 70 in B");
        let why = refused(&|b| {
            b.sets[0].problems[4].prompt_hash = Some(1);
            b.sets[0].problems[9].prompt_hash = Some(2);
        });
        assert!(
            why.starts_with("different problems: easy: 2 of 12 problems have other prompts (first: id 4;"),
            "{why}"
        );
        // A prompt hash recorded on one side only is not a difference.
        let mut b = report(1);
        b.sets[0].problems[4].prompt_hash = None;
        assert!(compare(&a, &b).is_ok());
    }

    #[test]
    fn runs_with_other_settings_are_refused_naming_each() {
        let run = |report: Report, grading: &str, junior: &str| {
            Run::from(report)
                .with_recorded("grading", json!(grading))
                .with_recorded("junior fingerprint", json!(junior))
                .with_recorded("template", json!("Q: {question}"))
        };
        let a = run(report(0), "lenient", "00ff");
        let mut other = report(1);
        other.config.n = 4;
        other.config.ks = vec![1, 2];
        other.config.sampling.temperature = 1.0;
        other.config.max_new_tokens = 100;
        other.config.max_rounds = 3;
        let b = run(other, "boxed", "0100");
        let err = Comparison::new(&a, &b, &CompareConfig::default()).unwrap_err();
        assert!(matches!(err, Error::Incomparable(_)));
        assert_eq!(
            err.to_string(),
            "not comparable: different settings: n (A 8, B 4), ks (A [1, 2, 8], B [1, 2]), \
             sampler (A T 0.7, top-p 0.8, top-k 20, B T 1, top-p 0.8, top-k 20), \
             max_new_tokens (A 3000, B 100), max_rounds (A 150, B 3), grading (A lenient, B boxed), \
             junior fingerprint (A 00ff, B 0100)"
        );
        // Free to differ: seeds, speed settings, the report's bootstrap; a setting one side
        // did not record.
        let mut other = report(1);
        other.config.seed = 5;
        other.config.bootstrap = 7;
        other.config.batch_problems = 3;
        other.config.logits_budget = 10;
        let b = Run::from(other).with_recorded("grading", json!("lenient"));
        assert!(Comparison::new(&a, &b, &CompareConfig::default()).is_ok());
        assert!(
            Comparison::new(&a, &b, &CompareConfig { bootstrap: 0, ..CompareConfig::default() }).is_err()
        );
    }

    #[test]
    fn an_eval_json_reads_back_with_its_recorded_settings() {
        let dir = std::env::temp_dir().join(format!("trlvr-compare-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Solo pass@1 0 in a set: the tax ratio is NaN, which JSON writes as null.
        let unsolved: Vec<ProblemResult> =
            (0..3).map(|i| ProblemResult { solo_correct: 0, handoff_correct: 0, ..varied(i, 0) }).collect();
        let report =
            Report::from_results(&config(), vec![("zero".into(), unsolved)], Throughput::default()).unwrap();
        assert!(report.macro_figures.tax.ratio.value.is_nan());
        let mut json = serde_json::to_value(&report).unwrap();
        json["grading"] = json!("boxed");
        json["template"] = json!("Q: {question}");
        json["models"] = json!({ "senior": { "path": "/m/senior", "fingerprint": "aa" },
                                 "junior": { "path": "/m/junior", "fingerprint": "bb" } });
        json["wall_seconds"] = json!(1.5);
        std::fs::write(dir.join("eval.json"), serde_json::to_string_pretty(&json).unwrap()).unwrap();
        let run = Run::read(&dir).unwrap();
        assert!(run.report.macro_figures.tax.ratio.value.is_nan());
        // serde_json reads floats back to within an ulp (exactly with its float_roundtrip
        // feature, not enabled): counts exactly, sums and figures to 1e-12.
        let (back, sent) = (&run.report.sets[0], &report.sets[0]);
        for (p, q) in back.problems.iter().zip(&sent.problems) {
            assert_eq!(
                (p.id, p.n, p.solo_correct, p.legibility.tokens),
                (q.id, q.n, q.solo_correct, q.legibility.tokens)
            );
            assert!((p.legibility.junior_nll - q.legibility.junior_nll).abs() < 1e-12);
        }
        let ce = (back.figures.legibility.junior_ce, sent.figures.legibility.junior_ce);
        assert!((ce.0.value - ce.1.value).abs() < 1e-12 && (ce.0.high - ce.1.high).abs() < 1e-12);
        assert_eq!(run.report.sets[0].problems[2].prompt_hash, Some(1002));
        let recorded: Vec<(&str, &Value)> = run.recorded.iter().map(|(k, v)| (k.as_str(), v)).collect();
        assert_eq!(
            recorded,
            [
                ("grading", &json!("boxed")),
                ("junior fingerprint", &json!("bb")),
                ("template", &json!("Q: {question}"))
            ]
        );
        assert_eq!(run.senior.as_deref(), Some("/m/senior"));
        // A report from before prompt hashes were kept reads with none.
        json["sets"][0]["problems"][0].as_object_mut().unwrap().remove("prompt_hash");
        let file = dir.join("old.json");
        std::fs::write(&file, json.to_string()).unwrap();
        assert_eq!(Run::read(&file).unwrap().report.sets[0].problems[0].prompt_hash, None);
        // Not a report: the error names the file.
        std::fs::write(&file, "{\"sets\": 3}").unwrap();
        let err = Run::read(&file).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: not an evaluation report", file.display())), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shown_reads_the_interval() {
        let e = |value, low, high| Estimate { value, low, high };
        assert_eq!(Shown::of(&e(1.0, 0.5, 2.0)), Shown::BAbove);
        assert_eq!(Shown::of(&e(-1.0, -2.0, -0.5)), Shown::BBelow);
        assert_eq!(Shown::of(&e(1.0, 0.0, 2.0)), Shown::Neither);
        assert_eq!(Shown::of(&e(0.0, -1.0, 2.0)), Shown::Neither);
        assert_eq!(Shown::of(&e(f64::NAN, f64::NAN, f64::NAN)), Shown::Neither);
        assert_eq!(serde_json::to_value(Shown::BBelow).unwrap(), json!("B < A"));
    }
}
