//! # trlvr: Tandem Reinforcement Learning with Verifiable Rewards
//!
//! A trainable **senior** and a frozen, weaker **junior** co-write each rollout, handing
//! off at word boundaries at random; the team's answer is rewarded; the GRPO loss is
//! applied only to the tokens the senior wrote. This crate is the core: the five traits
//! everything else plugs into, the masks, the handoff schedules, the tandem rollout
//! engine and the GRPO objective.
//!
//! Data flows one way:
//!
//! ```text
//! prompts -> rollouts (tokens, owner per token) -> Verifier -> rewards
//!         -> advantage::advantages -> ObjectiveBatch (RolloutMasks::loss_mask) -> Objective -> step
//! ```
//!
//! | concept | where |
//! |---|---|
//! | [`Partner`](model::Partner), [`Policy`](model::Policy): the models | [`model`] |
//! | [`HandoffSchedule`](schedule::HandoffSchedule): who writes next | [`schedule`] |
//! | [`Verifier`](verifier::Verifier): response + reference -> reward | [`verifier`] |
//! | [`Objective`](objective::Objective), [`Grpo`](objective::Grpo) | [`objective`] |
//! | the tandem rollout engine, sampling | [`rollout`] |
//! | plugins: a registry of named objectives, schedules, partners; dynamic loading | [`plugin`] |
//! | the trainer: steps, validation, checkpoints, exact resume | [`train`] |
//! | data parallelism: ranks, sums over ranks, MPI (feature `mpi`) | [`collective`] |
//! | the supervised (next-token) stage | [`train::sft`] |
//! | group advantages | [`advantage`] |
//! | attention / response / ownership masks, the loss mask | [`mask`] |
//! | datasets of problems (JSONL; GSM8K, MATH, DeepScaleR layouts) | [`data`] |
//! | evaluation: solo/handoff pass@k, communication tax, legibility, drift | [`eval`] |
//! | studies: arms × seeds, the hierarchical bootstrap, claims and their verdicts | [`study`] |
//! | word boundaries, paragraph ends, EOS ids | [`vocab`] |
//! | a bigram test model | [`bigram`] |
//! | devices by name (`flex`, `cuda:0`, `tch`) | [`device`] |
//! | proptest strategies and invariant checks for plugins (feature `testing`) | `testing` |
//!
//! ## Example: the GRPO loss on your own tensors
//!
//! ```
//! use burn::prelude::*;
//! use trlvr::prelude::*;
//!
//! let device = Device::default().autodiff();
//! // Two rollouts of one prompt (prompt length 1), three response tokens each.
//! let masks = RolloutMasks::new(
//!     &[1, 1],
//!     &[vec![Owner::Senior, Owner::Junior, Owner::Senior], vec![Owner::Senior; 3]],
//!     4,
//!     &device,
//! )?;
//! let loss_mask = masks.loss_mask();
//! let adv = advantages(&[1.0, 0.0], 2, AdvantageNorm::GroupStd)?;
//! let log_probs = Tensor::<2>::random([2, 4], burn::tensor::Distribution::Uniform(-3.0, 0.0), &device)
//!     .require_grad();
//! let batch = ObjectiveBatch {
//!     old_log_probs: log_probs.clone().detach(),
//!     log_probs: log_probs.clone(),
//!     ref_log_probs: None,
//!     advantages: Tensor::from_floats(adv.as_slice(), &device),
//!     normalizer: loss_mask.normalizer()?,
//!     loss_mask,
//! };
//! let out = Grpo::new(GrpoConfig::default())?.loss(&batch)?;
//! assert_eq!(out.metrics["senior_tokens"], 5.0); // the junior's token is not counted
//! let grads = out.loss.backward();
//! assert!(log_probs.grad(&grads).is_some());
//! # Ok::<(), trlvr::Error>(())
//! ```
//!
//! ## Backends
//! Tensors carry no backend type: the [`Device`](burn::prelude::Device) picks it at run
//! time. Cargo features: `flex` (pure-Rust CPU, default), `cuda`, `tch` (LibTorch).
//! [`device::parse_device`] maps a `--device` string to a device.
#![warn(missing_docs)]

pub mod advantage;
pub mod bigram;
pub mod collective;
pub mod data;
pub mod device;
mod error;
pub mod eval;
pub mod lines;
pub mod mask;
pub mod model;
pub mod objective;
pub mod plugin;
pub mod reward;
pub mod rollout;
pub mod schedule;
pub mod study;
#[cfg(feature = "testing")]
pub mod testing;
// The unit tests of the fuzzing kit measure allocations through its guard.
#[cfg(all(test, feature = "testing"))]
#[global_allocator]
static GUARD: testing::fuzz::AllocationGuard = testing::fuzz::AllocationGuard;
pub mod token;
pub mod train;
pub mod verifier;
pub mod vocab;

/// The Burn trlvr is built on, so a program needs no version of its own to match.
pub use burn;
pub use error::{Error, Result};
/// Re-exported so plugin crates can `inventory::submit!` without naming the version.
pub use inventory;

/// The names most programs need: `use trlvr::prelude::*;`.
pub mod prelude {
    pub use crate::advantage::{AdvantageNorm, advantages};
    pub use crate::bigram::BigramLm;
    pub use crate::mask::{AttentionMask, LossMask, Normalizer, Ownership, ResponseMask, RolloutMasks};
    pub use crate::model::{Feed, Partner, Policy, Session};
    pub use crate::objective::{
        Aggregation, Grpo, GrpoConfig, KlEstimator, Objective, ObjectiveBatch, ObjectiveOutput,
    };
    pub use crate::reward::{RewardFunction, RewardInput, Rewards};
    pub use crate::rollout::{CatchUp, Progress, Rollout, RolloutConfig, RolloutEngine, Sampling};
    pub use crate::schedule::{
        Finish, Handoff, HandoffSchedule, HandoffState, Next, Solo, StepAlternation, TokenBernoulli,
        WordBoundary,
    };
    pub use crate::token::{Owner, TokenBatch, TokenId};
    pub use crate::verifier::{ExactMatch, Reward, Verifier};
    pub use crate::vocab::TokenClasses;
    pub use crate::{Error, Result};
}
