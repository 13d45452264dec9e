//! `trlvr study`: the paper's comparison on any model and task from one study file. Arms
//! (recipes) × seeds are trained and evaluated on the same problems; the claims the file
//! declares are read off intervals of a hierarchical bootstrap; `report.md` and
//! `study.json` say which are shown, contradicted, not shown or not testable, and why.
//!
//! | part | where |
//! |---|---|
//! | the study file, checked before anything runs | [`file`] |
//! | running the plan: resume, jobs side by side, MPI | [`runner`] |
//! | a run as `trlvr train`, an evaluation as `trlvr eval` | [`recipes`] |
//! | the report | [`report`], [`plots`] |
//! | figures, the bootstrap, claims and verdicts (no models, no plots) | `trlvr::study` |
//!
//! Files under `--out` (default `runs/<study name>`): `declared.json` (the study's and
//! the claims' hashes at the first start), `warmups/<name>/`, `runs/<arm>-seed<k>/` (a
//! `trlvr train` run directory, with `eval-<evaluation>/` beside its checkpoints),
//! `report.md`, `study.json` and the plots.

pub mod file;
pub mod plots;
pub mod recipes;
pub mod report;
pub mod runner;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use trlvr::study::Analysis;
use trlvr::study::plan::{fingerprint, read_record, write_record};

use crate::model::resolve_model;
use crate::ranks::Ranks;
use file::{Study, WarmupSpec};
use report::{Declared, Provenance};
use runner::{Design, DesignArm, Lab, Log, OnChange};

/// Arguments of `trlvr study`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The study file (TOML); see studies/.
    #[arg(long)]
    config: PathBuf,
    /// Output folder (default: runs/<study name>). A study run again into the same folder
    /// keeps what is finished and resumes the rest.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Runs trained side by side, each on one core's thread (0: one per core). With 1 (the
    /// default) a run has every core.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// When the study file changed under finished runs: set those aside and run them anew
    /// (without it, the study stops and names them).
    #[arg(long)]
    rerun_changed: bool,
    /// Check the study file and print the plan (what is done, what would run), then stop.
    #[arg(long)]
    plan: bool,
    /// Load the plugin libraries the study's recipes list (their code runs in this
    /// process; without it such a study is refused).
    #[arg(long)]
    trust_plugins: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let ranks = Ranks::connect()?;
    let result = study(args, &ranks);
    ranks.finish(result)
}

fn study(args: &Args, ranks: &Ranks) -> Result<()> {
    let log = Log::new();
    // 1. The file, checked before anything runs (read once for its name, which places the
    // output folder and so the warm-ups the recipes name).
    let name = Study::read(&args.config, Path::new("warmups"))?.name;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(&name));
    let warmups = out.join("warmups");
    let study = Study::read(&args.config, &warmups)?;
    let design = design(&study);
    let trained: Vec<_> = design.arms.iter().filter(|a| a.trained).flat_map(|a| a.runs()).collect();
    let lab = recipes::Recipes::new(&study, &warmups).trusting_plugins(args.trust_plugins, &trained)?;
    if args.plan {
        return print_plan(&study, &design, &out, &lab);
    }
    // Every arm's senior poses the evaluation's problems alike.
    same_prompts(&study, &warmups)?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let file = Some(args.config.display().to_string());
    let provenance = declare(&out, &study.text, &serde_json::to_string(&study.file.claims)?, file, ranks)?;

    // 2. The warm-ups.
    warm_up(&study.file.warmups, &warmups, args.rerun_changed, ranks, &log)?;

    // 3. The runs.
    let plan = design.plan(&out, &lab)?;
    let on_change = if args.rerun_changed { OnChange::SetAside } else { OnChange::Refuse };
    let outcome = runner::run(&design, &plan, &lab, args.jobs, on_change, ranks, &log)?;
    if !ranks.leads() {
        return Ok(());
    }

    // 4. The analysis and the report.
    let analysis = Analysis::new(&outcome.results, &design.claims, &design.analysis)?;
    let mut plots = Vec::new();
    plots.extend(plots::claims(&out, &analysis.claims)?);
    plots.extend(plots::over_training(
        &out,
        "reward.png",
        "training reward",
        &curves(&design, &plan, "reward_mean"),
    )?);
    let input = report::Input {
        title: format!("Study: {}", study.name),
        intro: String::new(),
        design: &design,
        analysis: &analysis,
        costs: &outcome.costs,
        provenance,
        figures: report::default_figures(),
        settings: settings(&study)?,
        sections: Vec::new(),
        plots,
        wall: log.seconds(),
    };
    report::write(&out, &input)?;
    for c in &analysis.claims {
        log.say(&format!("{}: {} ({})", c.id, c.verdict.word(), c.why));
    }
    log.say(&format!(
        "report: {} (this start trained {} runs and drew {} evaluations)",
        out.join("report.md").display(),
        outcome.trained_now,
        outcome.evaluated_now
    ));
    Ok(())
}

/// The study's design: its arms, evaluations, claims and analysis.
fn design(study: &Study) -> Design {
    Design {
        name: study.name.clone(),
        arms: study
            .arms
            .iter()
            .map(|a| DesignArm {
                name: a.name.clone(),
                trained: a.train,
                seeds: a.seeds.clone(),
                evaluations: a.evaluations.clone(),
            })
            .collect(),
        evaluations: study.evaluations.iter().map(|e| e.name.clone()).collect(),
        claims: study.claims.clone(),
        analysis: study.file.analysis,
    }
}

/// `--plan`: every run and evaluation, and where it stands.
fn print_plan(study: &Study, design: &Design, out: &Path, lab: &dyn Lab) -> Result<()> {
    use std::io::Write as _;
    let mut w = std::io::stdout().lock();
    writeln!(
        w,
        "study {} ({}): {} claims, output {}",
        study.name,
        study.path.display(),
        design.claims.len(),
        out.display()
    )?;
    for warmup in &study.file.warmups {
        writeln!(
            w,
            "warm-up {}: {} steps of {} from {}",
            warmup.name, warmup.steps, warmup.batch_size, warmup.model
        )?;
    }
    let plan = match design.plan(out, lab) {
        Ok(plan) => plan,
        Err(e) => {
            writeln!(w, "(fingerprints not computed: {e:#}; they are once the warm-ups have run)")?;
            for arm in &design.arms {
                for key in arm.runs() {
                    writeln!(w, "{key}: {}", arm.evaluations.join(", "))?;
                }
            }
            return Ok(());
        }
    };
    for run in &plan.runs {
        let evals: Vec<String> = run
            .evaluations
            .iter()
            .map(|(name, f)| format!("{name} {:?}", plan.eval_state(run, name, f)))
            .collect();
        writeln!(w, "{}: {:?}; evaluations: {}", run.key, plan.run_state(run), evals.join(", "))?;
    }
    Ok(())
}

/// The study's declaration: written at its first start (`definition`: the study file's
/// text, or the demo's design; `claims`: its claims), read at every later one.
pub fn declare(
    out: &Path,
    definition: &str,
    claims: &str,
    file: Option<String>,
    ranks: &Ranks,
) -> Result<Provenance> {
    let path = out.join("declared.json");
    let now = Declared {
        study_hash: fingerprint(definition),
        claims_hash: fingerprint(claims),
        commit: commit().into(),
        at: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
    };
    let declared = match read_record::<Declared>(&path) {
        Some(first) => first,
        None => {
            if ranks.leads() {
                write_record(&path, &now)?;
            }
            now.clone()
        }
    };
    Ok(Provenance {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        file,
        study_hash: now.study_hash,
        claims_hash: now.claims_hash,
        commit: now.commit,
        machine: machine(),
        declared,
    })
}

/// The commit this binary was built from (with `-dirty` when the tree had changes).
pub fn commit() -> &'static str {
    option_env!("TRLVR_COMMIT").unwrap_or("unknown")
}

/// The machine, in words: CPU model, cores, AVX-512 or not.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    #[cfg(target_arch = "x86_64")]
    let simd = if std::arch::is_x86_feature_detected!("avx512f") { ", AVX-512" } else { ", no AVX-512" };
    #[cfg(not(target_arch = "x86_64"))]
    let simd = "";
    format!("{model}, {cores} cores{simd}")
}

/// Trains each warm-up not yet done (rank 0; the others wait), keeping one whose spec is
/// unchanged.
fn warm_up(specs: &[WarmupSpec], dir: &Path, rerun_changed: bool, ranks: &Ranks, log: &Log) -> Result<()> {
    for spec in specs {
        let out = dir.join(&spec.name);
        let record = dir.join(format!("{}.json", spec.name));
        let want = fingerprint(&serde_json::to_string(spec)?);
        let have = read_record::<Value>(&record).and_then(|v| v["fingerprint"].as_str().map(String::from));
        if ranks.leads() {
            match have {
                Some(h) if h == want && out.join("model.safetensors").exists() => {
                    log.say(&format!("warm-up {}: done, kept", spec.name));
                }
                Some(_) if out.exists() && !rerun_changed => bail!(
                    "warm-up {} changed since {} was trained: run again with --rerun-changed to train it anew \
                     (and every run that starts from it), or choose another --out",
                    spec.name,
                    out.display()
                ),
                _ => {
                    if out.exists() {
                        let aside = dir.join(format!("{}.replaced-{}", spec.name, std::process::id()));
                        std::fs::rename(&out, &aside)?;
                        log.say(&format!("warm-up {}: changed, set aside as {}", spec.name, aside.display()));
                    }
                    log.say(&format!("warm-up {}: {} steps of {}", spec.name, spec.steps, spec.batch_size));
                    crate::sft::warm_up(&crate::sft::Args::of(spec, &out))?;
                    write_record(&record, &serde_json::json!({ "fingerprint": want }))?;
                }
            }
        }
        ranks.collective().barrier()?;
    }
    Ok(())
}

/// Every arm's senior must pose the evaluation's problems alike (one tokenizer, one chat
/// family), or their results could not be paired.
fn same_prompts(study: &Study, warmups: &Path) -> Result<()> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for arm in &study.arms {
        let path = &arm.recipe.senior.path;
        // A warm-up's output poses prompts as the model it started from.
        let source = study
            .file
            .warmups
            .iter()
            .find(|w| Path::new(path) == warmups.join(&w.name))
            .map_or(path.clone(), |w| w.model.clone());
        let identity = prompt_identity(&resolve_model(&source)?)?;
        if let Some((other, _)) = seen.iter().find(|(_, id)| *id != identity) {
            bail!(
                "{}: arms {other} and {} would be evaluated on different prompts (their seniors have other tokenizers \
                 or chat templates): arms can only be compared on the same problems",
                study.path.display(),
                arm.name
            );
        }
        seen.push((arm.name.clone(), identity));
    }
    Ok(())
}

/// What decides a model's prompts: its tokenizer file and its family.
fn prompt_identity(path: &Path) -> Result<String> {
    if !path.is_dir() {
        return Ok(path.display().to_string());
    }
    let tokenizer = trlvr::data::hash_files(&[path.join("tokenizer.json")])
        .with_context(|| format!("{}: reading its tokenizer", path.display()))?;
    let config: Value = serde_json::from_str(&std::fs::read_to_string(path.join("config.json"))?)?;
    Ok(format!("{tokenizer:016x} {}", config["model_type"]))
}

/// Each arm's runs' `key` per step, from their metrics (arms not trained left out).
fn curves(design: &Design, plan: &trlvr::study::Plan, key: &str) -> Vec<plots::ArmCurves> {
    design
        .arms
        .iter()
        .filter(|a| a.trained)
        .map(|a| {
            let runs = a
                .runs()
                .iter()
                .map(|k| {
                    let text =
                        trlvr::lines::read_text(&plan.run_dir(k).join("metrics.jsonl")).unwrap_or_default();
                    text.lines()
                        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                        .filter_map(|v| Some((v["step"].as_f64()?, v[key].as_f64()?)))
                        .collect()
                })
                .collect();
            (a.name.clone(), runs)
        })
        .collect()
}

/// The settings the report lists.
fn settings(study: &Study) -> Result<Vec<String>> {
    let mut lines = vec![format!("seeds: {:?}", study.file.seeds)];
    for w in &study.file.warmups {
        lines.push(format!("warm-up {}: {}", w.name, serde_json::to_string(w)?));
    }
    for a in &study.arms {
        let r = &a.recipe;
        if !a.train {
            lines.push(format!("arm {}: senior {}, not trained: evaluated as it is", a.name, r.senior.path));
            continue;
        }
        lines.push(format!(
            "arm {}: {} (schedule {}, objective {}{}), senior {}, {} steps of {} prompts × {}, lr {}, seeds {:?}",
            a.name,
            r.arm.name(),
            r.schedule().name,
            r.objective().name,
            r.objective().config.get("beta").map_or(String::new(), |b| format!(" β {b}")),
            r.senior.path,
            r.train.steps,
            r.train.prompts_per_step,
            r.train.group_size,
            r.train.lr,
            a.seeds,
        ));
    }
    lines.push(format!("evaluation: {}", serde_json::to_string(&study.file.evaluation)?));
    for e in &study.evaluations {
        lines.push(format!("evaluation {}: {}", e.name, serde_json::to_string(e)?));
    }
    lines.push(format!("analysis: {}", serde_json::to_string(&study.file.analysis)?));
    Ok(lines)
}
