//! The testing kit catches a broken objective and a broken schedule.

use burn::prelude::*;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use trlvr::objective::{Metrics, ObjectiveOutput, aggregate, masked};
use trlvr::prelude::*;
use trlvr::testing::{check_objective, check_schedule, rollout_case, toy_classes};

/// Policy gradient whose ratio is taken over every response position: a junior token leaks in.
#[derive(Debug)]
struct LeakyObjective;

impl Objective for LeakyObjective {
    fn name(&self) -> &str {
        "leaky"
    }
    fn loss(&self, batch: &ObjectiveBatch) -> trlvr::Result<ObjectiveOutput> {
        let [b, t] = batch.log_probs.dims();
        let ratio = (batch.log_probs.clone() - batch.old_log_probs.clone()).exp(); // no mask before exp
        let adv = batch.advantages.clone().unsqueeze_dim::<2>(1).expand([b, t]);
        let per_token = -(adv * ratio);
        let loss = per_token.clone().sum() * 0.0
            + aggregate(per_token, &batch.loss_mask, batch.normalizer, Aggregation::TokenMean);
        Ok(ObjectiveOutput { loss, metrics: Metrics::new() })
    }
}

/// Masks correctly but divides by this micro-batch's own token count.
#[derive(Debug)]
struct LocalMeanObjective;

impl Objective for LocalMeanObjective {
    fn name(&self) -> &str {
        "local-mean"
    }
    fn loss(&self, batch: &ObjectiveBatch) -> trlvr::Result<ObjectiveOutput> {
        let x = masked(batch.log_probs.clone() - batch.old_log_probs.clone(), &batch.loss_mask).exp();
        let adv = batch.advantages.clone().unsqueeze_dim::<2>(1).expand(x.dims());
        let n = batch.loss_mask.tensor().clone().float().sum().clamp_min(1.0);
        let loss = masked(-(adv * x), &batch.loss_mask).sum() / n;
        Ok(ObjectiveOutput { loss, metrics: Metrics::new() })
    }
}

fn finds_violation(objective: &dyn Objective) -> Option<String> {
    let mut runner = TestRunner::new(ProptestConfig::with_cases(64));
    runner
        .run(&rollout_case(4, 6), |case| {
            check_objective(objective, &case, &Device::default()).map_err(|v| TestCaseError::fail(v.0))
        })
        .err()
        .map(|e| e.to_string())
}

#[test]
fn the_kit_catches_a_junior_token_leaking_into_the_loss() {
    let found = finds_violation(&LeakyObjective).expect("the leak must be caught");
    assert!(found.contains("masked slot") || found.contains("changed"), "{found}");
}

#[test]
fn the_kit_catches_a_local_denominator() {
    let found =
        finds_violation(&LocalMeanObjective).expect("a micro-batch-dependent denominator must be caught");
    assert!(found.contains("micro-batch"), "{found}");
}

#[test]
fn the_kit_passes_grpo() {
    assert_eq!(finds_violation(&Grpo::new(GrpoConfig::default()).unwrap()), None);
}

/// A schedule whose authors come from a process-wide counter: replays disagree.
#[derive(Debug)]
struct SharedCounter;

static DRAWS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[derive(Debug)]
struct CounterState(u32);

impl HandoffSchedule for SharedCounter {
    fn name(&self) -> &str {
        "shared-counter"
    }
    fn begin(&self, _rng: &mut dyn rand::RngCore) -> Box<dyn HandoffState> {
        Box::new(CounterState(DRAWS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)))
    }
}

impl HandoffState for CounterState {
    fn author(&self) -> Owner {
        if self.0.is_multiple_of(2) { Owner::Senior } else { Owner::Junior }
    }
    fn after(&mut self, _: TokenId, _: &TokenClasses, _: &mut dyn rand::RngCore) -> Next {
        Next::Write(self.author())
    }
}

#[test]
fn the_kit_catches_a_schedule_that_does_not_replay() {
    let classes = toy_classes();
    let err = check_schedule(&SharedCounter, &classes, &[0, 1, 2], 1).unwrap_err();
    assert!(err.0.contains("replays"), "{err}");
}
