//! A study's report: `report.md` (verdicts first, then the claims as declared, the
//! tables, every test with its interval, the runs and their cost, how the intervals were
//! made, plots, settings) and `study.json` (the same numbers). Every sentence of a
//! verdict is computed from the numbers beside it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use trlvr::eval::Estimate;
use trlvr::study::{Analysis, Claim, Cost, Figure, PAIR_FIGURES, Threshold, Verdict};

use super::runner::Design;

/// Where a study's claims were declared: its file's hash and claims at the first start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Declared {
    /// The study's hash then (its file's text, or the demo's definition).
    pub study_hash: String,
    /// The claims' hash then.
    pub claims_hash: String,
    /// The build's commit then.
    pub commit: String,
    /// When (UTC, seconds since the epoch).
    pub at: u64,
}

/// Where and how the report's numbers were made.
#[derive(Debug, Clone, Serialize)]
pub struct Provenance {
    /// The command that ran.
    pub command: String,
    /// The study file, if any.
    pub file: Option<String>,
    /// The study's hash now.
    pub study_hash: String,
    /// The claims' hash now.
    pub claims_hash: String,
    /// The build's commit.
    pub commit: String,
    /// The machine, in words.
    pub machine: String,
    /// What the first start declared.
    pub declared: Declared,
}

/// Everything the report holds.
#[derive(Debug)]
pub struct Input<'a> {
    /// The report's title.
    pub title: String,
    /// A paragraph under it (what the study is).
    pub intro: String,
    /// The design.
    pub design: &'a Design,
    /// The results read.
    pub analysis: &'a Analysis,
    /// Each run's cost and evaluation seconds.
    pub costs: &'a super::runner::Costs,
    /// Provenance.
    pub provenance: Provenance,
    /// Figures the table shows, in order (the built-in ones by default).
    pub figures: Vec<Figure>,
    /// Settings lines.
    pub settings: Vec<String>,
    /// Sections a particular study adds (title, Markdown), after the tests.
    pub sections: Vec<(String, String)>,
    /// Plots: file name and caption.
    pub plots: Vec<(String, String)>,
    /// Wall time of this start, seconds.
    pub wall: f64,
}

/// The table's default figures.
pub fn default_figures() -> Vec<Figure> {
    vec![
        Figure::Solo,
        Figure::Handoff,
        Figure::Tax,
        Figure::JuniorCe,
        Figure::JuniorTop1,
        Figure::Kl,
        Figure::SeniorShare,
        Figure::SoloLength,
    ]
}

/// `e` at `d` decimals, with no "-0.0" for a value that rounds to zero.
pub fn show(e: &Estimate, d: usize) -> String {
    let scale = 10f64.powi(d as i32);
    let clean = |x: f64| {
        let r = (x * scale).round() / scale;
        if r == 0.0 { 0.0 } else { r }
    };
    Estimate { value: clean(e.value), low: clean(e.low), high: clean(e.high) }.show(d)
}

fn plain(x: f64, d: usize) -> String {
    if x.is_finite() { format!("{x:.d$}") } else { "n/a".into() }
}

/// Writes `report.md` and `study.json` into `out`.
///
/// # Errors
/// The files cannot be written.
pub fn write(out: &Path, input: &Input<'_>) -> Result<()> {
    let md = markdown(input);
    std::fs::write(out.join("report.md"), md)
        .with_context(|| format!("writing {}", out.join("report.md").display()))?;
    let json = serde_json::to_string_pretty(&json_of(input))? + "\n";
    std::fs::write(out.join("study.json"), json)
        .with_context(|| format!("writing {}", out.join("study.json").display()))?;
    Ok(())
}

/// The report as Markdown, section by section.
pub fn markdown(input: &Input<'_>) -> String {
    let mut md = format!("# {}\n\n", input.title);
    if !input.intro.is_empty() {
        let _ = writeln!(md, "{}\n", input.intro);
    }
    provenance(&mut md, input);
    verdicts(&mut md, input);
    declared(&mut md, input);
    pairs(&mut md, input);
    tables(&mut md, input);
    tests(&mut md, input);
    for (title, body) in &input.sections {
        let _ = write!(md, "\n## {title}\n\n{body}\n");
    }
    runs(&mut md, input);
    intervals(&mut md, input);
    if !input.plots.is_empty() {
        md += "\n## Plots\n\n";
        for (file, caption) in &input.plots {
            let _ = writeln!(md, "![{file}]({file})\n\n{caption}\n");
        }
    }
    if !input.settings.is_empty() {
        md += "\n## Settings\n\n";
        for line in &input.settings {
            let _ = writeln!(md, "- {line}");
        }
    }
    md
}

fn provenance(md: &mut String, input: &Input<'_>) {
    let p = &input.provenance;
    let _ = writeln!(md, "- command: `{}`", p.command);
    if let Some(file) = &p.file {
        let _ = writeln!(md, "- study file: `{file}` (hash {})", p.study_hash);
    } else {
        let _ = writeln!(md, "- study definition hash: {}", p.study_hash);
    }
    let _ = writeln!(md, "- commit: {}", p.commit);
    let _ = writeln!(md, "- machine: {}", p.machine);
    let _ = writeln!(md, "- this start's wall time: {:.0} s\n", input.wall);
}

fn verdicts(md: &mut String, input: &Input<'_>) {
    let claims = &input.analysis.claims;
    *md += "## Verdicts\n\n";
    if claims.is_empty() {
        *md += "The study declares no claims.\n";
        return;
    }
    let count = |v: Verdict| claims.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        md,
        "Of {} claims: {} shown, {} contradicted, {} not shown, {} not testable. Each is read off its intervals by \
         the rule beside it, declared before the runs.\n",
        claims.len(),
        count(Verdict::Shown),
        count(Verdict::Contradicted),
        count(Verdict::NotShown),
        count(Verdict::NotTestable)
    );
    *md += "| claim | verdict | read at | numbers |\n|---|---|---:|---|\n";
    for c in claims {
        let _ = writeln!(
            md,
            "| {} ({}) | **{}** | {:.1}% | {} |",
            c.statement,
            c.id,
            c.verdict.word(),
            100.0 * c.confidence,
            c.why.replace('|', "\\|")
        );
    }
    *md += "\n";
    for c in claims {
        let _ = writeln!(md, "- **{}** ({}). Rule: {}", c.id, c.verdict.word(), c.rule);
        for r in &c.requires {
            let _ = writeln!(
                md,
                "  - precondition {} {}: {} ({} at {:.1}%)",
                r.label,
                r.test.threshold.words(),
                r.outcome.word(),
                show(&r.estimate, r.test.figure.decimals()),
                100.0 * r.confidence
            );
        }
    }
}

fn claims_hash_note(p: &Provenance) -> String {
    if p.declared.claims_hash == p.claims_hash {
        format!(
            "unchanged since the study's first start (claims hash {}, commit {})",
            p.claims_hash, p.declared.commit
        )
    } else {
        format!(
            "**changed after the study's first start**: declared with claims hash {} (commit {}), read now with {}; \
             the verdicts below are of claims written after runs began",
            p.declared.claims_hash, p.declared.commit, p.claims_hash
        )
    }
}

fn declared(md: &mut String, input: &Input<'_>) {
    *md += "\n## Claims as declared\n\n";
    let _ = writeln!(
        md,
        "The claims, thresholds and margins of the study, {}.\n",
        claims_hash_note(&input.provenance)
    );
    for c in &input.design.claims {
        let _ = writeln!(md, "- **{}**: {}", c.id, c.statement);
        for line in claim_lines(c) {
            let _ = writeln!(md, "  - {line}");
        }
    }
}

/// A declared claim's tests and preconditions, one line each.
fn claim_lines(c: &Claim) -> Vec<String> {
    let mut lines = Vec::new();
    let several = c.alternatives.len() > 1;
    for a in &c.alternatives {
        for t in &a.tests {
            let power = t.expected_half_width.map_or(String::new(), |h| format!("; expected interval ±{h}"));
            let who = match (&a.label, several) {
                (Some(l), true) => format!("alternative {l}: "),
                _ => String::new(),
            };
            lines.push(format!("{who}{} {}{power}", t.label(true), t.threshold.words()));
        }
    }
    for r in &c.requires {
        lines.push(format!("requires {} {}", r.label(true), r.threshold.words()));
    }
    lines
}

/// Each pair of arms a precondition compares, on every pair figure: the drift check the
/// claims rest on, and what moved with it.
fn pairs(md: &mut String, input: &Input<'_>) {
    let a = input.analysis;
    if a.pairs.is_empty() {
        return;
    }
    let percent = 100.0 * a.config.confidence;
    let _ = write!(
        md,
        "\n## Preconditions, figure by figure\n\nEach pair of arms a precondition compares, a − b pooled over \
         seeds [{percent:.0}% interval], on the figures it could move.\n\n| a − b | evaluation |"
    );
    for f in &PAIR_FIGURES {
        let _ = write!(md, " {} ({}) |", f.name(), f.difference_unit());
    }
    *md += "\n|---|---|";
    md.push_str(&"---:|".repeat(PAIR_FIGURES.len()));
    *md += "\n";
    for p in &a.pairs {
        let _ = write!(md, "| {} − {} | {} |", p.a, p.b, p.evaluation);
        for f in &PAIR_FIGURES {
            let cell = p.figures.get(f).map_or("n/a".into(), |x| show(x, f.decimals()));
            let _ = write!(md, " {cell} |");
        }
        *md += "\n";
    }
}

fn tables(md: &mut String, input: &Input<'_>) {
    let a = input.analysis;
    let percent = 100.0 * a.config.confidence;
    for e in &input.design.evaluations {
        let rows: Vec<_> = a.rows.iter().filter(|r| &r.evaluation == e).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            md,
            "\n## Table: evaluation {e}\n\nEach arm pooled over its seeds: value [{percent:.0}% interval of the \
             hierarchical bootstrap].\n\n| arm | seeds |"
        );
        for f in &input.figures {
            let _ = write!(md, " {} |", f.label());
        }
        *md += "\n|---|---:|";
        md.push_str(&"---:|".repeat(input.figures.len()));
        *md += "\n";
        for r in rows {
            let seeds = if r.seeds.len() == 1 && !trained(input.design, &r.arm) {
                "—".to_string()
            } else {
                r.seeds.len().to_string()
            };
            let _ = write!(md, "| {} | {seeds} |", r.arm);
            for f in &input.figures {
                let cell = r.figures.get(f).map_or("n/a".into(), |x| show(&x.estimate, f.decimals()));
                let _ = write!(md, " {cell} |");
            }
            *md += "\n";
        }
    }
}

fn trained(design: &Design, arm: &str) -> bool {
    design.arms.iter().any(|a| a.name == arm && a.trained)
}

fn tests(md: &mut String, input: &Input<'_>) {
    let claims = &input.analysis.claims;
    if claims.is_empty() {
        return;
    }
    *md += "\n## Tests\n\nEvery test of every claim at the confidence the claim was read at, with the half-width the \
            design expected beside the one found.\n\n| claim | test | threshold | estimate [interval] | confidence | \
            half-width (expected) | outcome |\n|---|---|---|---:|---:|---:|---|\n";
    for c in claims {
        let all = c
            .requires
            .iter()
            .map(|r| (format!("{} (precondition)", c.id), r))
            .chain(c.alternatives.iter().flat_map(|a| a.tests.iter().map(|t| (c.id.clone(), t))));
        for (id, t) in all {
            let d = t.test.figure.decimals();
            let half = (t.estimate.high - t.estimate.low) / 2.0;
            let expected = t.test.expected_half_width.map_or("—".into(), |h| plain(h, d));
            let threshold = match t.test.threshold {
                Threshold::Within(m) => format!("within ±{m}"),
                other => other.words(),
            };
            let _ = writeln!(
                md,
                "| {id} | {} | {threshold} | {} | {:.1}% | {} ({expected}) | {} |",
                t.label,
                show(&t.estimate, d),
                100.0 * t.confidence,
                plain(half, d),
                t.outcome.word()
            );
        }
    }
}

/// Per arm: its runs' steps, prompts, tokens by author, wall time; per run the same and
/// its figures in the first evaluation.
fn runs(md: &mut String, input: &Input<'_>) {
    *md += "\n## Runs and their cost\n\nTokens are rollout tokens written in training, by author; seconds are \
            training's (summed over restarts) and evaluation's.\n\n| arm | runs | steps | prompts | senior tokens | \
            junior tokens | training (s) | evaluation (s) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for arm in &input.design.arms {
        let mine: Vec<&(Cost, f64)> =
            input.costs.iter().filter(|(k, _)| k.arm == arm.name).map(|(_, c)| c).collect();
        let sum = |f: &dyn Fn(&(Cost, f64)) -> f64| mine.iter().map(|c| f(c)).sum::<f64>();
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
            arm.name,
            mine.len(),
            sum(&|c| c.0.steps as f64),
            sum(&|c| c.0.prompts as f64),
            sum(&|c| c.0.senior_tokens as f64),
            sum(&|c| c.0.junior_tokens as f64),
            sum(&|c| c.0.seconds),
            sum(&|c| c.1)
        );
    }
    let Some(first) = input.design.evaluations.first() else { return };
    let _ = write!(
        md,
        "\nEach run (figures in evaluation {first}):\n\n| run | steps | senior tokens | junior tokens | training (s) | solo \
         (%) | handoff (%) | tax (points) | junior CE |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for (key, (cost, _)) in input.costs {
        let Some(row) = input.analysis.row(first, &key.arm) else { continue };
        let index = match key.seed {
            Some(seed) => row.seeds.iter().position(|&s| s == seed),
            None => Some(0),
        };
        let Some(i) = index else { continue };
        let value = |f: Figure, d: usize| row.figures.get(&f).map_or("n/a".into(), |x| plain(x.seeds[i], d));
        let _ = writeln!(
            md,
            "| {key} | {} | {} | {} | {:.0} | {} | {} | {} | {} |",
            cost.steps,
            cost.senior_tokens,
            cost.junior_tokens,
            cost.seconds,
            value(Figure::Solo, 1),
            value(Figure::Handoff, 1),
            value(Figure::Tax, 1),
            value(Figure::JuniorCe, 3)
        );
    }
}

fn intervals(md: &mut String, input: &Input<'_>) {
    let a = input.analysis;
    *md += "\n## How the intervals are made\n\n";
    let _ = writeln!(
        md,
        "A hierarchical percentile bootstrap, {} resamples (seed {}): each resample draws the problems once, with \
         replacement, and applies the draw to every arm (paired: a hard problem is hard for every senior), and draws \
         each arm's seeds with replacement on their own (seeds are independent training runs). An arm's figure pools \
         its drawn seeds' sums over the drawn problems. Differences are taken resample by resample. Multiplicity: {}.\n",
        a.config.bootstrap,
        a.config.seed,
        match a.config.multiplicity {
            trlvr::study::Multiplicity::Holm => "Holm's step-down procedure over the testable claims",
            trlvr::study::Multiplicity::None => "none (each claim at the study's confidence)",
        }
    );
    let mut notes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (arm, note) in &a.seed_notes {
        notes.entry(note.as_str()).or_default().push(arm);
    }
    for (note, arms) in notes {
        let _ = writeln!(md, "- {}: {note}.", arms.join(", "));
    }
}

/// `study.json`: every number of the report.
fn json_of(input: &Input<'_>) -> Value {
    let runs: Vec<Value> = input
        .costs
        .iter()
        .map(|(k, (c, eval_s))| json!({ "run": k.folder(), "arm": k.arm, "seed": k.seed, "cost": c, "evaluation_s": eval_s }))
        .collect();
    json!({
        "title": input.title,
        "provenance": input.provenance,
        "claims_changed_after_start": input.provenance.declared.claims_hash != input.provenance.claims_hash,
        "declared": input.design.claims,
        "analysis": input.analysis,
        "runs": runs,
        "settings": input.settings,
        "wall_s": input.wall,
    })
}
