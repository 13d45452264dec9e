//! `report.md`: the table (mean and spread over seeds), the positive control's verdict,
//! the comparisons the paper makes (paired bootstrap over problems, seeds pooled) and
//! which of its claims this run reproduces. Every statement is computed from the numbers.

use std::fmt::Write as _;

use serde::Serialize;
use trlvr::eval::{Bootstrap, Estimate, ProblemResult, ratio_of_sums};

use super::arms::Arm;

/// How close TRLVR's solo accuracy must stay to GRPO's to count as "within reach"
/// (points, at the low end of the interval).
pub const REACH_POINTS: f64 = 5.0;
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

/// A paired comparison `a − b` over the same problems, seeds pooled.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Comparisons {
    /// Solo pass@1, points.
    pub solo: Estimate,
    /// Tax, points.
    pub tax: Estimate,
    /// Junior CE, nats/token.
    pub junior_ce: Estimate,
    /// Exact KL per token, nats.
    pub drift: Estimate,
}

/// `a − b` for each figure, from the per-problem results of each arm's seeds (the same
/// problems in the same order in every run).
pub fn compare(a: &[&[ProblemResult]], b: &[&[ProblemResult]], seed: u64) -> trlvr::Result<Comparisons> {
    let problems = a.first().map_or(0, |r| r.len());
    let boot = Bootstrap::new(&[problems], 1000, seed, 0.95)?;
    // Per-arm statistic pooled over its seeds on resampled problems.
    let pass = |runs: &[&[ProblemResult]], idx: &[usize], handoff: bool| {
        let (mut num, mut den) = (0.0, 0.0);
        for run in runs {
            for &i in idx {
                let p = &run[i];
                num += (if handoff { p.handoff_correct } else { p.solo_correct }) as f64 / p.n as f64;
                den += 1.0;
            }
        }
        100.0 * num / den
    };
    // Junior CE as the evaluation reports it (the mean of per-chain means); drift per token.
    let per_token = |runs: &[&[ProblemResult]], idx: &[usize], kl: bool| {
        let num: Vec<f64> = runs
            .iter()
            .flat_map(|r| r.iter().map(|p| if kl { p.legibility.kl_exact } else { p.legibility.chain_ce }))
            .collect();
        let den: Vec<f64> = runs
            .iter()
            .flat_map(|r| {
                r.iter().map(|p| if kl { p.legibility.tokens as f64 } else { p.legibility.chains as f64 })
            })
            .collect();
        let pooled: Vec<usize> =
            (0..runs.len()).flat_map(|s| idx.iter().map(move |&i| s * problems + i)).collect();
        ratio_of_sums(&num, &den, &pooled)
    };
    let tax = |runs: &[&[ProblemResult]], idx: &[usize]| pass(runs, idx, false) - pass(runs, idx, true);
    Ok(Comparisons {
        solo: boot.estimate(|s| pass(a, s[0], false) - pass(b, s[0], false)),
        tax: boot.estimate(|s| tax(a, s[0]) - tax(b, s[0])),
        junior_ce: boot.estimate(|s| per_token(a, s[0], false) - per_token(b, s[0], false)),
        drift: boot.estimate(|s| per_token(a, s[0], true) - per_token(b, s[0], true)),
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

/// The verdicts the report states.
#[derive(Debug, Clone, Serialize)]
pub struct Verdicts {
    /// TRLVR's tax is below GRPO's (interval of the difference below 0).
    pub trlvr_tax_below_grpo: bool,
    /// TRLVR's solo pass@1 is at most `REACH_POINTS` below GRPO's (low end).
    pub trlvr_solo_within_reach: bool,
    /// TRLVR's junior CE is below GRPO's.
    pub trlvr_ce_below_grpo: bool,
    /// TRLVR's drift is below GRPO's.
    pub trlvr_drift_below_grpo: bool,
    /// KL-Reg reaches both: tax below GRPO's and solo within reach.
    pub klreg_combination: bool,
    /// The four claims of method.md §6, in order: reproduced or not.
    pub claims: [bool; 4],
}

/// Reads the comparisons.
pub fn verdicts(trlvr_vs_grpo: &Comparisons, klreg_vs_grpo: &Comparisons) -> Verdicts {
    let t = trlvr_vs_grpo;
    let k = klreg_vs_grpo;
    let trlvr_tax_below_grpo = t.tax.high < 0.0;
    let trlvr_solo_within_reach = t.solo.low > -REACH_POINTS;
    let trlvr_ce_below_grpo = t.junior_ce.high < 0.0;
    let trlvr_drift_below_grpo = t.drift.high < 0.0;
    let klreg_combination = k.tax.high < 0.0 && k.solo.low > -REACH_POINTS;
    Verdicts {
        trlvr_tax_below_grpo,
        trlvr_solo_within_reach,
        trlvr_ce_below_grpo,
        trlvr_drift_below_grpo,
        klreg_combination,
        claims: [
            trlvr_solo_within_reach,
            trlvr_tax_below_grpo,
            trlvr_ce_below_grpo && trlvr_drift_below_grpo,
            !klreg_combination,
        ],
    }
}

/// The claims of method.md §6, in order.
pub const CLAIMS: [&str; 4] = [
    "TRLVR ≈ GRPO on solo accuracy",
    "TRLVR ≫ GRPO on handoff accuracy (near-zero tax)",
    "TRLVR's chains are more legible (lower junior CE) and drift less",
    "KL-Reg does not reproduce the combination",
];

/// The sentence saying which claims this run reproduces and which it does not.
pub fn claims_sentence(reproduced: [bool; 4]) -> String {
    let pick = |want: bool| -> Vec<&str> {
        CLAIMS.iter().zip(reproduced).filter(|&(_, ok)| ok == want).map(|(c, _)| *c).collect()
    };
    let (yes, no) = (pick(true), pick(false));
    let mut text = format!("This run reproduces {} of the four claims", yes.len());
    if !yes.is_empty() {
        text += &format!(": {}", yes.join("; "));
    }
    text.push('.');
    if !no.is_empty() {
        text += &format!(" It does not reproduce: {}.", no.join("; "));
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

/// Everything the Markdown needs.
#[derive(Debug)]
pub struct ReportInput<'a> {
    /// (label, row) for base, control, control self-paired, then each arm's mean over seeds.
    pub rows: Vec<(String, Row)>,
    /// Per arm, per seed.
    pub runs: ArmRuns<Row>,
    /// TRLVR − GRPO.
    pub trlvr_vs_grpo: Comparisons,
    /// KL-Reg − GRPO.
    pub klreg_vs_grpo: Comparisons,
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

fn show(e: &Estimate, d: usize) -> String {
    e.show(d)
}

/// The Markdown report.
pub fn markdown(input: &ReportInput<'_>) -> String {
    let mut md = String::from("# trlvr demo: GRPO, TRLVR and KL-Reg in miniature\n\n");
    md += "Task: running sums, each step one paragraph, in a plain notation both models know or a \
           shorthand only the senior's base learned; reward = 1 − cost × tokens for a correct answer, 0 otherwise. The junior is a \
           smaller model trained on the plain notation only.\n\n";
    md += "## Table\n\n";
    md += "Base and controls: value [95% bootstrap interval over problems]. Arms: mean over seeds \
           [min, max over seeds].\n\n";
    md += "| model | solo pass@1 (%) | handoff pass@1 (%) | tax (points) | junior CE (nats) | junior top-1 (%) | drift KL (nats) | shorthand (%) |\n";
    md += "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (label, r) in &input.rows {
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
    md += "\n## Positive control\n\n";
    let (ok, why) = &input.control;
    let _ = writeln!(
        md,
        "{} {why}\n",
        if *ok { "**Passed.**" } else { "**FAILED: the evaluation is blind, so the demo fails.**" }
    );
    md += "## Comparisons (paired bootstrap over problems, seeds pooled; 95% intervals)\n\n";
    md += "| difference | solo pass@1 (points) | tax (points) | junior CE (nats) | drift KL (nats) |\n|---|---:|---:|---:|---:|\n";
    for (label, c) in [("TRLVR − GRPO", &input.trlvr_vs_grpo), ("KL-Reg − GRPO", &input.klreg_vs_grpo)] {
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {} | {} |",
            show(&c.solo, 1),
            show(&c.tax, 1),
            show(&c.junior_ce, 3),
            show(&c.drift, 3)
        );
    }
    let t = &input.trlvr_vs_grpo;
    let v = input.verdicts;
    let _ = writeln!(
        md,
        "\n- TRLVR's tax is {} GRPO's ({} points).\n- TRLVR's solo accuracy is {} of GRPO's \
         (difference {} points; within reach means the low end is above −{REACH_POINTS}).\n- \
         TRLVR's junior CE is {} GRPO's ({} nats); its drift is {} GRPO's ({} nats).\n- KL-Reg {} \
         the combination (tax below GRPO's and solo within reach).",
        sign(&t.tax),
        show(&t.tax, 1),
        if v.trlvr_solo_within_reach { "within reach" } else { "not within reach" },
        show(&t.solo, 1),
        sign(&t.junior_ce),
        show(&t.junior_ce, 3),
        sign(&t.drift),
        show(&t.drift, 3),
        if v.klreg_combination { "reaches" } else { "does not reach" },
    );
    md += "\n## The paper's claims (method.md §6)\n\n";
    md += &claims_sentence(v.claims);
    md += "\nEach claim is read off the comparison intervals above, not written in advance; with \
           few seeds and a small evaluation set, an interval that straddles zero counts as not reproduced.\n";
    md += "\n## Runs\n\n| arm | seed | steps | rollout tokens | seconds | solo | tax | junior CE | shorthand (%) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (arm, seeds) in &input.runs {
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
    if !input.plots.is_empty() {
        md += "\n## Over training\n\n";
        for (file, caption) in &input.plots {
            let _ = writeln!(md, "![{file}]({file})\n\n{caption}\n");
        }
    }
    md += "\n## Settings\n\n";
    for line in &input.settings {
        let _ = writeln!(md, "- {line}");
    }
    md += "\n## Wall time\n\n";
    for line in &input.timing {
        let _ = writeln!(md, "- {line}");
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(value: f64, low: f64, high: f64) -> Estimate {
        Estimate { value, low, high }
    }

    fn comparisons(solo: Estimate, tax: Estimate, ce: Estimate) -> Comparisons {
        Comparisons { solo, tax, junior_ce: ce, drift: ce }
    }

    #[test]
    fn claims_follow_the_intervals() {
        // TRLVR: lower tax and CE, solo within reach; KL-Reg: nothing distinguishable.
        let trlvr = comparisons(e(-1.0, -4.0, 2.0), e(-30.0, -40.0, -20.0), e(-2.0, -3.0, -1.0));
        let klreg = comparisons(e(0.0, -2.0, 2.0), e(-1.0, -5.0, 3.0), e(0.0, -0.1, 0.1));
        let v = verdicts(&trlvr, &klreg);
        assert_eq!(v.claims, [true, true, true, true]);
        // A tax interval straddling zero is not a reproduction; nor is a solo drop
        // whose interval reaches past the reach; a KL-Reg that matches TRLVR breaks claim 4.
        let trlvr = comparisons(e(-8.0, -12.0, -4.0), e(-3.0, -9.0, 2.0), e(-2.0, -3.0, -1.0));
        let v = verdicts(&trlvr, &trlvr);
        assert!(!v.trlvr_tax_below_grpo && !v.trlvr_solo_within_reach && v.trlvr_ce_below_grpo);
        let good = comparisons(e(0.0, -1.0, 1.0), e(-30.0, -40.0, -20.0), e(-2.0, -3.0, -1.0));
        assert_eq!(verdicts(&good, &good).claims, [true, true, true, false]);
    }

    #[test]
    fn the_claims_sentence_lists_each_claim_once() {
        let all = claims_sentence([true; 4]);
        assert!(
            all.starts_with("This run reproduces 4 of the four claims: ")
                && !all.contains("does not reproduce:")
        );
        let none = claims_sentence([false; 4]);
        assert!(
            none.starts_with("This run reproduces 0 of the four claims. It does not reproduce: "),
            "{none}"
        );
        let some = claims_sentence([true, false, true, false]);
        assert!(
            some.contains("reproduces 2 of")
                && some.contains(&format!("It does not reproduce: {}; {}.", CLAIMS[1], CLAIMS[3]))
        );
    }

    #[test]
    fn paired_comparison_of_identical_runs_is_zero() {
        let p = |id, solo, handoff| ProblemResult {
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
        };
        let run = vec![p(0, 4, 2), p(1, 2, 2), p(2, 3, 1)];
        let c = compare(&[&run], &[&run], 1).unwrap();
        for est in [c.solo, c.tax, c.junior_ce, c.drift] {
            assert_eq!((est.value, est.low, est.high), (0.0, 0.0, 0.0));
        }
        // A run that loses every handoff has a tax higher by its handoff accuracy.
        let worse: Vec<ProblemResult> =
            run.iter().map(|r| ProblemResult { handoff_correct: 0, ..r.clone() }).collect();
        let c = compare(&[&worse], &[&run], 1).unwrap();
        assert!(
            (c.tax.value - 100.0 * (2.0 + 2.0 + 1.0) / 12.0).abs() < 1e-9 && c.tax.low > 0.0,
            "{:?}",
            c.tax
        );
    }
}
