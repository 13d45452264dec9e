//! What the study is: the command's arguments, the RL settings of a full and a quick
//! run, and what every stage shares (the clock, the cores, the device, the task).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use burn::prelude::Device;
use trlvr::device::parse_device;
use trlvr::train::Example;
use trlvr::vocab::TokenClasses;

use super::arms::{Context, RlSettings};
use super::task::{Split, SumTask};

/// Arguments of `trlvr demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A two-minute version (smaller models, budget and evaluation) for CI and first contact.
    #[arg(long)]
    pub quick: bool,
    /// Output folder (models are cached under it).
    #[arg(long, default_value = "runs/demo")]
    pub out: PathBuf,
    /// Seeds of the arms, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5")]
    pub seeds: Vec<u64>,
    /// Runs trained side by side (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Override the rollout-token budget of each arm.
    #[arg(long)]
    pub token_budget: Option<usize>,
    /// Override the RL learning rate.
    #[arg(long)]
    pub lr: Option<f64>,
    /// Read the comparisons of an `eval.json` this command wrote, print the verdicts they
    /// give as JSON and exit (no training): to check a report, or what-if tables.
    #[arg(long, value_name = "EVAL_JSON")]
    pub verdicts_from: Option<PathBuf>,
    /// Device: flex (CPU), cuda[:N], tch.
    #[arg(long, default_value = "flex")]
    pub device: String,
}

fn rl_settings(quick: bool) -> RlSettings {
    if quick {
        RlSettings {
            token_budget: 30_000,
            prompts_per_step: 4,
            group_size: 8,
            lr: 2e-4,
            beta: 0.05,
            sweep_betas: vec![0.05, 1.0],
            probe_every: 5,
            probe_problems: 16,
            eval_problems: 48,
            eval_n: 2,
        }
    } else {
        RlSettings {
            token_budget: 120_000,
            prompts_per_step: 4,
            group_size: 8,
            lr: 1e-4,
            beta: 0.05,
            sweep_betas: vec![0.01, 0.1, 1.0, 10.0],
            probe_every: 10,
            probe_problems: 32,
            eval_problems: 128,
            eval_n: 4,
        }
    }
}

pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// What every stage shares: the clock, the cores, the device, the task and the RL
/// settings.
pub struct Study {
    pub started: Instant,
    pub load_before: String,
    pub threads: usize,
    pub device: Device,
    pub task: SumTask,
    pub classes: TokenClasses,
    pub rl: RlSettings,
}

impl Study {
    pub fn new(args: &Args) -> Result<Self> {
        let started = Instant::now();
        let load_before = load_average();
        if args.seeds.is_empty() {
            bail!("--seeds needs at least one seed");
        }
        let threads = match args.jobs {
            0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            n => n,
        };
        let device: Device = parse_device(&args.device)?;
        let task = SumTask::default();
        task.validate()?;
        let classes = task.classes()?;
        let mut rl = rl_settings(args.quick);
        rl.token_budget = args.token_budget.unwrap_or(rl.token_budget);
        rl.lr = args.lr.unwrap_or(rl.lr);
        std::fs::create_dir_all(&args.out)?;
        Ok(Self { started, load_before, threads, device, task, classes, rl })
    }

    /// Seconds since the command started.
    pub fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    pub fn log(&self, line: &str) {
        eprintln!("[{:>5.0}s] {line}", self.seconds());
    }

    /// The training problems and the held-out evaluation problems.
    pub fn context(&self) -> Result<Context<'_>> {
        let task = &self.task;
        Ok(Context {
            task,
            classes: &self.classes,
            train: task
                .problems(Split::Train, 4096, 11)?
                .iter()
                .map(|p| Example { prompt: task.prompt(p), reference: p.sum().to_string() })
                .collect(),
            eval: task.problems(Split::Validation, self.rl.eval_problems, 1_000_003)?,
            rl: &self.rl,
        })
    }
}
