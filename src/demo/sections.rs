//! What the demo's report adds to a study's: the ceilings that frame each claim, the
//! positive control (the evaluation is not blind), the specificity sweep over the
//! partner's literacy, and KL-Reg's frontier, each read from the study's analysis; the
//! settings.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, anyhow};
use trlvr::eval::{Estimate, EvalConfig};
use trlvr::objective::GrpoConfig;
use trlvr::schedule::WordBoundary;
use trlvr::study::{Analysis, ClaimReading, Figure, Row};
use trlvr::train::TrainConfig;

use super::design::{Args, DemoArm, EQUIVALENCE_POINTS, GRPO_SOLO_CEILING, RlSettings, Training};
use super::lab::clamped_share;
use super::models::Models;
use super::regime::{Ceilings, Regime};
use crate::study::report::show;

/// The positive control's tax must reach this many points.
pub const CONTROL_TAX_POINTS: f64 = 10.0;
/// ... and its junior CE this multiple of the self-paired CE.
pub const CONTROL_CE_RATIO: f64 = 1.5;

fn figure(row: &Row, f: &Figure) -> Estimate {
    row.figures.get(f).map_or(Estimate { value: f64::NAN, low: f64::NAN, high: f64::NAN }, |x| x.estimate)
}

fn row<'a>(analysis: &'a Analysis, evaluation: &str, arm: &str) -> Result<&'a Row> {
    analysis.row(evaluation, arm).ok_or_else(|| anyhow!("no results for {arm} in evaluation {evaluation}"))
}

/// Whether the shorthand-only control pays a large tax with the weak junior and costs it
/// far more than it costs itself: if not, the evaluation cannot see illegibility.
pub fn positive_control(analysis: &Analysis) -> Result<(bool, String)> {
    let (control, own) = (row(analysis, "junior", "control")?, row(analysis, "self", "control")?);
    let (tax, ce, own_ce) =
        (figure(control, &Figure::Tax), figure(control, &Figure::JuniorCe), figure(own, &Figure::JuniorCe));
    let passed = tax.value >= CONTROL_TAX_POINTS
        && ce.value >= CONTROL_CE_RATIO * own_ce.value
        && ce.low > own_ce.high;
    let why = format!(
        "The shorthand-only senior with the weak junior pays a tax of {} points (needed: at least \
         {CONTROL_TAX_POINTS}) and its chains cost the junior {} nats per token, against {} in the \
         self-paired check (the control as its own junior; needed: at least {CONTROL_CE_RATIO}× and \
         separate intervals).",
        show(&tax, 1),
        show(&ce, 3),
        show(&own_ce, 3)
    );
    Ok((passed, why))
}

/// The sections: the ceilings, the positive control, the specificity sweep, the frontier.
pub fn sections(
    analysis: &Analysis,
    regime: &Regime,
    ceilings: &Ceilings,
    arms: &[DemoArm],
    models: &Models,
    runs: &Path,
    control: &(bool, String),
) -> Result<Vec<(String, String)>> {
    let (passed, why) = control;
    let verdict =
        if *passed { "**Passed.**" } else { "**FAILED: the evaluation is blind, so the demo fails.**" };
    let mut frontier = frontier(analysis, arms, runs)?;
    if regime.kl.seeds == 1 {
        frontier += "\nIn this regime each setting of the grid has one seed (the KL-Reg arm itself has every seed).\n";
    }
    Ok(vec![
        ("Ceilings".into(), self::ceilings(analysis, regime, ceilings)?),
        ("Positive control".into(), format!("{verdict} {why}\n")),
        ("Specificity control: TRLVR's partner's literacy".into(), sweep(analysis, arms, models)?),
        ("KL-Reg's frontier".into(), frontier),
    ])
}

/// What frames each claim: the task's ceilings (before the run), the junior alone, the
/// shorthand-only control, and the checks that make claim 1 testable.
fn ceilings(analysis: &Analysis, regime: &Regime, ceilings: &Ceilings) -> Result<String> {
    let mut md = ceilings.markdown(&regime.task);
    let solo = |arm: &str| -> Result<Estimate> { Ok(figure(row(analysis, "junior", arm)?, &Figure::Solo)) };
    let _ = writeln!(
        md,
        "\nMeasured before training: the base alone {} %, the junior alone {} %, the shorthand-only control {} % \
         (solo pass@1).\n",
        show(&solo("base")?, 1),
        show(&solo("junior-alone")?, 1),
        show(&solo("control")?, 1)
    );
    let grpo = solo("grpo")?;
    let test = analysis.claims.iter().find(|c| c.id == "solo").and_then(|c| c.alternatives.first());
    let (found, expected) = test.and_then(|a| a.tests.first()).map_or((f64::NAN, f64::NAN), |t| {
        ((t.estimate.high - t.estimate.low) / 2.0, t.test.expected_half_width.unwrap_or(f64::NAN))
    });
    let _ = writeln!(
        md,
        "Claim 1 is testable only if (a) the legible route reaches full accuracy within the cap (the plain ceiling \
         at least {:.0}%: {}), (b) GRPO's solo accuracy stays below {GRPO_SOLO_CEILING}% (its interval: {}), and \
         (c) the interval the design expects is narrower than the margin (±{expected} against ±{EQUIVALENCE_POINTS}; \
         found ±{found:.1}).",
        100.0 - EQUIVALENCE_POINTS,
        if ceilings.wall(EQUIVALENCE_POINTS).is_none() { "yes" } else { "**no**: declared not testable" },
        show(&grpo, 1),
    );
    Ok(md)
}

/// TRLVR's notation against its partner's literacy, from the weak junior through the
/// literate juniors to the base.
fn sweep(analysis: &Analysis, arms: &[DemoArm], models: &Models) -> Result<String> {
    let mut md = String::from(
        "TRLVR paired in training with a junior that reads shorthand (the frozen base: the paper's self-paired \
         setting) should keep the shorthand GRPO learns, if TRLVR's choice of notation is a trade-off it learns \
         from its partner and not a wall the task builds (claim \"specificity\" above). The sweep: TRLVR trained \
         with partners that read shorthand to growing degrees (literacy: the shorthand-only control's handoff \
         pass@1 with the partner, %), each TRLVR senior evaluated as the arms are (with the weak junior).\n\n\
         | TRLVR's partner in training | literacy (%) | seeds | shorthand (%) | solo (%) | tax (points) |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    let shorthand = Figure::Column("shorthand".into());
    let mut line = |partner: String, evaluation: &str, arm: &str| -> Result<()> {
        let literacy = figure(row(analysis, evaluation, "control")?, &Figure::Handoff);
        let r = row(analysis, "junior", arm)?;
        let _ = writeln!(
            md,
            "| {partner} | {} | {} | {:.1} | {:.1} | {:.1} |",
            show(&literacy, 1),
            r.seeds.len(),
            figure(r, &shorthand).value,
            figure(r, &Figure::Solo).value,
            figure(r, &Figure::Tax).value
        );
        Ok(())
    };
    line("the junior (plain only; the TRLVR arm)".into(), "junior", "trlvr")?;
    for (k, (recipe, _)) in models.literate_juniors.iter().enumerate() {
        let arm = arms
            .iter()
            .find(|a| matches!(a.training, Training::Trlvr { partner: super::design::Model::Literate(j) } if j == k))
            .ok_or_else(|| anyhow!("no TRLVR arm with literate junior {k}"))?;
        line(format!("the junior + {} steps on mixed chains", recipe.sft.steps), recipe.name, &arm.name)?;
    }
    line("the base (the TRLVR, literate junior arm)".into(), "base", "trlvr-literate")?;
    Ok(md)
}

/// KL-Reg at each setting against TRLVR, with whether it reaches TRLVR's combination (the
/// claim's alternatives).
fn frontier(analysis: &Analysis, arms: &[DemoArm], runs: &Path) -> Result<String> {
    let claim: &ClaimReading =
        analysis.claims.iter().find(|c| c.id == "kl-reg").ok_or_else(|| anyhow!("no claim kl-reg"))?;
    let mut md = String::from(
        "KL-Reg at each β and estimator (`k3`: the paper's, clamped at 10 nats per token; `k3plus`: the same \
         value with k2's gradient, which does not vanish at the clamp), against TRLVR: a setting reaches TRLVR's \
         combination when its tax is within 5 points of TRLVR's and its solo accuracy at most 5 points below \
         (the alternatives of claim \"kl-reg\", read with Holm's correction over the settings).\n\n\
         | KL-Reg | seeds | solo (%) | tax (points) | shorthand (%) | junior CE (nats) | tokens at k3's clamp (%) \
         | tax − TRLVR's | solo − TRLVR's | reaches TRLVR |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let shorthand = Figure::Column("shorthand".into());
    for a in &claim.alternatives {
        let name = a.label.clone().unwrap_or_default();
        let arm = arms.iter().find(|x| x.name == name).ok_or_else(|| anyhow!("no arm {name}"))?;
        let r = row(analysis, "junior", &name)?;
        let clamped: Vec<f64> =
            arm.seeds.iter().filter_map(|s| clamped_share(&runs.join(format!("{name}-seed{s}")))).collect();
        let clamped = if clamped.is_empty() {
            "n/a".to_string()
        } else {
            format!("{:.1}", 100.0 * clamped.iter().sum::<f64>() / clamped.len() as f64)
        };
        let _ = writeln!(
            md,
            "| {name} | {} | {:.1} | {:.1} | {:.1} | {:.3} | {clamped} | {} | {} | {} |",
            r.seeds.len(),
            figure(r, &Figure::Solo).value,
            figure(r, &Figure::Tax).value,
            figure(r, &shorthand).value,
            figure(r, &Figure::JuniorCe).value,
            show(&a.tests[0].estimate, 1),
            show(&a.tests[1].estimate, 1),
            match a.holds {
                trlvr::study::Verdict::Shown => "yes",
                trlvr::study::Verdict::Contradicted => "no",
                _ => "cannot tell",
            }
        );
    }
    Ok(md)
}

/// The settings the report lists, each default from the code that uses it.
pub fn settings(
    args: &Args,
    regime: &Regime,
    rl: &RlSettings,
    models: &Models,
    threads: usize,
) -> Result<Vec<String>> {
    let [base_recipe, junior_recipe, control_recipe] = &regime.recipes;
    let task = &regime.task;
    let literate: Vec<_> = models.literate_juniors.iter().map(|(r, _)| r).collect();
    let word = WordBoundary::default();
    let sampler = EvalConfig::default().sampling;
    Ok(vec![
        format!("mode: {}", if args.quick { "--quick" } else { "full" }),
        format!("task: {}", serde_json::to_string(task)?),
        format!("base: {}", serde_json::to_string(base_recipe)?),
        format!("junior: {}", serde_json::to_string(junior_recipe)?),
        format!("positive control: {}", serde_json::to_string(control_recipe)?),
        format!("KL-Reg's grid, fixed before the run: {}", serde_json::to_string(&regime.kl)?),
        format!("literate juniors (from the junior): {}", serde_json::to_string(&literate)?),
        format!("RL (every arm the same steps × prompts): {}", serde_json::to_string(rl)?),
        format!(
            "arms: GRPO = solo rollouts; TRLVR = word-boundary handoffs with the junior (p_sen {}, K {}), \
             loss on senior tokens; KL-Reg = solo + β·k3 KL(senior ‖ junior); TRLVR, literate junior = TRLVR \
             paired with the frozen base instead of the junior. GRPO defaults otherwise ({}), rollouts at T {}",
            word.p_senior,
            word.max_gap,
            grpo_defaults()?,
            TrainConfig::default().sampling.temperature
        ),
        format!(
            "evaluation: {} held-out problems, n {} per mode, T {} / top-p {} / top-k {}, step alternation \
             (one step per turn, senior first), every arm with the weak junior; GRPO and the TRLVR arms also \
             with the base (the paper's self-paired partner)",
            rl.eval_problems, rl.eval_n, sampler.temperature, sampler.top_p, sampler.top_k
        ),
        format!("seeds: {:?}", args.seeds),
        format!("device: {}, {threads} runs at a time", args.device),
    ])
}

/// GRPO's default clip, dual clip and aggregation, in words.
fn grpo_defaults() -> Result<String> {
    let g = GrpoConfig::default();
    let clip = if g.clip_low == g.clip_high {
        format!("ε {}", g.clip_low)
    } else {
        format!("ε {}/{}", g.clip_low, g.clip_high)
    };
    let dual = g.dual_clip.map_or_else(|| "off".to_string(), |c| c.to_string());
    let aggregation = serde_json::to_value(g.aggregation)?;
    let aggregation = aggregation.as_str().map_or_else(|| aggregation.to_string(), str::to_string);
    Ok(format!("{clip}, dual clip {dual}, {aggregation}"))
}
