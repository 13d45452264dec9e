//! `trlvr data arithmetic`: writes the arithmetic task's training and validation sets
//! (JSONL, `problem` and `answer`: the `deepscaler` layout, and a worked `solution` for
//! `trlvr sft`), disjoint by construction.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use trlvr::data::Problem;
use trlvr::data::arithmetic::{Arithmetic, Layout, Split, worked};

/// Arguments of `trlvr data`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, clap::Subcommand)]
enum Task {
    /// Arithmetic on whole numbers ("What is 17 + 8?"), answers never negative.
    Arithmetic(ArithmeticArgs),
}

#[derive(Debug, clap::Args)]
struct ArithmeticArgs {
    /// Numbers per problem.
    #[arg(long, default_value_t = Arithmetic::default().operands)]
    operands: usize,
    /// Operands are drawn from 0..=max.
    #[arg(long, default_value_t = Arithmetic::default().max)]
    max: u32,
    /// Operators, from + - *.
    #[arg(long, default_value_t = Arithmetic::default().ops)]
    ops: String,
    /// Share of the problem space held out for validation, percent.
    #[arg(long, default_value_t = Arithmetic::default().validation_percent)]
    validation_percent: u32,
    /// Training problems to write.
    #[arg(long, default_value_t = 1000)]
    train: usize,
    /// Validation problems to write.
    #[arg(long, default_value_t = 100)]
    validation: usize,
    /// Seed of the draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The worked solutions' layout: `line` (`3 + 4 = 7. 7 - 2 = 5. The answer is ...`)
    /// or `paragraphs` (each step, and the answer, its own paragraph).
    #[arg(long, value_enum, default_value = "line")]
    layout: LayoutArg,
    /// The folder for train.jsonl and validation.jsonl.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LayoutArg {
    Line,
    Paragraphs,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let Task::Arithmetic(a) = &args.task;
    let task = Arithmetic {
        operands: a.operands,
        max: a.max,
        ops: a.ops.clone(),
        validation_percent: a.validation_percent,
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    for (split, count, name) in
        [(Split::Train, a.train, "train"), (Split::Validation, a.validation, "validation")]
    {
        let problems = task.problems(split, count, a.seed).with_context(|| format!("the {name} split"))?;
        let path = a.out.join(format!("{name}.jsonl"));
        let layout = match a.layout {
            LayoutArg::Line => Layout::Line,
            LayoutArg::Paragraphs => Layout::Paragraphs,
        };
        write(&path, &problems, layout)?;
        eprintln!("{}: {} problems", path.display(), problems.len());
    }
    Ok(())
}

fn write(path: &Path, problems: &[Problem], layout: Layout) -> Result<()> {
    let mut text = Vec::new();
    for p in problems {
        let worked = worked(&p.question, layout).context("the task wrote a question it cannot solve")?;
        let line = serde_json::json!({ "problem": p.question, "answer": p.reference, "solution": worked });
        writeln!(text, "{line}")?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
