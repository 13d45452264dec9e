//! A testing kit for objectives and schedules, yours or a plugin's (feature `testing`).
//!
//! - [`rollout_case`]: a proptest strategy for random rollout batches: ragged lengths,
//!   prompts, padding, and ownership patterns (all senior, all junior, random, runs).
//! - [`check_objective`]: one call that checks an [`Objective`] against the masking
//!   invariants every objective must keep.
//! - [`token_stream`], [`toy_classes`] and [`check_schedule`]: the same for a
//!   [`HandoffSchedule`]; [`check_redraws`] also checks that a word-boundary schedule
//!   redraws where it must (at word starts and at its gap cap), not only that it hands
//!   off nowhere else.
//! - [`fuzz`]: byte-mutation fuzzing of file parsers on stable Rust.
//! - [`second_device`]: the backend a cross-backend test compares with flex.
//!
//! ```
//! use burn::prelude::*;
//! use proptest::prelude::*;
//! use trlvr::prelude::*;
//! use trlvr::testing::{check_objective, rollout_case};
//!
//! let grpo = Grpo::new(GrpoConfig::default()).unwrap();
//! proptest!(ProptestConfig::with_cases(8), |(case in rollout_case(4, 6))| {
//!     check_objective(&grpo, &case, &Device::default()).unwrap();
//! });
//! ```

mod device;
pub mod fuzz;

pub use device::second_device;

use burn::prelude::*;
use proptest::prelude::*;

use crate::mask::RolloutMasks;
use crate::objective::{Objective, ObjectiveBatch, host};
use crate::schedule::{Finish, HandoffSchedule, replay};
use crate::token::{Owner, TokenId};
use crate::vocab::TokenClasses;

/// An invariant that did not hold, in words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invariant violated: {0}")]
pub struct Violation(pub String);

fn fail<T>(message: String) -> Result<T, Violation> {
    Err(Violation(message))
}

/// A rollout batch on the host: rows `prompt ++ response ++ padding`, row-major
/// `[rows, width]` values.
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutCase {
    /// Prompt length of each row.
    pub prompt_lengths: Vec<usize>,
    /// Owner of each response token of each row.
    pub owners: Vec<Vec<Owner>>,
    /// Padded width.
    pub width: usize,
    /// log π_θ.
    pub log_probs: Vec<f32>,
    /// log π_old.
    pub old_log_probs: Vec<f32>,
    /// log π_ref.
    pub ref_log_probs: Vec<f32>,
    /// One per row.
    pub advantages: Vec<f32>,
}

impl RolloutCase {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.owners.len()
    }

    /// The typed masks.
    pub fn masks(&self, device: &Device) -> RolloutMasks {
        RolloutMasks::new(&self.prompt_lengths, &self.owners, self.width, device).expect("a well-formed case")
    }

    /// The loss mask, computed on the host from the definition (independently of
    /// [`RolloutMasks::loss_mask`]).
    pub fn loss_flags(&self) -> Vec<bool> {
        let mut flags = vec![false; self.rows() * self.width];
        for (i, (p, owners)) in self.prompt_lengths.iter().zip(&self.owners).enumerate() {
            for (t, o) in owners.iter().enumerate() {
                flags[i * self.width + p + t] = *o == Owner::Senior;
            }
        }
        flags
    }

    /// The batch for an objective, on `device` (made autodiff), with the log-prob leaf
    /// that gradients are taken against.
    pub fn batch(&self, device: &Device) -> (ObjectiveBatch, Tensor<2>) {
        let device = device.clone().autodiff();
        let shape = [self.rows(), self.width];
        let t = |v: &[f32]| Tensor::<2>::from_data(TensorData::new(v.to_vec(), shape), &device);
        let leaf = t(&self.log_probs).require_grad();
        let loss_mask = self.masks(&device).loss_mask();
        let batch = ObjectiveBatch {
            log_probs: leaf.clone(),
            old_log_probs: t(&self.old_log_probs),
            ref_log_probs: Some(t(&self.ref_log_probs)),
            advantages: Tensor::from_data(TensorData::new(self.advantages.clone(), [self.rows()]), &device),
            normalizer: loss_mask.normalizer().expect("host device"),
            loss_mask,
        };
        (batch, leaf)
    }
}

/// Loss and gradient (w.r.t. log π_θ) of `objective` on `case`.
///
/// # Errors
/// A [`Violation`] if the objective fails.
pub fn loss_and_grad(
    objective: &dyn Objective,
    case: &RolloutCase,
    device: &Device,
) -> Result<(f32, Vec<f32>), Violation> {
    let (batch, leaf) = case.batch(device);
    loss_and_grad_of(objective, &batch, &leaf)
}

fn loss_and_grad_of(
    objective: &dyn Objective,
    batch: &ObjectiveBatch,
    leaf: &Tensor<2>,
) -> Result<(f32, Vec<f32>), Violation> {
    let out = objective.loss(batch).map_err(|e| Violation(format!("objective failed: {e}")))?;
    let loss = host(out.loss.clone().detach()).map_err(|e| Violation(e.to_string()))?[0];
    let grads = out.loss.backward();
    let grad = match leaf.grad(&grads) {
        Some(g) => host(g).map_err(|e| Violation(e.to_string()))?,
        None => vec![0.0; leaf.shape().num_elements()],
    };
    Ok((loss, grad))
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-5 * a.abs().max(b.abs()) + 1e-6
}

/// Checks `objective` on `case` against the invariants of a senior-only objective:
///
/// 1. loss and gradient are finite;
/// 2. any values (NaN, ±inf, huge) in junior-owned, prompt or padded slots of the
///    log-probs, old log-probs and reference leave the loss and every gradient
///    bit-identical;
/// 3. the gradient is exactly zero outside the loss mask (junior-owned slots included);
/// 4. splitting the rows into two micro-batches (same normalizer) and adding their
///    losses and gradients gives the mini-batch's (within float rounding);
/// 5. with all advantages zero and the reference equal to the policy, loss and gradient
///    are zero (an objective with a regulariser whose gradient is non-zero at the
///    reference, such as k1 KL, does not satisfy this by design).
///
/// # Errors
/// The first [`Violation`] found.
pub fn check_objective(
    objective: &dyn Objective,
    case: &RolloutCase,
    device: &Device,
) -> Result<(), Violation> {
    let (loss, grad) = loss_and_grad(objective, case, device)?;
    if !loss.is_finite() || grad.iter().any(|g| !g.is_finite()) {
        return fail(format!("non-finite loss {loss} or gradient"));
    }
    let flags = case.loss_flags();

    // 2. garbage outside the loss mask changes nothing
    let garbage = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30, 7.5];
    let mut dirty = case.clone();
    for (k, _) in flags.iter().enumerate().filter(|(_, f)| !**f) {
        dirty.log_probs[k] = garbage[k % garbage.len()];
        dirty.old_log_probs[k] = garbage[(k + 1) % garbage.len()];
        dirty.ref_log_probs[k] = garbage[(k + 2) % garbage.len()];
    }
    let (dirty_loss, dirty_grad) = loss_and_grad(objective, &dirty, device)?;
    if dirty_loss.to_bits() != loss.to_bits() {
        return fail(format!("loss changed from {loss} to {dirty_loss} when only masked slots changed"));
    }
    if let Some(k) = (0..grad.len()).find(|&k| grad[k].to_bits() != dirty_grad[k].to_bits()) {
        return fail(format!(
            "gradient at slot {k} changed from {} to {} when only masked slots changed",
            grad[k], dirty_grad[k]
        ));
    }

    // 3. zero gradient outside the mask
    if let Some(k) = (0..grad.len()).find(|&k| !flags[k] && grad[k] != 0.0) {
        let (row, col) = (k / case.width, k % case.width);
        return fail(format!("gradient {} at masked slot (row {row}, position {col})", grad[k]));
    }

    // 4. micro-batches add up
    if case.rows() >= 2 {
        let split = case.rows() / 2;
        let (batch, leaf) = case.batch(device);
        let (a, ga) = loss_and_grad_of(objective, &batch.rows(0..split), &leaf)?;
        let (b, gb) = loss_and_grad_of(objective, &batch.rows(split..case.rows()), &leaf)?;
        if !close(a + b, loss) {
            return fail(format!("micro-batch losses {a} + {b} != mini-batch loss {loss}"));
        }
        if let Some(k) = (0..grad.len()).find(|&k| !close(ga[k] + gb[k], grad[k])) {
            return fail(format!("micro-batch gradients at slot {k}: {} + {} != {}", ga[k], gb[k], grad[k]));
        }
    }

    // 5. no signal, no loss
    let mut flat = case.clone();
    flat.advantages.iter_mut().for_each(|a| *a = 0.0);
    flat.ref_log_probs = flat.log_probs.clone();
    let (zero_loss, zero_grad) = loss_and_grad(objective, &flat, device)?;
    if zero_loss.abs() > 1e-6 || zero_grad.iter().any(|g| g.abs() > 1e-6) {
        return fail(format!("zero advantages gave loss {zero_loss} or a non-zero gradient"));
    }
    Ok(())
}

/// Strategy: a rollout batch of 1..=`max_rows` rows, responses of 1..=`max_len` tokens.
pub fn rollout_case(max_rows: usize, max_len: usize) -> impl Strategy<Value = RolloutCase> {
    let owners = (1..=max_len.max(1)).prop_flat_map(|n| {
        prop_oneof![
            Just(vec![Owner::Senior; n]),
            Just(vec![Owner::Junior; n]),
            prop::collection::vec(prop_oneof![Just(Owner::Senior), Just(Owner::Junior)], n),
            (1..=n).prop_map(move |run| (0..n)
                .map(|t| if (t / run) % 2 == 0 { Owner::Senior } else { Owner::Junior })
                .collect()),
        ]
    });
    let row = (0..=3usize, owners);
    (prop::collection::vec(row, 1..=max_rows.max(1)), 0..=2usize).prop_flat_map(|(rows, extra)| {
        let width = rows.iter().map(|(p, o)| p + o.len()).max().unwrap_or(1) + extra;
        let n = rows.len();
        let cells = n * width;
        (
            Just(rows),
            Just(width),
            prop::collection::vec(-4.0f32..-0.01, cells),
            prop::collection::vec(-0.6f32..0.6, cells),
            prop::collection::vec(-0.5f32..0.5, cells),
            prop::collection::vec(prop_oneof![Just(0.0f32), -2.0f32..2.0], n),
        )
            .prop_map(|(rows, width, lp, d_old, d_ref, advantages)| RolloutCase {
                prompt_lengths: rows.iter().map(|(p, _)| *p).collect(),
                owners: rows.into_iter().map(|(_, o)| o).collect(),
                width,
                old_log_probs: lp.iter().zip(&d_old).map(|(l, d)| l + d).collect(),
                ref_log_probs: lp.iter().zip(&d_ref).map(|(l, d)| l + d).collect(),
                log_probs: lp,
                advantages,
            })
    })
}

/// A small vocabulary with word starts, newline and paragraph tokens, LaTeX pieces and
/// two EOS ids (13 and 14), for schedule tests.
pub fn toy_classes() -> TokenClasses {
    let texts = [
        " the",
        "cat",
        " sat",
        "\n",
        "\n\n",
        ".\n\n",
        "x",
        " y",
        "\\frac",
        "{",
        "}",
        "1",
        " 2",
        "<|im_end|>",
        "<|endoftext|>",
    ];
    TokenClasses::from_texts(&texts, &[13, 14]).expect("valid toy vocabulary")
}

/// Strategy: up to `max_len` ids below `vocab_size`, never an EOS id of `classes`.
pub fn token_stream(classes: &TokenClasses, max_len: usize) -> impl Strategy<Value = Vec<TokenId>> {
    let ids: Vec<TokenId> = (0..classes.vocab_size() as TokenId).filter(|&t| !classes.is_eos(t)).collect();
    prop::collection::vec(prop::sample::select(ids), 0..=max_len)
}

/// Checks a schedule on one token stream (no EOS ids in `tokens`):
///
/// 1. the same seed replays the same owners, and the owners of a prefix do not depend
///    on the tokens after it;
/// 2. every EOS id ends the row right after it, including when more EOS ids (pad ==
///    eos) follow, and the EOS token has an owner.
///
/// # Errors
/// The first [`Violation`] found.
pub fn check_schedule(
    schedule: &dyn HandoffSchedule,
    classes: &TokenClasses,
    tokens: &[TokenId],
    seed: u64,
) -> Result<(), Violation> {
    schedule.validate().map_err(|e| Violation(format!("validate refused the schedule: {e}")))?;
    let (owners, finish) = replay(schedule, classes, tokens, seed, 3);
    let (again, _) = replay(schedule, classes, tokens, seed, 3);
    if owners != again {
        return fail("two replays with one seed differ".into());
    }
    if finish == Some(Finish::Eos) {
        return fail("stopped for EOS on a stream without EOS ids".into());
    }
    for cut in [0, tokens.len() / 2, owners.len()] {
        let cut = cut.min(owners.len());
        let (prefix, _) = replay(schedule, classes, &tokens[..cut], seed, 3);
        if prefix[..] != owners[..cut] {
            return fail(format!("owners of the first {cut} tokens depend on later tokens"));
        }
        if finish.is_some() && cut == owners.len() {
            continue; // the schedule itself stopped here
        }
        for &eos in classes.eos() {
            let mut stream = tokens[..cut].to_vec();
            stream.extend([eos, eos, eos]); // pad == eos after the real EOS
            stream.extend_from_slice(&tokens[cut..]);
            let (with_eos, end) = replay(schedule, classes, &stream, seed, 3);
            if end != Some(Finish::Eos) || with_eos.len() != cut + 1 || with_eos[..cut] != owners[..cut] {
                return fail(format!(
                    "EOS id {eos} at position {cut}: {} owners, finish {end:?}",
                    with_eos.len()
                ));
            }
        }
    }
    Ok(())
}

/// Checks a word-boundary schedule with draw probability `p_senior` (in [0.05, 0.95])
/// and gap cap `max_gap` (at least 2) in both directions, on a synthetic vocabulary (id 0
/// starts a word, id 1 does not, id 2 is EOS), over 256 seeds:
/// 1. handoffs happen only at redraw points: right after a word-start token, or after
///    `max_gap` tokens without a redraw;
/// 2. redraws do happen at both kinds of point: a schedule that ignores word starts, or
///    one that ignores the cap, hands off too rarely there and fails;
/// 3. `validate` accepts the schedule.
///
/// ```
/// use trlvr::prelude::*;
/// use trlvr::testing::check_redraws;
///
/// assert!(check_redraws(&WordBoundary::new(0.5, 4).unwrap(), 0.5, 4).is_ok());
/// assert!(check_redraws(&TokenBernoulli::new(0.5).unwrap(), 0.5, 4).is_err()); // redraws mid-run
/// ```
///
/// # Errors
/// The first [`Violation`] found.
pub fn check_redraws(schedule: &dyn HandoffSchedule, p_senior: f64, max_gap: usize) -> Result<(), Violation> {
    if !(0.05..=0.95).contains(&p_senior) || max_gap < 2 {
        return fail(format!(
            "check_redraws needs p_senior in [0.05, 0.95] and max_gap >= 2, got {p_senior}, {max_gap}"
        ));
    }
    schedule.validate().map_err(|e| Violation(format!("validate refused the schedule: {e}")))?;
    let classes = TokenClasses::from_texts(&[" w", "x", "<eos>"], &[2]).expect("valid toy vocabulary");
    let (word, glue) = (0, 1);
    // (stream, name): glue only (redraws at the cap), word starts only (redraws at every
    // token), and a mix.
    let mut mixed = Vec::new();
    for i in 0..6 * max_gap {
        mixed.push(if i % (max_gap + 1) == max_gap { word } else { glue });
    }
    let streams = [
        (vec![glue; 4 * max_gap + 1], "no word starts"),
        (vec![word; 3 * max_gap], "word starts only"),
        (mixed, "mixed"),
    ];
    for (tokens, name) in &streams {
        // Redraw points from the definition.
        let mut redraw_before = vec![false; tokens.len() + 1];
        let mut gap = 0;
        for (i, &t) in tokens.iter().enumerate() {
            gap += 1;
            if classes.is_word_start(t) || gap >= max_gap {
                redraw_before[i + 1] = true;
                gap = 0;
            }
        }
        let mut changed_at = vec![0usize; tokens.len() + 1];
        let mut senior_first = 0usize;
        let seeds = 256;
        for seed in 0..seeds {
            let (owners, _) = replay(schedule, &classes, tokens, seed, 1);
            senior_first += usize::from(owners.first() == Some(&Owner::Senior));
            for i in 1..owners.len() {
                if owners[i] != owners[i - 1] {
                    if !redraw_before[i] {
                        return fail(format!(
                            "{name}: handoff before token {i} without a redraw (seed {seed})"
                        ));
                    }
                    changed_at[i] += 1;
                }
            }
        }
        // A fair redraw changes hands with probability 2p(1-p) >= 0.095: over 256 seeds
        // a redraw point that really redraws sees a handoff.
        for i in 1..tokens.len() {
            if redraw_before[i] && changed_at[i] == 0 {
                let why = if classes.is_word_start(tokens[i - 1]) { "a word start" } else { "the gap cap" };
                return fail(format!(
                    "{name}: no handoff after {why} before token {i} in {seeds} seeds: the schedule ignores it"
                ));
            }
        }
        let share = senior_first as f64 / seeds as f64;
        let sd = (p_senior * (1.0 - p_senior) / seeds as f64).sqrt();
        if (share - p_senior).abs() > 5.0 * sd {
            return fail(format!("{name}: the senior starts {share:.2} of rows, p_senior is {p_senior}"));
        }
    }
    Ok(())
}

/// A response is right when it ends with token 2 (written as its id).
#[derive(Debug)]
struct EndsWith2;

impl crate::verifier::Verifier for EndsWith2 {
    fn verify(&self, response: &str, _: &str) -> crate::verifier::Reward {
        let correct = response.ends_with('2');
        crate::verifier::Reward { value: f32::from(u8::from(correct)), correct, reason: String::new() }
    }
}

/// Trains a random 4-token bigram senior (seed 1, solo rollouts, the frozen junior its
/// starting copy) with `objective` for `steps` steps on a toy task (right when the response
/// ends with token 2), and returns the senior's table before and after: to check that an
/// objective trains, and that two builds of one objective (linked, loaded) train alike.
///
/// # Errors
/// A [`Violation`] if the trainer fails or a loss is not finite.
pub fn train_bigram(objective: &dyn Objective, steps: usize) -> Result<(Vec<f32>, Vec<f32>), Violation> {
    use crate::bigram::BigramLm;
    use crate::schedule::Solo;
    use crate::train::{Example, Task, TrainConfig, Trainer};
    let err = |e: crate::Error| Violation(e.to_string());
    let text = |ids: &[TokenId]| ids.iter().map(ToString::to_string).collect::<String>();
    let classes = TokenClasses::from_texts(&[" a", " b", "c", "<eos>"], &[3]).map_err(err)?;
    let train = vec![Example { prompt: vec![0], reference: String::new() }];
    let task = Task {
        train: &train,
        validation: &[],
        verifier: &EndsWith2,
        validation_verifier: &EndsWith2,
        text: &text,
        classes: &classes,
    };
    let config = TrainConfig {
        steps,
        prompts_per_step: 2,
        mini_batch_prompts: 1,
        group_size: 8,
        max_new_tokens: 6,
        lr: 0.05,
        ..TrainConfig::default()
    };
    let table = |device: &Device| {
        device.seed(1);
        BigramLm::random(4, 0.5, device)
    };
    let junior = table(&Device::default());
    let read = |m: &BigramLm| host(m.table.val()).map_err(err);
    let before = read(&junior)?;
    let solo = Solo::senior();
    let mut trainer =
        Trainer::new(config, table(&Device::default().autodiff()), &junior, &solo, objective, task)
            .map_err(err)?;
    for step in 1..=steps {
        let loss = trainer.step().map_err(err)?.metrics.loss;
        if !loss.is_finite() {
            return fail(format!("step {step}: loss {loss}"));
        }
    }
    Ok((before, read(trainer.senior())?))
}
