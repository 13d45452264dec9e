//! `report.md`: the table (mean and spread over seeds), the positive control's verdict,
//! the comparisons the paper makes (paired bootstrap over problems, seeds pooled) and
//! which of its claims this run reproduces. Every statement is computed from the numbers.
//!
//! Long, on purpose: the verdict rules and the sentences that state them sit side by side,
//! so that one can be checked against the other; a fifth of the file is their tests.

use std::fmt::Write as _;

use serde::Serialize;
use trlvr::eval::{Bootstrap, Estimate, ProblemResult, newcombe};

use super::arms::Arm;

/// TRLVR's and GRPO's solo pass@1 count as equivalent (claim 1) when the interval of
/// their difference lies within ± this many points.
pub const EQUIVALENCE_POINTS: f64 = 5.0;
/// A tax counts as near zero (claim 2) when its interval lies below this many points.
pub const NEAR_ZERO_TAX_POINTS: f64 = 5.0;
/// The specificity control (TRLVR with a shorthand-literate junior) keeps GRPO's
/// shorthand when the interval of their difference in shorthand share lies within ± this
/// many points.
pub const SHORTHAND_POINTS: f64 = 10.0;
/// The positive control's tax must reach this many points.
pub const CONTROL_TAX_POINTS: f64 = 10.0;
/// ... and its junior CE this multiple of the self-paired CE.
pub const CONTROL_CE_RATIO: f64 = 1.5;

/// The row figures of one evaluated model.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Row {
    /// Solo pass@1, %.
    pub solo: Estimate,
    /// Handoff pass@1, %.
    pub handoff: Estimate,
    /// Solo − handoff, points.
    pub tax: Estimate,
    /// Junior CE on the senior's solo chains, nats/token.
    pub junior_ce: Estimate,
    /// Junior top-1 on them, %.
    pub junior_top1: Estimate,
    /// KL(senior ‖ junior) per token, exact, nats.
    pub drift: Estimate,
    /// Shorthand share of the senior's solo steps, %.
    pub shorthand: Estimate,
}

impl Row {
    /// From an evaluation's macro figures and shorthand share.
    pub fn of(report: &trlvr::eval::Report, shorthand: f64) -> Self {
        let f = &report.macro_figures;
        let s = 100.0 * shorthand;
        Row {
            solo: f.solo[0].estimate,
            handoff: f.handoff[0].estimate,
            tax: f.tax.points,
            junior_ce: f.legibility.junior_ce,
            junior_top1: f.legibility.junior_top1,
            drift: f.drift.kl_exact,
            shorthand: Estimate { value: s, low: s, high: s },
        }
    }

    fn cells(&self) -> [Estimate; 7] {
        [self.solo, self.handoff, self.tax, self.junior_ce, self.junior_top1, self.drift, self.shorthand]
    }

    /// Mean over seeds, with the seeds' minimum and maximum as the spread.
    pub fn over_seeds(rows: &[Row]) -> Row {
        let cell = |k: usize| {
            let v: Vec<f64> = rows.iter().map(|r| r.cells()[k].value).collect();
            Estimate {
                value: v.iter().sum::<f64>() / v.len().max(1) as f64,
                low: v.iter().copied().fold(f64::INFINITY, f64::min),
                high: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }
        };
        Row {
            solo: cell(0),
            handoff: cell(1),
            tax: cell(2),
            junior_ce: cell(3),
            junior_top1: cell(4),
            drift: cell(5),
            shorthand: cell(6),
        }
    }
}

/// A paired comparison `a − b` over the same problems.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize)]
pub struct Comparisons {
    /// Solo pass@1, points.
    pub solo: Estimate,
    /// Tax, points.
    pub tax: Estimate,
    /// Junior CE, nats/token.
    pub junior_ce: Estimate,
    /// Exact KL per token, nats.
    pub drift: Estimate,
    /// Shorthand share of the senior's solo steps, points.
    pub shorthand: Estimate,
    /// `a`'s own tax, points (the "near zero" of claim 2).
    pub tax_a: Estimate,
}

/// One evaluated run as the comparisons read it.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// Per-problem results, in the evaluation's order.
    pub problems: &'a [ProblemResult],
    /// (plain, shorthand) steps of the solo samples, per problem.
    pub notations: &'a [(usize, usize)],
}

/// `a − b` for each figure, from each arm's runs (one per seed) over the same problems in
/// the same order. The bootstrap is hierarchical: each resample draws the problems (paired
/// across the arms) and, independently for each arm, its seeds, so the intervals carry the
/// spread between seeds as well as between problems.
///
/// # Errors
/// [`trlvr::Error::Config`] when an arm has no run or the runs' problems differ in number.
pub fn compare(a: &[Run<'_>], b: &[Run<'_>], seed: u64) -> trlvr::Result<Comparisons> {
    let problems = a.first().map_or(0, |r| r.problems.len());
    if a.is_empty()
        || b.is_empty()
        || a.iter().chain(b).any(|r| r.problems.len() != problems || r.notations.len() != problems)
    {
        return Err(trlvr::Error::Config(
            "compare needs runs on each side, all over the same problems".into(),
        ));
    }
    let boot = Bootstrap::new(&[problems, a.len(), b.len()], 1000, seed, 0.95)?;
    // A figure of one arm on resampled seeds and problems: the ratio of two sums.
    let ratio =
        |runs: &[Run<'_>], seeds: &[usize], idx: &[usize], f: &dyn Fn(&Run<'_>, usize) -> (f64, f64)| {
            let (mut num, mut den) = (0.0, 0.0);
            for &s in seeds {
                for &i in idx {
                    let (x, y) = f(&runs[s], i);
                    num += x;
                    den += y;
                }
            }
            num / den
        };
    let solo = |r: &Run<'_>, i: usize| (r.problems[i].solo_correct as f64 / r.problems[i].n as f64, 0.01);
    let handoff =
        |r: &Run<'_>, i: usize| (r.problems[i].handoff_correct as f64 / r.problems[i].n as f64, 0.01);
    // Junior CE as the evaluation reports it (the mean of per-chain means); drift per token.
    let ce =
        |r: &Run<'_>, i: usize| (r.problems[i].legibility.chain_ce, r.problems[i].legibility.chains as f64);
    let kl =
        |r: &Run<'_>, i: usize| (r.problems[i].legibility.kl_exact, r.problems[i].legibility.tokens as f64);
    let short = |r: &Run<'_>, i: usize| {
        let (plain, short) = r.notations[i];
        (short as f64, 0.01 * (plain + short) as f64)
    };
    let diff = |f: &dyn Fn(&Run<'_>, usize) -> (f64, f64)| {
        boot.estimate(|s| ratio(a, s[1], s[0], f) - ratio(b, s[2], s[0], f))
    };
    let tax = |runs: &[Run<'_>], seeds: &[usize], idx: &[usize]| {
        ratio(runs, seeds, idx, &solo) - ratio(runs, seeds, idx, &handoff)
    };
    // (successes, trials) pooled over seeds and problems.
    let counts = |runs: &[Run<'_>], handoff: bool| {
        runs.iter().flat_map(|r| r.problems.iter()).fold((0.0, 0.0), |(c, n), p| {
            (c + (if handoff { p.handoff_correct } else { p.solo_correct }) as f64, n + p.n as f64)
        })
    };
    // A percentile bootstrap of identical values (every answer right, say) is a point, not
    // evidence: Newcombe's score interval of the pooled counts is the least width allowed.
    let widen = |e: Estimate, (low, high): (f64, f64)| Estimate {
        value: e.value,
        low: e.low.min(100.0 * low),
        high: e.high.max(100.0 * high),
    };
    Ok(Comparisons {
        solo: widen(diff(&solo), newcombe(counts(a, false), counts(b, false))),
        tax: boot.estimate(|s| tax(a, s[1], s[0]) - tax(b, s[2], s[0])),
        junior_ce: diff(&ce),
        drift: diff(&kl),
        shorthand: diff(&short),
        tax_a: widen(boot.estimate(|s| tax(a, s[1], s[0])), newcombe(counts(a, false), counts(a, true))),
    })
}

/// Three-way reading of an interval of a difference.
fn sign(e: &Estimate) -> &'static str {
    if e.high < 0.0 {
        "below"
    } else if e.low > 0.0 {
        "above"
    } else {
        "not distinguishable from"
    }
}

/// What the intervals show about a claim: an interval that straddles the claim's threshold
/// shows nothing either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every interval the claim needs lies on its side of the threshold.
    Shown,
    /// An interval lies wholly on the other side.
    Contradicted,
    /// Neither: an interval straddles its threshold.
    NotShown,
}

impl Outcome {
    /// `x < threshold`, read off `x`'s interval.
    fn below(x: &Estimate, threshold: f64) -> Self {
        if x.high < threshold {
            Self::Shown
        } else if x.low > threshold {
            Self::Contradicted
        } else {
            Self::NotShown
        }
    }

    /// `x > threshold`, read off `x`'s interval.
    fn above(x: &Estimate, threshold: f64) -> Self {
        if x.low > threshold {
            Self::Shown
        } else if x.high < threshold {
            Self::Contradicted
        } else {
            Self::NotShown
        }
    }

    /// `|x| < margin`: equivalence, both ends of the interval inside the margin.
    fn within(x: &Estimate, margin: f64) -> Self {
        Self::all(&[Self::below(x, margin), Self::above(x, -margin)])
    }

    /// All of `parts`: contradicted if one is, shown if all are.
    fn all(parts: &[Self]) -> Self {
        if parts.contains(&Self::Contradicted) {
            Self::Contradicted
        } else if parts.iter().all(|p| *p == Self::Shown) {
            Self::Shown
        } else {
            Self::NotShown
        }
    }

    fn word(self) -> &'static str {
        match self {
            Self::Shown => "shown",
            Self::Contradicted => "contradicted",
            Self::NotShown => "not shown",
        }
    }
}

/// The verdicts the report states.
#[derive(Debug, Clone, Serialize)]
pub struct Verdicts {
    /// The four claims of method.md §6, in order.
    pub claims: [Outcome; 4],
    /// Per KL-Reg setting (β, estimator): whether it reaches TRLVR's combination (its tax
    /// within `NEAR_ZERO_TAX_POINTS` of TRLVR's, its solo no more than `EQUIVALENCE_POINTS`
    /// below).
    pub klreg_reaches: Vec<(String, Outcome)>,
    /// The specificity control: TRLVR with a literate junior keeps GRPO's shorthand share
    /// (within ±`SHORTHAND_POINTS`); not shown when it was not run.
    pub specificity: Outcome,
}

/// Reads the comparisons: TRLVR − GRPO, and KL-Reg − TRLVR at each setting run.
///
/// 1. TRLVR ≈ GRPO solo: the difference lies within ±`EQUIVALENCE_POINTS`.
/// 2. Near-zero tax: TRLVR's tax is below GRPO's and below `NEAR_ZERO_TAX_POINTS`.
/// 3. Legibility: TRLVR's junior CE and drift are both below GRPO's.
/// 4. KL-Reg does not reproduce the combination: no β reaches TRLVR's tax at TRLVR's
///    solo accuracy (contradicted if one does; not shown without a β, or if one cannot
///    be told apart).
///
/// And the specificity control, literate-junior TRLVR − GRPO: shorthand shares within
/// ±`SHORTHAND_POINTS`.
pub fn verdicts(
    trlvr_vs_grpo: &Comparisons,
    klreg_vs_trlvr: &[(String, Comparisons)],
    literate_vs_grpo: Option<&Comparisons>,
) -> Verdicts {
    let t = trlvr_vs_grpo;
    let klreg_reaches: Vec<(String, Outcome)> = klreg_vs_trlvr
        .iter()
        .map(|(setting, k)| {
            let reach = Outcome::all(&[
                Outcome::below(&k.tax, NEAR_ZERO_TAX_POINTS),
                Outcome::above(&k.solo, -EQUIVALENCE_POINTS),
            ]);
            (setting.clone(), reach)
        })
        .collect();
    let reaches: Vec<Outcome> = klreg_reaches.iter().map(|(_, o)| *o).collect();
    let claim4 = if reaches.contains(&Outcome::Shown) {
        Outcome::Contradicted
    } else if !reaches.is_empty() && reaches.iter().all(|o| *o == Outcome::Contradicted) {
        Outcome::Shown
    } else {
        Outcome::NotShown
    };
    Verdicts {
        claims: [
            Outcome::within(&t.solo, EQUIVALENCE_POINTS),
            Outcome::all(&[Outcome::below(&t.tax, 0.0), Outcome::below(&t.tax_a, NEAR_ZERO_TAX_POINTS)]),
            Outcome::all(&[Outcome::below(&t.junior_ce, 0.0), Outcome::below(&t.drift, 0.0)]),
            claim4,
        ],
        klreg_reaches,
        specificity: literate_vs_grpo
            .map_or(Outcome::NotShown, |l| Outcome::within(&l.shorthand, SHORTHAND_POINTS)),
    }
}

/// The claims of method.md §6, in order, as this report tests them.
pub const CLAIMS: [&str; 4] = [
    "TRLVR ≈ GRPO on solo accuracy (within ±5 points)",
    "TRLVR ≫ GRPO on handoff accuracy (tax below GRPO's and below 5 points)",
    "TRLVR's chains are more legible (lower junior CE) and drift less",
    "KL-Reg does not reproduce the combination (no β reaches TRLVR's tax at its solo accuracy)",
];

/// The sentence saying which claims this run shows, contradicts, or cannot tell.
pub fn claims_sentence(outcomes: [Outcome; 4]) -> String {
    let pick = |want: Outcome| -> Vec<&str> {
        CLAIMS.iter().zip(outcomes).filter(|&(_, o)| o == want).map(|(c, _)| *c).collect()
    };
    let shown = pick(Outcome::Shown);
    let mut text = format!("This run shows {} of the four claims", shown.len());
    if !shown.is_empty() {
        text += &format!(": {}", shown.join("; "));
    }
    text.push('.');
    for (outcome, lead) in [
        (Outcome::Contradicted, "It contradicts"),
        (Outcome::NotShown, "It cannot tell (an interval straddles the threshold)"),
    ] {
        let those = pick(outcome);
        if !those.is_empty() {
            text += &format!(" {lead}: {}.", those.join("; "));
        }
    }
    text + "\n"
}

/// One seed of an arm: what it gave (`T`: an evaluation or a table row) and its cost.
#[derive(Debug, Clone, Serialize)]
pub struct SeedRun<T> {
    /// The seed.
    pub seed: u64,
    /// Its result.
    pub result: T,
    /// Training steps taken.
    pub steps: usize,
    /// Rollout tokens spent.
    pub tokens: usize,
    /// Wall time of training, probes included.
    pub seconds: f64,
}

impl<T> SeedRun<T> {
    /// The same seed and costs with the result mapped by `f`.
    pub fn map<U>(&self, f: impl FnOnce(&T) -> U) -> SeedRun<U> {
        SeedRun {
            seed: self.seed,
            result: f(&self.result),
            steps: self.steps,
            tokens: self.tokens,
            seconds: self.seconds,
        }
    }
}

/// Each arm's seeds.
pub type ArmRuns<T> = Vec<(Arm, Vec<SeedRun<T>>)>;

/// One KL-Reg setting of the frontier.
#[derive(Debug, Clone, Serialize)]
pub struct FrontierPoint {
    /// β and estimator, in words.
    pub setting: String,
    /// Seeds run.
    pub seeds: usize,
    /// Its figures (mean over seeds).
    pub row: Row,
    /// Mean share of senior tokens at k3's clamp during training.
    pub clamped: Option<f64>,
    /// KL-Reg − TRLVR.
    pub vs_trlvr: Comparisons,
}

/// One partner of the specificity sweep: how well it reads shorthand, and the notation
/// TRLVR learned with it.
#[derive(Debug, Clone, Serialize)]
pub struct LiteracyPoint {
    /// The partner, in words.
    pub partner: String,
    /// The shorthand-only control's handoff pass@1 with it, %.
    pub literacy: Estimate,
    /// Seeds of the TRLVR runs.
    pub seeds: usize,
    /// TRLVR's figures with it (evaluated with the weak junior, as every arm).
    pub row: Row,
}

/// Everything the Markdown needs.
#[derive(Debug)]
pub struct ReportInput<'a> {
    /// (label, row) for base, control, control self-paired, then each arm's mean over seeds.
    pub rows: Vec<(String, Row)>,
    /// Per arm, per seed.
    pub runs: ArmRuns<Row>,
    /// GRPO − base: whether RL raised solo accuracy at all (the task is not saturated).
    pub grpo_vs_base: Comparisons,
    /// TRLVR − GRPO.
    pub trlvr_vs_grpo: Comparisons,
    /// KL-Reg − GRPO.
    pub klreg_vs_grpo: Comparisons,
    /// Literate-junior TRLVR − GRPO (the specificity control), when run.
    pub literate_vs_grpo: Option<Comparisons>,
    /// The specificity sweep over the partner's literacy.
    pub literacy: Vec<LiteracyPoint>,
    /// KL-Reg's frontier: the arm above, then the sweep over β and estimators.
    pub frontier: Vec<FrontierPoint>,
    /// The verdicts.
    pub verdicts: &'a Verdicts,
    /// Whether the positive control passed, and why not.
    pub control: (bool, String),
    /// Settings lines.
    pub settings: Vec<String>,
    /// Wall time lines.
    pub timing: Vec<String>,
    /// Plot files (relative names) and their captions.
    pub plots: Vec<(String, String)>,
}

/// `e` at `d` decimals, with no "-0.0" for a value that rounds to zero.
fn show(e: &Estimate, d: usize) -> String {
    let scale = 10f64.powi(d as i32);
    let clean = |x: f64| {
        let r = (x * scale).round() / scale;
        if r == 0.0 { 0.0 } else { r }
    };
    Estimate { value: clean(e.value), low: clean(e.low), high: clean(e.high) }.show(d)
}

/// The Markdown report, section by section.
pub fn markdown(input: &ReportInput<'_>) -> String {
    let mut md = String::from("# trlvr demo: GRPO, TRLVR and KL-Reg in miniature\n\n");
    md += "Task: running sums, each step one paragraph, in a plain notation both models know or a \
           shorthand only the senior's base learned; responses are cut at a token cap that plain chains \
           of the longest sums overrun (shorthand buys accuracy there); reward = 1 − cost × tokens for a \
           correct answer, 0 otherwise. The junior is a smaller model trained on the plain notation only. \
           Evaluation problems are held out from every training set by a hash split.\n\n";
    table(&mut md, &input.rows);
    positive_control(&mut md, &input.control);
    comparisons(&mut md, input);
    specificity(&mut md, input);
    frontier(&mut md, &input.frontier, input.verdicts);
    claims(&mut md, input.verdicts);
    runs(&mut md, &input.runs);
    plots(&mut md, &input.plots);
    list(&mut md, "Settings", &input.settings);
    list(&mut md, "Wall time", &input.timing);
    md
}

/// The table: one row per model.
fn table(md: &mut String, rows: &[(String, Row)]) {
    *md += "## Table\n\n";
    *md += "Base and controls: value [95% bootstrap interval over problems]. Arms: mean over seeds \
           [min, max over seeds].\n\n";
    *md += "| model | solo pass@1 (%) | handoff pass@1 (%) | tax (points) | junior CE (nats) | junior top-1 (%) | drift KL (nats) | shorthand (%) |\n";
    *md += "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (label, r) in rows {
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {} | {} | {} | {} | {} |",
            show(&r.solo, 1),
            show(&r.handoff, 1),
            show(&r.tax, 1),
            show(&r.junior_ce, 3),
            show(&r.junior_top1, 1),
            show(&r.drift, 3),
            if r.shorthand.low == r.shorthand.high {
                format!("{:.1}", r.shorthand.value)
            } else {
                show(&r.shorthand, 1)
            }
        );
    }
}

/// Whether the positive control passed, and why.
fn positive_control(md: &mut String, (ok, why): &(bool, String)) {
    *md += "\n## Positive control\n\n";
    let _ = writeln!(
        md,
        "{} {why}\n",
        if *ok { "**Passed.**" } else { "**FAILED: the evaluation is blind, so the demo fails.**" }
    );
}

/// The paired differences, then what they say about claims 1-3.
fn comparisons(md: &mut String, input: &ReportInput<'_>) {
    *md += "## Comparisons (95% intervals of a hierarchical bootstrap: problems resampled and paired \
           across the arms, each arm's seeds resampled on their own)\n\n";
    *md += "| difference | solo pass@1 (points) | tax (points) | junior CE (nats) | drift KL (nats) | shorthand (points) |\n|---|---:|---:|---:|---:|---:|\n";
    let mut compared = vec![
        ("GRPO − base", &input.grpo_vs_base),
        ("TRLVR − GRPO", &input.trlvr_vs_grpo),
        ("KL-Reg − GRPO", &input.klreg_vs_grpo),
    ];
    if let Some(l) = &input.literate_vs_grpo {
        compared.push(("TRLVR, literate junior − GRPO", l));
    }
    for (label, c) in compared {
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {} | {} | {} |",
            show(&c.solo, 1),
            show(&c.tax, 1),
            show(&c.junior_ce, 3),
            show(&c.drift, 3),
            show(&c.shorthand, 1)
        );
    }
    let t = &input.trlvr_vs_grpo;
    let v = input.verdicts;
    let g = &input.grpo_vs_base;
    let _ = writeln!(
        md,
        "\n- GRPO's solo accuracy minus the base's: {} points: RL {} the base's accuracy{}.",
        show(&g.solo, 1),
        match Outcome::above(&g.solo, 0.0) {
            Outcome::Shown => "raised",
            Outcome::Contradicted => "lowered",
            Outcome::NotShown => "is not shown to change",
        },
        if g.solo.low > 0.0 { " (so the solo comparison below is not made on a saturated task)" } else { "" }
    );
    let _ = writeln!(
        md,
        "- TRLVR's solo accuracy minus GRPO's: {} points; equivalence within ±{EQUIVALENCE_POINTS} \
         is {} (the interval is widened to Newcombe's score bounds where the bootstrap collapses, \
         as it does when every answer is right).\n- TRLVR's tax is {} GRPO's ({} points); its own \
         tax is {} points, near zero (below {NEAR_ZERO_TAX_POINTS}) {}.\n- TRLVR's junior CE is {} \
         GRPO's ({} nats); its drift is {} GRPO's ({} nats).",
        show(&t.solo, 1),
        v.claims[0].word(),
        sign(&t.tax),
        show(&t.tax, 1),
        show(&t.tax_a, 1),
        Outcome::below(&t.tax_a, NEAR_ZERO_TAX_POINTS).word(),
        sign(&t.junior_ce),
        show(&t.junior_ce, 3),
        sign(&t.drift),
        show(&t.drift, 3),
    );
}

/// The specificity control, and the sweep over the partner's literacy.
fn specificity(md: &mut String, input: &ReportInput<'_>) {
    *md += "\n## Specificity control\n\n";
    let _ = writeln!(
        md,
        "TRLVR paired in training with a junior that reads shorthand (the frozen base: the paper's \
         self-paired setting) should keep the shorthand GRPO learns, if TRLVR's choice of notation \
         is a trade-off it learns from its partner and not a wall the task builds. {}",
        match &input.literate_vs_grpo {
            Some(l) => format!(
                "Its shorthand share minus GRPO's: {} points; keeping GRPO's share (within ±{SHORTHAND_POINTS}) \
                 is {}.",
                show(&l.shorthand, 1),
                input.verdicts.specificity.word()
            ),
            None => "Not run.".into(),
        }
    );
    if input.literacy.is_empty() {
        return;
    }
    *md += "\nThe sweep: TRLVR trained with partners that read shorthand to growing degrees (literacy: the \
           shorthand-only control's handoff pass@1 with the partner, %), each TRLVR senior evaluated as \
           the arms are (with the weak junior). Where the shorthand share jumps is where TRLVR's choice \
           flips.\n\n| TRLVR's partner in training | literacy (%) | seeds | shorthand (%) | solo (%) | tax (points) |\n\
           |---|---:|---:|---:|---:|---:|\n";
    for p in &input.literacy {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} |",
            p.partner,
            show(&p.literacy, 1),
            p.seeds,
            p.row.shorthand.value,
            p.row.solo.value,
            p.row.tax.value
        );
    }
}

/// KL-Reg at each setting against TRLVR, with whether it reaches TRLVR's combination.
fn frontier(md: &mut String, points: &[FrontierPoint], v: &Verdicts) {
    *md += "\n## KL-Reg's frontier\n\n";
    let _ = writeln!(
        md,
        "KL-Reg at each β and estimator (`k3`: the paper's, clamped at 10 nats per token; `k3+`: \
         the same value with k2's gradient, which does not vanish at the clamp), against TRLVR: \
         a setting reaches TRLVR's combination when its tax is within {NEAR_ZERO_TAX_POINTS} points \
         of TRLVR's and its solo accuracy at most {EQUIVALENCE_POINTS} points below (differences \
         with 95% intervals, paired over problems).\n\n| KL-Reg | seeds | solo (%) | tax (points) | \
         shorthand (%) | junior CE (nats) | tokens at k3's clamp (%) | tax − TRLVR's | solo − TRLVR's | \
         reaches TRLVR |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for (point, (_, reach)) in points.iter().zip(&v.klreg_reaches) {
        let r = &point.row;
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.3} | {} | {} | {} | {} |",
            point.setting,
            point.seeds,
            r.solo.value,
            r.tax.value,
            r.shorthand.value,
            r.junior_ce.value,
            point.clamped.map_or_else(|| "n/a".into(), |c| format!("{:.1}", 100.0 * c)),
            show(&point.vs_trlvr.tax, 1),
            show(&point.vs_trlvr.solo, 1),
            match reach {
                Outcome::Shown => "yes",
                Outcome::Contradicted => "no",
                Outcome::NotShown => "cannot tell",
            }
        );
    }
}

/// Which of the paper's claims this run shows, and how that is read.
fn claims(md: &mut String, v: &Verdicts) {
    *md += "\n## The paper's claims (method.md §6)\n\n";
    *md += &claims_sentence(v.claims);
    let _ = writeln!(
        md,
        "\nEach claim is read off the intervals above, not written in advance: it is shown when \
         every interval it needs lies on its side of the threshold, contradicted when one lies \
         wholly on the other side, and otherwise not shown. Claim 4 is judged over the {} KL-Reg \
         settings of the frontier; it holds only if none reaches TRLVR's tax at TRLVR's solo accuracy.",
        v.klreg_reaches.len(),
    );
}

/// Every seed of every arm, with its cost.
fn runs(md: &mut String, arms: &ArmRuns<Row>) {
    *md += "\n## Runs\n\n| arm | seed | steps | rollout tokens | seconds | solo | tax | junior CE | shorthand (%) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (arm, seeds) in arms {
        for SeedRun { seed, result: r, steps, tokens, seconds } in seeds {
            let _ = writeln!(
                md,
                "| {} | {seed} | {steps} | {tokens} | {seconds:.0} | {:.1} | {:.1} | {:.3} | {:.1} |",
                arm.name(),
                r.solo.value,
                r.tax.value,
                r.junior_ce.value,
                r.shorthand.value
            );
        }
    }
}

/// The plots over training, with their captions.
fn plots(md: &mut String, files: &[(String, String)]) {
    if files.is_empty() {
        return;
    }
    *md += "\n## Over training\n\n";
    for (file, caption) in files {
        let _ = writeln!(md, "![{file}]({file})\n\n{caption}\n");
    }
}

/// A section of bullet lines.
fn list(md: &mut String, title: &str, lines: &[String]) {
    let _ = write!(md, "\n## {title}\n\n");
    for line in lines {
        let _ = writeln!(md, "- {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(value: f64, low: f64, high: f64) -> Estimate {
        Estimate { value, low, high }
    }

    /// TRLVR − GRPO: solo, tax, CE (drift the same), TRLVR's own tax.
    fn comparisons(solo: Estimate, tax: Estimate, ce: Estimate, tax_a: Estimate) -> Comparisons {
        Comparisons { solo, tax, junior_ce: ce, drift: ce, shorthand: e(0.0, -1.0, 1.0), tax_a }
    }

    /// A TRLVR that shows claims 1-3, and a KL-Reg − TRLVR that fails to reach it.
    fn shown() -> (Comparisons, Comparisons) {
        let trlvr =
            comparisons(e(-1.0, -4.0, 2.0), e(-30.0, -40.0, -20.0), e(-2.0, -3.0, -1.0), e(1.0, 0.0, 3.0));
        let klreg =
            comparisons(e(-1.0, -3.0, 1.0), e(25.0, 15.0, 35.0), e(2.0, 1.0, 3.0), e(26.0, 16.0, 36.0));
        (trlvr, klreg)
    }

    #[test]
    fn every_claim_is_shown_only_when_its_intervals_say_so() {
        use Outcome::{Contradicted, NotShown, Shown};
        let (trlvr, klreg) = shown();
        let one = |k: Comparisons| [("β = 0.05, k3".to_string(), k)];
        assert_eq!(verdicts(&trlvr, &one(klreg), None).claims, [Shown; 4]);
        let with = |t: Comparisons, k: Comparisons| verdicts(&t, &one(k), None).claims;
        // Claim 1, equivalence: an end past ±5 is not shown; the whole interval past it contradicts.
        let c = |solo| with(Comparisons { solo, ..trlvr }, klreg)[0];
        assert_eq!(
            [c(e(-3.0, -6.0, 0.0)), c(e(3.0, 0.5, 5.5)), c(e(-9.0, -12.0, -6.0))],
            [NotShown, NotShown, Contradicted]
        );
        // A null difference read off a degenerate interval is still shown only inside the margin.
        assert_eq!(c(e(0.0, 0.0, 0.0)), Shown);
        // Claim 2: a tax difference straddling zero is not shown, even with a low own tax;
        // an own tax reaching past 5 points is not near zero.
        let c = |tax, tax_a| with(Comparisons { tax, tax_a, ..trlvr }, klreg)[1];
        assert_eq!(c(e(-3.0, -9.0, 2.0), e(1.0, 0.0, 3.0)), NotShown);
        assert_eq!(c(e(-30.0, -40.0, -20.0), e(4.0, 2.0, 7.0)), NotShown);
        assert_eq!(c(e(-30.0, -40.0, -20.0), e(9.0, 6.0, 12.0)), Contradicted);
        assert_eq!(c(e(3.0, 1.0, 5.0), e(1.0, 0.0, 3.0)), Contradicted);
        // Claim 3 needs both CE and drift below GRPO's.
        let c = |junior_ce, drift| with(Comparisons { junior_ce, drift, ..trlvr }, klreg)[2];
        assert_eq!(c(e(-2.0, -3.0, -1.0), e(-0.1, -0.3, 0.1)), NotShown);
        assert_eq!(c(e(-2.0, -3.0, -1.0), e(0.3, 0.1, 0.5)), Contradicted);
        // Claim 4, over the β sweep: one β that reaches TRLVR contradicts it; one that
        // cannot be told apart leaves it not shown; no β at all shows nothing.
        let reaching = comparisons(e(0.0, -2.0, 2.0), e(1.0, -1.0, 3.0), e(0.0, -1.0, 1.0), e(1.0, 0.0, 3.0));
        let unclear = comparisons(e(0.0, -2.0, 2.0), e(4.0, 1.0, 8.0), e(0.0, -1.0, 1.0), e(5.0, 2.0, 9.0));
        let sweep =
            |a: Comparisons, b: Comparisons| [("β = 0.01".to_string(), a), ("β = 0.1".to_string(), b)];
        let four = |sweep: &[(String, Comparisons)]| verdicts(&trlvr, sweep, None).claims[3];
        assert_eq!(four(&sweep(klreg, klreg)), Shown);
        assert_eq!(four(&sweep(klreg, reaching)), Contradicted);
        assert_eq!(four(&sweep(klreg, unclear)), NotShown);
        assert_eq!(four(&[]), NotShown);
        let v = verdicts(&trlvr, &sweep(klreg, reaching), None);
        assert_eq!(v.klreg_reaches, [("β = 0.01".to_string(), Contradicted), ("β = 0.1".to_string(), Shown)]);
        // The specificity control: the literate junior's TRLVR keeps GRPO's shorthand only
        // when the whole interval lies within ±10 points; not run is not shown.
        let spec =
            |shorthand| verdicts(&trlvr, &one(klreg), Some(&Comparisons { shorthand, ..trlvr })).specificity;
        assert_eq!(
            [spec(e(-2.0, -6.0, 3.0)), spec(e(-5.0, -12.0, 1.0)), spec(e(-40.0, -55.0, -25.0))],
            [Shown, NotShown, Contradicted]
        );
        assert_eq!(verdicts(&trlvr, &one(klreg), None).specificity, NotShown);
    }

    #[test]
    fn the_claims_sentence_sorts_each_claim_once() {
        use Outcome::{Contradicted, NotShown, Shown};
        let all = claims_sentence([Shown; 4]);
        assert!(
            all.starts_with("This run shows 4 of the four claims: ") && !all.contains("cannot tell"),
            "{all}"
        );
        let none = claims_sentence([NotShown; 4]);
        assert!(none.starts_with("This run shows 0 of the four claims. It cannot tell"), "{none}");
        let some = claims_sentence([Shown, Contradicted, Shown, NotShown]);
        assert!(
            some.contains("shows 2 of")
                && some.contains(&format!("It contradicts: {}.", CLAIMS[1]))
                && some.contains(&format!("threshold): {}.", CLAIMS[3])),
            "{some}"
        );
    }

    fn problem(id: usize, solo: usize, handoff: usize) -> ProblemResult {
        ProblemResult {
            id,
            n: 4,
            solo_correct: solo,
            handoff_correct: handoff,
            solo_tokens: 40,
            handoff_tokens: 40,
            handoff_senior_tokens: 20,
            handoff_junior_nll: 4.0,
            legibility: trlvr::eval::ChainStats {
                chains: 4,
                chain_ce: 0.8,
                chain_top1: 3.0,
                tokens: 40,
                junior_nll: 8.0,
                junior_top1: 30,
                kl_k3: 1.0,
                kl_exact: 1.0,
            },
            prompt_hash: None,
        }
    }

    fn run<'a>(problems: &'a [ProblemResult], notations: &'a [(usize, usize)]) -> Run<'a> {
        Run { problems, notations }
    }

    #[test]
    fn paired_comparison_of_identical_runs_is_zero() {
        let problems = vec![problem(0, 4, 2), problem(1, 2, 2), problem(2, 3, 1)];
        let notes = [(1, 3), (4, 0), (2, 2)];
        let same = run(&problems, &notes);
        let c = compare(&[same], &[same], 1).unwrap();
        for est in [c.tax, c.junior_ce, c.drift, c.shorthand] {
            assert_eq!((est.value, est.low, est.high), (0.0, 0.0, 0.0));
        }
        assert!(c.solo.value == 0.0 && c.solo.low < 0.0 && c.solo.high > 0.0, "{:?}", c.solo);
        // A run that loses every handoff has a tax higher by its handoff accuracy.
        let worse: Vec<ProblemResult> =
            problems.iter().map(|r| ProblemResult { handoff_correct: 0, ..r.clone() }).collect();
        let c = compare(&[run(&worse, &notes)], &[same], 1).unwrap();
        assert!(
            (c.tax.value - 100.0 * (2.0 + 2.0 + 1.0) / 12.0).abs() < 1e-9 && c.tax.low > 0.0,
            "{:?}",
            c.tax
        );
    }

    #[test]
    fn a_bootstrap_of_all_right_answers_is_widened_to_score_bounds() {
        // Every answer right in both arms: the bootstrap says [0, 0]; twelve samples a side
        // cannot rule out a difference of several points, and Newcombe's interval says so.
        let perfect = vec![problem(0, 4, 4), problem(1, 4, 4), problem(2, 4, 4)];
        let notes = [(0, 3); 3];
        let c = compare(&[run(&perfect, &notes)], &[run(&perfect, &notes)], 1).unwrap();
        let (low, high) = trlvr::eval::newcombe((12.0, 12.0), (12.0, 12.0));
        assert_eq!((c.solo.value, c.solo.low, c.solo.high), (0.0, 100.0 * low, 100.0 * high));
        assert!(c.solo.high > EQUIVALENCE_POINTS, "{:?}: too few samples to show equivalence", c.solo);
        assert_eq!(Outcome::within(&c.solo, EQUIVALENCE_POINTS), Outcome::NotShown);
        assert!(c.tax_a.low < 0.0 && c.tax_a.high > 0.0, "{:?}", c.tax_a);
    }

    /// Seeds that disagree widen the interval: the bootstrap resamples them, so two seeds
    /// far apart cannot show a difference that one seed's problems alone would.
    #[test]
    fn the_spread_between_seeds_widens_the_interval() {
        let notes = [(2, 2); 40];
        let all_right: Vec<ProblemResult> = (0..40).map(|i| problem(i, 4, 4)).collect();
        let half: Vec<ProblemResult> = (0..40).map(|i| problem(i, 2, 2)).collect();
        let none: Vec<ProblemResult> = (0..40).map(|i| problem(i, 0, 0)).collect();
        let b = [run(&half, &notes)];
        let one_seed = compare(&[run(&all_right, &notes)], &b, 3).unwrap();
        let two_seeds = compare(&[run(&all_right, &notes), run(&none, &notes)], &b, 3).unwrap();
        assert!(one_seed.solo.low > 40.0, "{:?}", one_seed.solo);
        assert!(two_seeds.solo.value.abs() < 1e-9, "{:?}", two_seeds.solo);
        assert!(two_seeds.solo.low <= -45.0 && two_seeds.solo.high >= 45.0, "{:?}", two_seeds.solo);
        assert!(compare(&[run(&all_right[..3], &notes[..3])], &b, 3).is_err(), "different problems");
    }
}
