//! The demo's front report: the regimes side by side (verdicts, ceilings, the main arms),
//! each linking to its own study report.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use trlvr::study::{Analysis, Figure, Verdict};

use super::design::Args;
use super::regime::{Ceilings, Regime};
use crate::study::report::show;

/// One regime's outcome.
pub struct Done {
    /// The regime.
    pub regime: Regime,
    /// Its ceilings.
    pub ceilings: Ceilings,
    /// Its study's analysis.
    pub analysis: Analysis,
    /// Whether its positive control passed.
    pub control_passed: bool,
    /// Its wall time, seconds.
    pub wall: f64,
}

/// The main table's arms.
const ARMS: [&str; 7] = ["base", "junior-alone", "control", "grpo", "trlvr", "kl-reg", "trlvr-literate"];

fn cell(analysis: &Analysis, evaluation: &str, arm: &str, figure: &Figure) -> String {
    analysis
        .row(evaluation, arm)
        .and_then(|r| r.figures.get(figure))
        .map_or_else(|| "—".into(), |f| show(&f.estimate, figure.decimals()))
}

/// Writes `out/report.md`.
pub fn write(out: &Path, args: &Args, done: &[Done], wall: f64) -> Result<()> {
    let mut md = String::from("# trlvr demo: GRPO, TRLVR and KL-Reg in miniature, by regime\n\n");
    let command: Vec<String> = std::env::args().collect();
    let _ = writeln!(
        md,
        "- command: `{}`\n- commit: {}\n- machine: {}\n- wall time: {wall:.0} s ({})\n- seeds: {:?}\n",
        command.join(" "),
        crate::study::commit(),
        crate::study::machine(),
        done.iter().map(|d| format!("{} {:.0} s", d.regime.name, d.wall)).collect::<Vec<_>>().join(", "),
        args.seeds
    );
    md += "The paper claims that a senior trained with TRLVR (1) is as accurate alone as one trained with GRPO, \
           (2) keeps that accuracy when a weaker junior writes half the steps, (3) writes chains the junior can \
           follow, and (4) that a KL penalty toward the junior does not reproduce this. The demo tests those claims \
           on a running-sum task in two regimes, and says what its own runs show:\n\n";
    for d in done {
        let _ = writeln!(
            md,
            "- **{}**: {} ([report]({}/report.md))",
            d.regime.name, d.regime.title, d.regime.name
        );
    }
    verdicts(&mut md, done);
    ceilings(&mut md, done);
    arms(&mut md, done);
    std::fs::write(out.join("report.md"), md)?;
    Ok(())
}

/// A table's header and rule, one column per regime after `first`.
fn header(md: &mut String, first: &str, done: &[Done], align: &str) {
    let names: Vec<&str> = done.iter().map(|d| d.regime.name).collect();
    let _ = writeln!(md, "| {first} | {} |\n|---|{}", names.join(" | "), align.repeat(done.len()));
}

/// Each claim's verdict per regime, and why each untestable one is.
fn verdicts(md: &mut String, done: &[Done]) {
    *md += "\n## Verdicts\n\nEach read off intervals by rules declared before the runs (Holm's procedure across the \
            claims of each regime); \"not testable\" is decided by the design, a ceiling of the task or a failed \
            precondition, never by the judged result.\n\n";
    header(md, "claim", done, "---|");
    let first = done.first().map(|d| &d.analysis.claims[..]).unwrap_or_default();
    for claim in first {
        let _ = write!(md, "| {} (`{}`) |", claim.statement, claim.id);
        for d in done {
            let verdict = d.analysis.claims.iter().find(|c| c.id == claim.id);
            let _ = write!(md, " {} |", verdict.map_or("—".into(), |c| format!("**{}**", c.verdict.word())));
        }
        *md += "\n";
    }
    *md += "\nWhy each claim that is not testable is:\n\n";
    for d in done {
        for c in d.analysis.claims.iter().filter(|c| c.verdict == Verdict::NotTestable) {
            let _ = writeln!(md, "- {} / `{}`: {}", d.regime.name, c.id, c.why);
        }
    }
}

/// What frames the claims in each regime.
fn ceilings(md: &mut String, done: &[Done]) {
    *md += "\n## Ceilings\n\n";
    header(md, "", done, "---:|");
    *md += "| the legible route's ceiling (plain chains that fit the cap, % of problems) |";
    for d in done {
        let _ = write!(md, " {:.1} |", d.ceilings.plain);
    }
    for (label, arm) in [
        ("the base alone (solo %)", "base"),
        ("the junior alone (solo %)", "junior-alone"),
        ("the shorthand-only control (solo %)", "control"),
        ("GRPO (solo %)", "grpo"),
    ] {
        let _ = write!(md, "\n| {label} |");
        for d in done {
            let _ = write!(md, " {} |", cell(&d.analysis, "junior", arm, &Figure::Solo));
        }
    }
    *md += "\n";
}

/// The main arms' figures with the weak junior, per regime.
fn arms(md: &mut String, done: &[Done]) {
    *md += "\n## The main arms, with the weak junior\n\nEach arm pooled over its seeds: value [95% interval of the \
            hierarchical bootstrap]. Every trained arm ran the same steps × prompts.\n";
    for d in done {
        let _ = write!(
            md,
            "\n### {}\n\n| arm | solo pass@1 (%) | handoff pass@1 (%) | tax (points) | junior CE (nats/token) | \
             shorthand (%) |\n|---|---:|---:|---:|---:|---:|\n",
            d.regime.name
        );
        for arm in ARMS {
            let _ = write!(md, "| {arm} |");
            for f in [
                Figure::Solo,
                Figure::Handoff,
                Figure::Tax,
                Figure::JuniorCe,
                Figure::Column("shorthand".into()),
            ] {
                let _ = write!(md, " {} |", cell(&d.analysis, "junior", arm, &f));
            }
            *md += "\n";
        }
    }
}
