//! trlvr's own registrations: the GRPO objective, the four shipped schedules and two
//! rewards (the verifier's and a length cost), under the names recipes and the command
//! line use.

use super::{config, schedule_from_config};
use crate::objective::{Grpo, GrpoConfig};
use crate::schedule::{Solo, StepAlternation, TokenBernoulli, WordBoundary};

crate::register!(
    Objective,
    "grpo",
    "GRPO on senior tokens (clip, dual clip, aggregation, optional KL)",
    |v| Ok(Box::new(Grpo::new(config::<GrpoConfig>(v)?)?))
);
crate::register!(
    Schedule,
    "solo",
    "one model writes everything ({\"owner\": \"senior\"|\"junior\"})",
    schedule_from_config::<Solo>
);
crate::register!(
    Schedule,
    "word",
    "the paper's word-boundary Bernoulli(p_senior) with gap cap max_gap",
    schedule_from_config::<WordBoundary>
);
crate::register!(
    Schedule,
    "token",
    "token-level Bernoulli(p_senior)",
    schedule_from_config::<TokenBernoulli>
);
crate::register!(
    Schedule,
    "step",
    "paragraph alternation for evaluation (first, max_rounds)",
    schedule_from_config::<StepAlternation>
);
crate::register!(
    Reward,
    "correct",
    "the task's verifier: 1 for a right final answer, 0 otherwise (the paper's reward)",
    |_| Ok(Box::new(crate::reward::Correct))
);
crate::register!(
    Reward,
    "length",
    "-(tokens beyond `free`) / (cap - free), in [-1, 0] ({\"free\": 0, \"senior_only\": false})",
    |v| Ok(Box::new(config::<crate::reward::LengthCost>(v)?))
);
