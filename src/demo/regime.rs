//! The demo's two regimes, each a task with its own models, KL-Reg grid and ceilings:
//!
//! - **legible route**, the setting the paper is about: every plain chain fits the cap, so
//!   a senior the junior can read can be as accurate as one that writes shorthand; the
//!   shorthand is still cheaper per token, so GRPO has a reason to drift. The numbers are
//!   larger than the stress test's, so the base's arithmetic leaves room to learn.
//! - **stress test**: plain chains of the longest sums overrun the cap, so the accurate
//!   route is one the junior cannot read. Claim 1 and claim 4 are decided there by the
//!   task's wall, and the design says so before the run (see [`Ceilings`]).

use std::fmt::Write as _;

use anyhow::Result;
use serde::Serialize;
use serde_json::json;
use trlvr::objective::KlEstimator;
use trlvr::train::SftConfig;
use trlvr_models::ModelConfig;

use super::task::{EOS, Problem, SumTask, chain_tokens};

/// The shape of one Qwen3-style decoder.
#[derive(Debug, Clone, Serialize)]
pub struct Shape {
    /// Decoder blocks.
    pub layers: usize,
    /// Residual width.
    pub hidden: usize,
    /// Query heads (key/value heads are half, at least 1).
    pub heads: usize,
}

impl Shape {
    /// The model config for a vocabulary of `vocab` ids.
    pub fn config(&self, vocab: usize) -> Result<ModelConfig> {
        let head_dim = self.hidden / self.heads;
        let value = json!({
            "model_type": "qwen3", "vocab_size": vocab, "hidden_size": self.hidden,
            "intermediate_size": 3 * self.hidden, "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads, "num_key_value_heads": (self.heads / 2).max(1),
            "head_dim": head_dim, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "tie_word_embeddings": true, "max_position_embeddings": 128,
        });
        Ok(serde_json::from_value(value)?)
    }
}

/// How one model is made: shape, data mix and supervised settings.
#[derive(Debug, Clone, Serialize)]
pub struct Recipe {
    /// Cache folder name prefix.
    pub name: &'static str,
    /// Architecture.
    pub shape: Shape,
    /// Shorthand probabilities per chain, drawn uniformly (each step of a chain is in
    /// shorthand with the chain's probability).
    pub shorthand_mix: Vec<f64>,
    /// Supervised settings.
    pub sft: SftConfig,
    /// Seed of the weights' initialisation and of the training problems.
    pub seed: u64,
}

/// KL-Reg's grid, fixed before the run: each β with each estimator, at the first `seeds`
/// seeds of the demo.
#[derive(Debug, Clone, Serialize)]
pub struct KlGrid {
    /// The β values.
    pub betas: Vec<f64>,
    /// The estimators (`k3`, the paper's; `k3plus`).
    pub estimators: Vec<KlEstimator>,
    /// Seeds per setting.
    pub seeds: usize,
}

/// One regime of the demo.
#[derive(Debug, Clone, Serialize)]
pub struct Regime {
    /// Folder and key: `legible` or `stress`.
    pub name: &'static str,
    /// In the report's words.
    pub title: &'static str,
    /// The task.
    pub task: SumTask,
    /// Base, junior, control.
    pub recipes: [Recipe; 3],
    /// Whether the literacy sweep's juniors are trained and paired with TRLVR.
    pub sweep: bool,
    /// KL-Reg's frontier.
    pub kl: KlGrid,
}

fn sft(steps: usize, seed: u64, quick: bool) -> SftConfig {
    SftConfig {
        steps: steps / if quick { 2 } else { 1 },
        batch_size: 64,
        lr: 3e-3,
        weight_decay: 0.01,
        seed,
        pad: EOS,
        lanes: 0,
    }
}

/// Base (both notations), junior (plain only, smaller) and control (the base fine-tuned on
/// shorthand only), with `base_steps` and `junior_steps` of supervised training.
fn recipes(base_steps: usize, junior_steps: usize, base_mix: Vec<f64>, quick: bool) -> [Recipe; 3] {
    [
        Recipe {
            name: "base",
            shape: Shape { layers: 2, hidden: 64, heads: 4 },
            shorthand_mix: base_mix,
            sft: sft(base_steps, 1, quick),
            seed: 1,
        },
        Recipe {
            name: "junior",
            shape: Shape { layers: 2, hidden: 32, heads: 2 },
            shorthand_mix: vec![0.0],
            sft: sft(junior_steps, 2, quick),
            seed: 2,
        },
        Recipe {
            name: "control",
            shape: Shape { layers: 2, hidden: 64, heads: 4 },
            shorthand_mix: vec![1.0],
            sft: SftConfig { lr: 1e-3, ..sft(400, 3, quick) },
            seed: 3,
        },
    ]
}

impl Regime {
    /// The regime the paper is about: a cap every plain chain fits, numbers up to 19.
    pub fn legible(quick: bool) -> Self {
        let task = SumTask { max_term: 13, max_new_tokens: 40, ..SumTask::default() };
        Self {
            name: "legible",
            title: "legible route (the paper's setting)",
            task,
            recipes: recipes(2400, 2400, vec![0.0, 0.25, 1.0], quick),
            sweep: false,
            kl: KlGrid {
                betas: vec![0.1, 1.0, 10.0],
                estimators: vec![KlEstimator::K3],
                seeds: if quick { 1 } else { 3 },
            },
        }
    }

    /// The stress test: today's task, where plain chains of seven or eight numbers overrun
    /// the cap. One seed per KL-Reg setting (said in the report).
    pub fn stress(quick: bool) -> Self {
        Self {
            name: "stress",
            title: "stress test (the accurate route is one the junior cannot read)",
            task: SumTask::default(),
            // A quarter of the chains never use shorthand, a third always do: the longest
            // sums then often run past the cap (solo accuracy well below 100%).
            recipes: recipes(2400, 2400, vec![0.0, 0.25, 1.0], quick),
            sweep: true,
            kl: KlGrid {
                betas: if quick { vec![0.05, 1.0] } else { vec![0.01, 0.1, 1.0, 10.0] },
                estimators: vec![KlEstimator::K3, KlEstimator::K3Plus],
                seeds: 1,
            },
        }
    }

    /// The regimes `which` names: `legible`, `stress` or `both`.
    ///
    /// # Errors
    /// For any other name.
    pub fn pick(which: &str, quick: bool) -> Result<Vec<Self>> {
        Ok(match which {
            "both" => vec![Self::legible(quick), Self::stress(quick)],
            "legible" => vec![Self::legible(quick)],
            "stress" => vec![Self::stress(quick)],
            other => anyhow::bail!("--regime {other:?}: expected legible, stress or both"),
        })
    }
}

/// One row of the ceilings: problems with `terms` numbers.
#[derive(Debug, Clone, Serialize)]
pub struct TermsRow {
    /// Numbers in the prompt.
    pub terms: usize,
    /// Share of the held-out problems, %.
    pub share: f64,
    /// Tokens of a correct plain chain (EOS included).
    pub plain_tokens: usize,
    /// Whether it fits the cap.
    pub plain_fits: bool,
    /// Its reward when it fits (0 otherwise: cut before the answer).
    pub plain_reward: f64,
    /// Tokens of a correct shorthand chain.
    pub shorthand_tokens: usize,
    /// Its reward.
    pub shorthand_reward: f64,
}

/// What the task allows, computed from it and the held-out problems before any run: the
/// most a senior the junior can read (plain only) can reach within the cap, and the reward
/// of each notation by the number of terms.
#[derive(Debug, Clone, Serialize)]
pub struct Ceilings {
    /// By number of terms.
    pub rows: Vec<TermsRow>,
    /// The share of held-out problems a correct plain chain fits, %: the legible route's
    /// ceiling.
    pub plain: f64,
    /// The same for shorthand, %.
    pub shorthand: f64,
}

impl Ceilings {
    /// The ceilings of `task` on `problems`.
    pub fn of(task: &SumTask, problems: &[Problem]) -> Self {
        let reward = |tokens: usize| {
            // The verifier counts words: every token but EOS.
            if tokens <= task.max_new_tokens {
                1.0 - f64::from(task.token_cost) * (tokens - 1) as f64
            } else {
                0.0
            }
        };
        let n = problems.len().max(1) as f64;
        let share =
            |keep: &dyn Fn(&Problem) -> bool| 100.0 * problems.iter().filter(|p| keep(p)).count() as f64 / n;
        let rows = (task.min_terms..=task.max_terms)
            .map(|terms| {
                let (plain, short) = (chain_tokens(terms, 0), chain_tokens(terms, terms - 1));
                TermsRow {
                    terms,
                    share: share(&|p| p.terms.len() == terms),
                    plain_tokens: plain,
                    plain_fits: plain <= task.max_new_tokens,
                    plain_reward: reward(plain),
                    shorthand_tokens: short,
                    shorthand_reward: reward(short),
                }
            })
            .collect();
        let fits = |p: &Problem, shorthand: bool| {
            let steps = p.terms.len() - 1;
            chain_tokens(p.terms.len(), if shorthand { steps } else { 0 }) <= task.max_new_tokens
        };
        Self { rows, plain: share(&|p| fits(p, false)), shorthand: share(&|p| fits(p, true)) }
    }

    /// Why claims resting on a legible route to full accuracy cannot be tested, when the
    /// plain ceiling is more than `margin` points below the shorthand's.
    pub fn wall(&self, margin: f64) -> Option<String> {
        (self.plain < self.shorthand - margin).then(|| {
            format!(
                "a senior the junior can read (plain notation) fits its chain in the cap on {:.1}% of the held-out \
                 problems, the shorthand on {:.1}%: the task, not the run, decides whether a legible senior can \
                 match a shorthand one",
                self.plain, self.shorthand
            )
        })
    }

    /// The report's table.
    pub fn markdown(&self, task: &SumTask) -> String {
        let mut md = format!(
            "Computed from the task (cap {} tokens, cost {} per token) and the held-out problems before any run. \
             Reward of a correct chain = 1 − cost × its words; a chain cut by the cap has no answer (reward 0).\n\n\
             | numbers | share of problems (%) | plain tokens | plain fits | plain reward | shorthand tokens | \
             shorthand reward |\n|---:|---:|---:|---|---:|---:|---:|\n",
            task.max_new_tokens, task.token_cost
        );
        for r in &self.rows {
            let _ = writeln!(
                md,
                "| {} | {:.1} | {} | {} | {:.2} | {} | {:.2} |",
                r.terms,
                r.share,
                r.plain_tokens,
                if r.plain_fits { "yes" } else { "**no**" },
                r.plain_reward,
                r.shorthand_tokens,
                r.shorthand_reward
            );
        }
        let _ = writeln!(
            md,
            "\nThe legible route's ceiling (plain chains that fit): **{:.1}%** of the problems; the shorthand's: \
             {:.1}%.",
            self.plain, self.shorthand
        );
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::task::Split;

    /// In the legible regime every plain chain fits and shorthand still earns more; in the
    /// stress test plain chains of seven or eight numbers do not fit, and the wall is
    /// declared from that alone.
    #[test]
    fn the_ceilings_follow_from_the_task() {
        for (regime, plain_ceiling_is_full) in
            [(Regime::legible(false), true), (Regime::stress(false), false)]
        {
            let task = &regime.task;
            task.validate().unwrap();
            let problems = task.problems(Split::Validation, 400, 5).unwrap();
            let c = Ceilings::of(task, &problems);
            assert!((c.rows.iter().map(|r| r.share).sum::<f64>() - 100.0).abs() < 1e-9);
            assert!((c.shorthand - 100.0).abs() < 1e-9, "shorthand always fits");
            for r in &c.rows {
                assert!(r.shorthand_reward > r.plain_reward, "shorthand is cheaper: {r:?}");
                assert_eq!(r.plain_fits, r.plain_reward > 0.0);
            }
            assert_eq!(c.plain >= 100.0 - 1e-9, plain_ceiling_is_full, "{}: {}", regime.name, c.plain);
            assert_eq!(c.wall(5.0).is_none(), plain_ceiling_is_full);
            if !plain_ceiling_is_full {
                let cut: f64 = c.rows.iter().filter(|r| !r.plain_fits).map(|r| r.share).sum();
                assert!((c.plain - (100.0 - cut)).abs() < 1e-9);
                assert!(c.rows.iter().filter(|r| !r.plain_fits).all(|r| r.terms >= 7));
            }
        }
        assert!(Regime::pick("neither", false).is_err());
        assert_eq!(Regime::pick("both", true).unwrap().len(), 2);
    }
}
