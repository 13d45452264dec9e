//! Long, on purpose: the command's steps (input, models, samples, figures, files) read in
//! the order they run, with the dataset and model identities they record.
//!
//! `trlvr eval`: solo and handoff pass@k, the communication tax, legibility and drift of a
//! senior/junior pair on math datasets (the measurements live in `trlvr::eval`).
//!
//! Writes into `--out`: `samples.jsonl` (every sample, per problem, appended as batches
//! finish: a rerun resumes, a finished run is re-graded without sampling), `eval.json`
//! (every figure with its interval, per dataset and macro, settings, seeds, models) and
//! `eval.md` (the tables).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::prelude::Device;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use trlvr::collective::agree;
use trlvr::data::hash_files;
use trlvr::data::{DEFAULT_TEMPLATE, DataSpec, Dataset, Layout, user_message};
use trlvr::device::parse_device;
use trlvr::eval::{
    EvalConfig, EvalProblem, EvalProgress, EvalSet, Evaluation, Mode, Phase, Report, SampleStore, SoloSource,
};
use trlvr::prelude::*;
use trlvr::rollout::MAX_NEW_TOKENS;

use crate::model::{ChatChoice, Loaded, Pair, resolve_model};
use crate::options::{DeviceArgs, Grading, PairArgs, SamplingArgs};
use crate::precision::Precision;
use crate::ranks::Ranks;

/// Arguments of `trlvr eval`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The senior and the junior.
    #[command(flatten)]
    pair: PairArgs,
    /// Datasets, comma-separated: a JSONL file, optionally with its layout
    /// (`file.jsonl:gsm8k|math|deepscaler`; otherwise read from its fields), or a shipped
    /// set by name (`gsm8k-test`, `math500-test`).
    #[arg(long, value_delimiter = ',', required = true)]
    data: Vec<String>,
    /// Samples per problem, in each mode.
    #[arg(long, default_value_t = EvalConfig::default().n)]
    n: usize,
    /// The k of pass@k, comma-separated (default: 1, 2, 4, 8 up to n).
    #[arg(long, value_delimiter = ',')]
    k: Option<Vec<usize>>,
    /// Evaluate the first N problems of each dataset.
    #[arg(long)]
    limit: Option<usize>,
    /// Output folder (samples, eval.json, eval.md).
    #[arg(long, default_value = "eval-out")]
    out: PathBuf,
    /// Response cap in tokens, one budget shared by senior and junior.
    #[arg(long, default_value_t = MAX_NEW_TOKENS)]
    max_new_tokens: usize,
    /// Paragraph turns before a handoff chain stops.
    #[arg(long, default_value_t = EvalConfig::default().max_rounds)]
    max_rounds: usize,
    /// Problems per engine call (rows = problems × n).
    #[arg(long, alias = "batch", default_value_t = EvalConfig::default().batch_problems)]
    batch_size: usize,
    /// Sampling (the evaluation's sampler, `Sampling::evaluation`, unless given).
    #[command(flatten)]
    sampling: SamplingArgs,
    /// How answers are found: `lenient` (the free-text grader: a box, `####`, a "final
    /// answer" phrase, the last math environment or number) or `boxed` (the training reward: the last `\boxed{}` only).
    #[arg(long, value_enum, default_value = "lenient")]
    grading: Grading,
    /// Bootstrap resamples for the intervals.
    #[arg(long, default_value_t = EvalConfig::default().bootstrap)]
    bootstrap: usize,
    /// The handoff mode's schedule, by its registered name with its own defaults (`word`:
    /// the training schedule, which the senior cannot dodge by formatting); default the
    /// paper's paragraph alternation (method.md §5).
    #[arg(long, value_name = "SCHEDULE")]
    handoff: Option<String>,
    /// An earlier evaluation's `--out` of the same senior, data and sampler (another
    /// handoff schedule, say): its solo samples are taken, and with the same junior their
    /// legibility and drift, so only the handoff samples are drawn.
    #[arg(long, value_name = "DIR")]
    solo_from: Option<PathBuf>,
    /// Where both models run, and in what precision.
    #[command(flatten)]
    device: DeviceArgs,
}

/// One evaluation's settings: from the command line, or from a study file.
#[derive(Debug, Clone)]
pub struct Job {
    /// The senior.
    pub senior: PathBuf,
    /// The junior (default: the senior, self-paired).
    pub junior: Option<PathBuf>,
    /// Datasets, as `--data` names them.
    pub data: Vec<String>,
    /// The first N problems of each.
    pub limit: Option<usize>,
    /// Samples, k, sampler, budget, rounds, seed, batch, bootstrap.
    pub config: EvalConfig,
    /// How answers are found.
    pub grading: Grading,
    /// The handoff mode's schedule (name and settings); `None`: paragraph alternation.
    pub handoff: Option<(String, Value)>,
    /// Both models' device.
    pub device: String,
    /// Their precision.
    pub dtype: Option<Precision>,
    /// How the senior writes prompts.
    pub chat_template: ChatChoice,
    /// An earlier evaluation's folder whose solo samples (and measures) are taken.
    pub solo_from: Option<PathBuf>,
    /// Output folder.
    pub out: PathBuf,
    /// A study's run: progress lines prefixed with this, no tables printed.
    pub label: Option<String>,
}

impl Args {
    /// The evaluation these options ask for.
    fn job(&self) -> Job {
        Job {
            senior: self.pair.senior.clone(),
            junior: self.pair.junior.clone(),
            data: self.data.clone(),
            limit: self.limit,
            config: config(self),
            grading: self.grading,
            handoff: self.handoff.clone().map(|name| (name, Value::Null)),
            device: self.device.device.clone(),
            dtype: self.device.dtype,
            chat_template: self.pair.chat_template.clone(),
            solo_from: self.solo_from.clone(),
            out: self.out.clone(),
            label: None,
        }
    }
}

impl Job {
    fn junior_path(&self) -> &Path {
        self.junior.as_deref().unwrap_or(&self.senior)
    }
}

/// A dataset as the user named it, resolved.
pub struct Resolved {
    /// Where it is and how it is laid out.
    pub spec: DataSpec,
    /// Its problems.
    pub data: Dataset,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let ranks = Ranks::connect()?;
    let result = evaluate(&args.job(), &ranks).map(|_| ());
    ranks.finish(result)
}

/// Evaluates: the input checked, the samples drawn (or read back), the figures written
/// (rank 0); the report.
pub fn evaluate(job: &Job, ranks: &Ranks) -> Result<Report> {
    let wall = Instant::now();
    // Models named by name (`smollm2-135m`) or Hugging Face id become the files they name,
    // once: what is loaded, fingerprinted and recorded.
    let model = |path: &Path| resolve_model(&path.to_string_lossy());
    let job = &Job {
        senior: model(&job.senior)?,
        junior: job.junior.as_deref().map(model).transpose()?,
        ..job.clone()
    };
    // 1. Everything that can be wrong with the input, before any sampling.
    let datasets = job.data.iter().map(|d| resolve(d, job.limit)).collect::<Result<Vec<_>>>()?;
    let device = parse_device(&ranks.device(&job.device))?;
    let pair = load_pair(job, &device)?;
    let classes = TokenClasses::from_tokenizer(&pair.senior.tokenizer, &pair.senior.eos)?;
    let sets = eval_sets(&datasets, &pair.senior, job.grading)?;
    let decode = |ids: &[TokenId]| pair.senior.decode(ids);
    let detokenizer = Detokenizer::new(&decode);
    let detokenize = |ids: &[TokenId]| detokenizer.text(ids);
    let handoff = match &job.handoff {
        Some((name, config)) => Some(
            crate::plugins::registry(&[])?
                .schedule(name, config)
                .with_context(|| format!("the handoff schedule {name:?}"))?,
        ),
        None => None,
    };
    let mut eval = Evaluation::new(
        &pair.senior.decoder,
        pair.junior_decoder(),
        &classes,
        job.config.clone(),
        &detokenize,
    )?
    .with_collective(ranks.collective());
    if let Some(schedule) = &handoff {
        eval = eval.with_handoff(&**schedule)?;
    }

    // 2. The samples: those in the output folder, then the missing ones.
    std::fs::create_dir_all(&job.out).with_context(|| format!("creating {}", job.out.display()))?;
    let models = Identities::of(job, &pair)?;
    let settings = sample_settings(&eval, &models, job);
    let samples_path = job.out.join("samples.jsonl");
    let source = job.solo_from.as_deref().map(|dir| solo_source(dir, &settings)).transpose()?;
    let mut store = open_store(&samples_path, &settings, &sets, ranks, source.as_ref())?;
    let eval = match &source {
        Some(source) => eval.with_solo_source(source),
        None => eval,
    };
    let report = sample_and_measure(&eval, &sets, &mut store, job.label.as_deref(), ranks)?;
    if !ranks.leads() {
        return Ok(report);
    }

    // 3. eval.json and eval.md (rank 0).
    let written = Written {
        datasets: &datasets,
        models: &models,
        samples: &samples_path,
        decode_errors: detokenizer.errors(),
    };
    write_outputs(job, &report, &written, wall.elapsed().as_secs_f64())?;
    Ok(report)
}

/// The senior and the junior, which must share one vocabulary.
fn load_pair(job: &Job, device: &Device) -> Result<Pair> {
    let pair = PairArgs {
        senior: job.senior.clone(),
        junior: job.junior.clone(),
        chat_template: job.chat_template.clone(),
    }
    .load(device, job.dtype)?;
    if let Some(junior) = &pair.junior
        && (junior.tokenizer.get_vocab(true) != pair.senior.tokenizer.get_vocab(true)
            || junior.config.vocab_size != pair.senior.config.vocab_size)
    {
        bail!(
            "{} and {} have different vocabularies ({} and {} ids); senior and junior must share one",
            job.senior.display(),
            job.junior_path().display(),
            pair.senior.config.vocab_size,
            junior.config.vocab_size
        );
    }
    Ok(pair)
}

/// Each dataset's problems as the senior's chat prompts, with its grader.
fn eval_sets(datasets: &[Resolved], senior: &Loaded, grading: Grading) -> Result<Vec<EvalSet>> {
    datasets
        .iter()
        .map(|d| {
            let problems = d
                .data
                .problems
                .iter()
                .map(|p| {
                    let prompt = senior.prompt(&user_message(DEFAULT_TEMPLATE, &p.question), false)?;
                    Ok(EvalProblem { id: p.line, prompt, reference: p.reference.clone() })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(EvalSet::new(d.data.name(), problems, grading.verifier(d.data.format)))
        })
        .collect()
}

/// The evaluation's settings: the defaults, with what the command line gives.
fn config(args: &Args) -> EvalConfig {
    let defaults = EvalConfig::default();
    let ks = match &args.k {
        Some(ks) => ks.clone(),
        None => defaults.ks.iter().copied().filter(|&k| k <= args.n).collect(),
    };
    EvalConfig {
        n: args.n,
        ks,
        sampling: args.sampling.sampling(defaults.sampling),
        max_new_tokens: args.max_new_tokens,
        max_rounds: args.max_rounds,
        seed: args.sampling.seed,
        batch_problems: args.batch_size,
        bootstrap: args.bootstrap,
        ..defaults
    }
}

/// Who the senior and the junior are ([`identity`]), for the samples' settings and
/// eval.json.
struct Identities {
    senior: Value,
    junior: Value,
    /// The prompts' template where it is not the senior's own ([`ChatChoice::identity`]).
    chat_template: Option<String>,
}

impl Identities {
    fn of(job: &Job, pair: &Pair) -> Result<Self> {
        let senior = identity(&job.senior, &pair.senior)?;
        let junior = match (&job.junior, &pair.junior) {
            (Some(path), Some(j)) => identity(path, j)?,
            _ => senior.clone(),
        };
        Ok(Self { senior, junior, chat_template: job.chat_template.identity()? })
    }
}

/// What the samples depend on: a resumed run must have drawn them with the same.
fn sample_settings(eval: &Evaluation<'_>, models: &Identities, job: &Job) -> Value {
    let mut settings = eval.sample_settings();
    settings["senior"] = models.senior.clone();
    settings["junior"] = models.junior.clone();
    settings["template"] = json!(DEFAULT_TEMPLATE);
    if let Some(chat) = &models.chat_template {
        settings["chat_template"] = json!(chat);
    }
    if let Some(precision) = job.dtype.filter(|&p| p != Precision::F32) {
        settings["dtype"] = json!(precision.name());
    }
    settings
}

/// The solo samples of the evaluation in `dir` (and their measures, from its eval.json).
fn solo_source(dir: &Path, settings: &Value) -> Result<SoloSource> {
    let report_path = dir.join("eval.json");
    let report: Option<Report> = match std::fs::read_to_string(&report_path) {
        Ok(text) => {
            Some(serde_json::from_str(&text).with_context(|| format!("reading {}", report_path.display()))?)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", report_path.display())),
    };
    Ok(SoloSource::read(&dir.join("samples.jsonl"), report.as_ref(), settings)?)
}

/// The samples drawn so far. Rank 0 opens (and mends) the samples file and adds the solo
/// samples `source` has; the other ranks then read what it holds, once every rank agrees
/// on the build, problems and settings.
fn open_store(
    path: &Path,
    settings: &Value,
    sets: &[EvalSet],
    ranks: &Ranks,
    source: Option<&SoloSource>,
) -> Result<SampleStore> {
    let mut store = if ranks.leads() { Some(SampleStore::open(path, settings)?) } else { None };
    if let (Some(store), Some(source)) = (store.as_mut(), source) {
        let taken = source.adopt(store)?;
        let (_, measured) = source.len();
        eprintln!(
            "{}: took {taken} problems' solo samples from {} ({measured} with their legibility)",
            path.display(),
            source.path().display()
        );
    }
    if ranks.size() > 1 {
        let build = std::env::current_exe().context("finding this executable")?;
        agree(ranks.collective(), "trlvr build", &hash_files(&[build])?.to_le_bytes())?;
        let problems: Vec<_> = sets
            .iter()
            .flat_map(|s| s.problems.iter().map(|p| (&s.name, p.id, &p.prompt, &p.reference)))
            .collect();
        agree(ranks.collective(), "problems", &serde_json::to_vec(&problems)?)?;
        agree(ranks.collective(), "evaluation settings", settings.to_string().as_bytes())?;
    }
    let store = match store.take() {
        Some(store) => store,
        None => SampleStore::read(path, settings)?,
    };
    if !store.is_empty() && ranks.leads() {
        eprintln!("{}: {} problem samples already drawn; resuming", path.display(), store.len());
    }
    Ok(store)
}

/// Draws the missing samples, then grades and measures them all (progress on rank 0).
fn sample_and_measure(
    eval: &Evaluation<'_>,
    sets: &[EvalSet],
    store: &mut SampleStore,
    label: Option<&str>,
    ranks: &Ranks,
) -> Result<Report> {
    let bar = if label.is_some() { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} problem-modes, {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let leads = ranks.leads();
    let throughput = eval.sample(sets, store, &mut |p| {
        if leads {
            show(&bar, p, label)
        }
    })?;
    bar.set_position(0);
    let report = eval.measure(sets, store, throughput, &mut |p| {
        if leads {
            show(&bar, p, label)
        }
    })?;
    bar.finish_and_clear();
    Ok(report)
}

/// What eval.json records beside the report.
struct Written<'a> {
    datasets: &'a [Resolved],
    models: &'a Identities,
    samples: &'a Path,
    decode_errors: usize,
}

/// The text of a sample's tokens for grading. A decode error is graded as an empty
/// answer (wrong), as the sample cannot be read, but counted and warned about, so that
/// it is never mistaken for the model's failure.
struct Detokenizer<'a> {
    decode: &'a (dyn Fn(&[TokenId]) -> Result<String> + Sync),
    errors: std::sync::atomic::AtomicUsize,
}

impl<'a> Detokenizer<'a> {
    fn new(decode: &'a (dyn Fn(&[TokenId]) -> Result<String> + Sync)) -> Self {
        Self { decode, errors: std::sync::atomic::AtomicUsize::new(0) }
    }

    fn text(&self, ids: &[TokenId]) -> String {
        (self.decode)(ids).unwrap_or_else(|e| {
            if self.errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
                tracing::warn!("decoding a sample failed ({e:#}); graded as wrong and counted in eval.json's decode_errors");
            }
            String::new()
        })
    }

    fn errors(&self) -> usize {
        self.errors.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Writes eval.json (every figure, with the settings, models and datasets) and eval.md
/// (the tables, also printed).
fn write_outputs(job: &Job, report: &Report, written: &Written<'_>, wall_seconds: f64) -> Result<()> {
    let mut out = serde_json::to_value(report)?;
    out["grading"] = json!(job.grading.name());
    out["models"] = json!({
        "senior": written.models.senior, "junior": written.models.junior, "self_paired": job.junior.is_none()
    });
    if let Some((name, config)) = &job.handoff {
        out["handoff"] = json!({ "name": name, "config": config });
    }
    out["datasets"] = written
        .datasets
        .iter()
        .map(|d| json!({ "name": d.data.name(), "path": d.spec.path, "layout": d.spec.layout, "problems": d.data.problems.len(), "limit": job.limit }))
        .collect();
    out["template"] = json!(DEFAULT_TEMPLATE);
    out["samples"] = json!(written.samples);
    if let Some(dir) = &job.solo_from {
        out["solo_from"] = json!(dir);
    }
    out["wall_seconds"] = json!(wall_seconds);
    out["decode_errors"] = json!(written.decode_errors);
    out["units"] = json!({
        "pass_at_k": "percent", "tax.points": "percentage points", "tax.ratio": "handoff / solo",
        "junior_ce, kl_*, junior_nll*": "nats per token", "junior_top1": "percent"
    });
    let json_path = job.out.join("eval.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&out)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    let mut header = vec![
        format!("senior: `{}`", job.senior.display()),
        format!(
            "junior: `{}`{}",
            job.junior_path().display(),
            if job.junior.is_none() { " (self-paired)" } else { "" }
        ),
        format!(
            "grading: {}; handoff: {}; seed {}; wall time {wall_seconds:.1} s",
            job.grading.name(),
            job.handoff.as_ref().map_or("paragraph alternation", |(name, _)| name.as_str()),
            job.config.seed
        ),
    ];
    if written.decode_errors > 0 {
        header
            .push(format!("**{} samples could not be decoded** and are graded wrong", written.decode_errors));
    }
    let md = report.to_markdown(&header);
    let md_path = job.out.join("eval.md");
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    if job.label.is_some() {
        return Ok(());
    }
    eprintln!("{md}");
    eprintln!(
        "wrote {}, {} and {} in {wall_seconds:.1} s ({} tokens sampled at {:.1} tokens/s)",
        json_path.display(),
        md_path.display(),
        written.samples.display(),
        report.throughput.tokens(),
        report.throughput.tokens_per_second()
    );
    Ok(())
}

fn show(bar: &ProgressBar, p: EvalProgress, label: Option<&str>) {
    // Without a terminal (logs, CI) the bar is hidden: one line per finished batch, and
    // one per tenth of the problems measured.
    let measuring = p.phase == Phase::Measuring;
    let prefix = label.map_or(String::new(), |l| format!("[{l}] "));
    if bar.is_hidden() && p.batch.is_none() && p.done > bar.position() as usize {
        if !measuring {
            eprintln!(
                "{prefix}{}/{} problem-modes sampled, {} tokens at {:.1} tok/s",
                p.done,
                p.total,
                p.tokens,
                p.tokens as f64 / p.seconds.max(1e-9)
            );
        } else if p.done == p.total || p.done.is_multiple_of(p.total.div_ceil(10)) {
            eprintln!("{prefix}{}/{} problems graded and measured", p.done, p.total);
        }
    }
    bar.set_length(p.total as u64);
    bar.set_position(p.done as u64);
    match p.phase {
        Phase::Sampling(mode) => {
            let mode = if mode == Mode::Solo { "solo" } else { "handoff" };
            let rate = p.tokens as f64 / p.seconds.max(1e-9);
            let rows =
                p.batch.map_or(String::new(), |b| format!(", batch: {}/{} rows writing", b.live, b.rows));
            bar.set_message(format!("{mode}{rows}, {} tokens at {rate:.1} tok/s", p.tokens));
        }
        Phase::Measuring => bar.set_message("problems graded; legibility and drift measured"),
    }
}

/// The shipped test sets (assets/math/, with their provenance in assets/NOTICE.md), also
/// inside the binary, so that an installed `trlvr` finds them without the source tree.
const SHIPPED: [(&str, Layout, &[u8]); 2] = [
    ("gsm8k-test", Layout::Gsm8k, include_bytes!("../assets/math/gsm8k-test.jsonl")),
    ("math500-test", Layout::Math, include_bytes!("../assets/math/math500-test.jsonl")),
];

/// Resolves a `--data` entry and reads the dataset.
pub fn resolve(entry: &str, limit: Option<usize>) -> Result<Resolved> {
    let (name, layout) = match entry.rsplit_once(':') {
        Some((path, layout)) if !layout.contains('/') && !path.is_empty() => {
            (path, Some(parse_layout(layout, path)?))
        }
        _ => (entry, None),
    };
    let shipped = SHIPPED.iter().find(|(n, _, _)| *n == name);
    let path = if Path::new(name).is_file() {
        PathBuf::from(name)
    } else if let Some((n, _, bytes)) = shipped {
        shipped_file(n, bytes)?
    } else {
        bail!("{name}: no such dataset file (shipped sets: gsm8k-test, math500-test)");
    };
    let shipped = shipped.map(|(n, layout, _)| (n, layout));
    let layout = match (layout, shipped) {
        (Some(layout), _) => layout,
        (None, Some((_, layout))) if !Path::new(name).is_file() => *layout,
        _ => infer_layout(&path)?,
    };
    let spec = DataSpec { limit, ..DataSpec::new(&path, layout) };
    let data = Dataset::load(&spec)?;
    Ok(Resolved { spec, data })
}

/// A shipped set's file: the repository's (`assets/math/`, from the working folder or
/// the source tree this binary was built from), else the copy this binary carries,
/// written once under `~/.cache/trlvr/data/` (`$XDG_CACHE_HOME/trlvr/data/`).
fn shipped_file(name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let file = format!("{name}.jsonl");
    let source_tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/math").join(&file);
    for path in [Path::new("assets/math").join(&file), source_tree] {
        if path.is_file() {
            return Ok(path);
        }
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .context("no cache folder for the shipped data (set HOME or XDG_CACHE_HOME)")?
        .join("trlvr/data");
    copy_once(&cache, &file, bytes)
}

/// `dir/file` holding `bytes`: left as it is when it does, (re)written otherwise.
fn copy_once(dir: &Path, file: &str, bytes: &[u8]) -> Result<PathBuf> {
    let path = dir.join(file);
    if std::fs::read(&path).is_ok_and(|b| b == bytes) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Written beside, then renamed: two processes never read half a file.
    let part = dir.join(format!("{file}.{}.part", std::process::id()));
    std::fs::write(&part, bytes).with_context(|| format!("writing {}", part.display()))?;
    std::fs::rename(&part, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

fn parse_layout(name: &str, path: &str) -> Result<Layout> {
    Ok(match name.to_lowercase().as_str() {
        "gsm8k" => Layout::Gsm8k,
        "math" => Layout::Math,
        "deepscaler" | "deep-scale-r" => Layout::DeepScaleR,
        _ => bail!("{path}: unknown dataset layout `{name}` (expected gsm8k, math or deepscaler)"),
    })
}

/// The layout whose fields the file's first problem line has.
fn infer_layout(path: &Path) -> Result<Layout> {
    let text = trlvr::lines::read_text(path).with_context(|| format!("reading {}", path.display()))?;
    let Some((i, line)) = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty()) else {
        bail!("{}: no problems in the file", path.display());
    };
    let value: Value = serde_json::from_str(line)
        .with_context(|| format!("{}, line {}: not JSON", path.display(), i + 1))?;
    let has = |field: &str| value.get(field).is_some();
    Ok(if has("question") && has("answer") {
        Layout::Gsm8k
    } else if has("problem") && has("solution") {
        Layout::Math
    } else if has("problem") && has("answer") {
        Layout::DeepScaleR
    } else {
        let fields: Vec<&str> =
            value.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        bail!(
            "{}, line {}: unknown dataset layout: the line has fields [{}], not question/answer (gsm8k), \
             problem/solution (math) or problem/answer (deepscaler); name the layout as FILE:LAYOUT",
            path.display(),
            i + 1,
            fields.join(", ")
        )
    })
}

/// Who a model is: its path, architecture and [`model_fingerprint`], so resumed samples come
/// from the same weights.
fn identity(path: &Path, model: &Loaded) -> Result<Value> {
    let c = &model.config;
    Ok(json!({
        "path": path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        "family": format!("{:?}", c.model_type),
        "vocab_size": c.vocab_size,
        "layers": c.num_hidden_layers,
        "hidden_size": c.hidden_size,
        "fingerprint": model_fingerprint(path)?,
    }))
}

/// [`trlvr::data::hash_files`] of a model's weight and config files (a directory's
/// `*.safetensors` and `*.json`, or the one file).
pub fn model_fingerprint(path: &Path) -> Result<String> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "safetensors" || e == "json"))
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    let hash =
        trlvr::data::hash_files(&files).with_context(|| format!("fingerprinting {}", path.display()))?;
    Ok(format!("{hash:016x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary's copy of a shipped set is written once, and again only when it differs.
    #[test]
    fn shipped_sets_are_copied_out_of_the_binary_once() {
        let dir = std::env::temp_dir().join(format!("trlvr-shipped-{}", std::process::id()));
        let (name, _, bytes) = SHIPPED[1];
        let path = copy_once(&dir, &format!("{name}.jsonl"), bytes).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let written = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(copy_once(&dir, &format!("{name}.jsonl"), bytes).unwrap(), path);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), written, "not rewritten");
        std::fs::write(&path, b"damaged").unwrap();
        copy_once(&dir, &format!("{name}.jsonl"), bytes).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "a changed copy is mended");
        let data = Dataset::load(&DataSpec::new(&path, Layout::Math)).unwrap();
        assert_eq!(data.problems.len(), 500);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A sample that cannot be decoded reads as an empty answer, and every one is counted.
    #[test]
    fn decode_errors_are_counted_not_hidden() {
        let decode = |ids: &[TokenId]| {
            if ids.contains(&7) { bail!("id 7 is not in the vocabulary") } else { Ok(format!("{ids:?}")) }
        };
        let detokenizer = Detokenizer::new(&decode);
        assert_eq!(detokenizer.text(&[1, 2]), "[1, 2]");
        assert_eq!(detokenizer.text(&[1, 7]), "");
        assert_eq!(detokenizer.text(&[7]), "");
        assert_eq!(detokenizer.errors(), 2);
    }

    /// A change anywhere in a weight file changes the fingerprint, the middle included.
    #[test]
    fn the_fingerprint_covers_every_byte() {
        let dir = std::env::temp_dir().join(format!("trlvr-fingerprint-{}", std::process::id()));
        let (a, b) = (dir.join("a"), dir.join("b"));
        let mut bytes = vec![7u8; 3 << 20];
        for (folder, byte) in [(&a, 7u8), (&b, 8u8)] {
            std::fs::create_dir_all(folder).unwrap();
            bytes[3 << 19] = byte;
            std::fs::write(folder.join("model.safetensors"), &bytes).unwrap();
            std::fs::write(folder.join("config.json"), "{}").unwrap();
        }
        assert_ne!(model_fingerprint(&a).unwrap(), model_fingerprint(&b).unwrap());
        std::fs::write(b.join("model.safetensors"), std::fs::read(a.join("model.safetensors")).unwrap())
            .unwrap();
        assert_eq!(model_fingerprint(&a).unwrap(), model_fingerprint(&b).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
