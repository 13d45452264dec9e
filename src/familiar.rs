//! The names TRL's `GRPOConfig` and verl's GRPO configuration give to the settings a
//! recipe holds, so that a key written in their words is refused with trlvr's beside it
//! (`num_generations` -> `train.group_size`). docs/familiar-names.md prints this table; a
//! test keeps the two the same.

/// A setting under another framework's name: (framework, its key, trlvr's recipe key, a
/// note on how they differ, empty when they mean the same).
pub const NAMES: &[(&str, &str, &str, &str)] = &[
    ("TRL", "num_generations", "train.group_size", ""),
    ("TRL", "learning_rate", "train.lr", ""),
    (
        "TRL",
        "beta",
        "objective.kl.coef",
        "GRPO's KL to a reference; KL-Reg's β toward the junior is `objective.beta`",
    ),
    ("TRL", "epsilon", "objective.clip_low", "and `objective.clip_high`"),
    ("TRL", "epsilon_high", "objective.clip_high", ""),
    (
        "TRL",
        "loss_type",
        "objective.aggregation",
        "`token-mean` is TRL's `dapo`, `seq-mean-token-sum-norm` its `dr_grpo`",
    ),
    ("TRL", "scale_rewards", "train.advantage", "`group-std` (true), `group-mean` (false), `batch-std`"),
    ("TRL", "max_completion_length", "train.max_new_tokens", ""),
    ("TRL", "max_prompt_length", "data.max_prompt_tokens", ""),
    ("TRL", "max_steps", "train.steps", ""),
    ("TRL", "temperature", "train.sampling.temperature", ""),
    ("TRL", "top_p", "train.sampling.top_p", ""),
    ("TRL", "top_k", "train.sampling.top_k", ""),
    ("TRL", "max_grad_norm", "train.grad_clip", ""),
    ("TRL", "adam_epsilon", "train.adam_eps", ""),
    ("TRL", "adam_beta1", "train.adam_betas", "`[β1, β2]`"),
    ("TRL", "adam_beta2", "train.adam_betas", "`[β1, β2]`"),
    ("TRL", "lr_scheduler_type", "train.lr_schedule", "`{ kind = \"constant\" }`, `warmup`, `cosine`"),
    ("TRL", "save_steps", "train.checkpoint_every", ""),
    ("TRL", "save_total_limit", "train.keep_last", ""),
    ("TRL", "eval_steps", "train.validate_every", ""),
    ("TRL", "reward_funcs", "rewards", "`[[rewards]] name = ..` each, plugins of kind `reward`"),
    ("TRL", "reward_weights", "rewards", "`weight` in each `[[rewards]]` table"),
    (
        "TRL",
        "num_iterations",
        "train.mini_batch_prompts",
        "trlvr makes one pass per step; several updates come from mini-batches",
    ),
    ("verl", "actor_rollout_ref.rollout.n", "train.group_size", ""),
    ("verl", "data.train_batch_size", "train.prompts_per_step", ""),
    ("verl", "actor_rollout_ref.actor.ppo_mini_batch_size", "train.mini_batch_prompts", ""),
    (
        "verl",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
        "train.micro_batch_rows",
        "rows, not prompts",
    ),
    ("verl", "actor_rollout_ref.actor.optim.lr", "train.lr", ""),
    ("verl", "actor_rollout_ref.actor.optim.weight_decay", "train.weight_decay", ""),
    ("verl", "actor_rollout_ref.actor.grad_clip", "train.grad_clip", ""),
    ("verl", "actor_rollout_ref.actor.clip_ratio_low", "objective.clip_low", ""),
    ("verl", "actor_rollout_ref.actor.clip_ratio_high", "objective.clip_high", ""),
    ("verl", "actor_rollout_ref.actor.clip_ratio_c", "objective.dual_clip", ""),
    ("verl", "actor_rollout_ref.actor.loss_agg_mode", "objective.aggregation", ""),
    ("verl", "actor_rollout_ref.actor.kl_loss_coef", "objective.kl.coef", ""),
    ("verl", "actor_rollout_ref.actor.kl_loss_type", "objective.kl.estimator", ""),
    ("verl", "actor_rollout_ref.rollout.temperature", "train.sampling.temperature", ""),
    ("verl", "data.max_response_length", "train.max_new_tokens", ""),
    ("verl", "data.max_prompt_length", "data.max_prompt_tokens", ""),
    ("verl", "trainer.total_training_steps", "train.steps", ""),
    ("verl", "trainer.save_freq", "train.checkpoint_every", ""),
    ("verl", "trainer.test_freq", "train.validate_every", ""),
    ("verl", "custom_reward_function.path", "plugins", "a reward plugin library, then `[[rewards]]`"),
    (
        "verl",
        "algorithm.norm_adv_by_std_in_grpo",
        "train.advantage",
        "`group-std` (true) or `group-mean` (false)",
    ),
];

/// For each key of `table` that `error` refuses as unknown and another framework uses (as
/// its dotted path, or its last part), a line naming trlvr's key instead.
pub fn hints(table: &toml::Table, error: &str) -> Vec<String> {
    let mut keys = Vec::new();
    walk(table, "", &mut keys);
    let mut hints = Vec::new();
    for key in keys {
        let last = key.rsplit('.').next().unwrap_or(&key);
        if !error.contains(&format!("unknown field `{last}`")) {
            continue;
        }
        for (framework, theirs, ours, note) in NAMES {
            if (*theirs == key || *theirs == last)
                && !hints.iter().any(|h: &String| h.contains(&format!("`{key}`")))
            {
                let note = if note.is_empty() { String::new() } else { format!(" ({note})") };
                hints.push(format!("`{key}` is {framework}'s name: trlvr's is `{ours}`{note}"));
            }
        }
    }
    hints
}

/// `message` with a line for each key it refuses that TRL or verl would name so.
pub fn hinted(message: String, table: &toml::Table) -> anyhow::Error {
    let hints = hints(table, &message);
    if hints.is_empty() {
        anyhow::anyhow!(message)
    } else {
        anyhow::anyhow!("{message}\nhint: {} (docs/familiar-names.md)", hints.join("; "))
    }
}

/// Every leaf key of `table`, as a dotted path.
fn walk(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in table {
        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            toml::Value::Table(t) => walk(t, &path, out),
            _ => out.push(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_keys_name_trlvr_s() {
        let table: toml::Table = toml::from_str(
            "[train]\nnum_generations = 8\nlr = 1.0\n[actor_rollout_ref.actor]\nclip_ratio_high = 0.28\n",
        )
        .unwrap();
        let error = "unknown field `num_generations`; unknown field `clip_ratio_high`";
        let hints = hints(&table, error);
        assert_eq!(hints.len(), 2, "{hints:?}");
        assert!(hints[0].contains(
            "`actor_rollout_ref.actor.clip_ratio_high` is verl's name: trlvr's is `objective.clip_high`"
        ));
        assert!(hints[1].contains("`train.num_generations` is TRL's name: trlvr's is `train.group_size`"));
        // A key the error does not refuse (KL-Reg's `objective.beta`, say) gets no hint.
        let table = toml::from_str("[objective]\nbeta = 0.1\n[train]\ngroup_size = 8\n").unwrap();
        assert!(super::hints(&table, "unknown field `stepz`").is_empty());
    }

    /// docs/familiar-names.md lists exactly this table.
    #[test]
    fn the_docs_table_is_this_one() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/familiar-names.md")).unwrap();
        let rows: Vec<&str> =
            doc.lines().filter(|l| l.starts_with("| TRL |") || l.starts_with("| verl |")).collect();
        assert_eq!(rows.len(), NAMES.len());
        for (row, (framework, theirs, ours, note)) in rows.iter().zip(NAMES) {
            assert_eq!(*row, format!("| {framework} | `{theirs}` | `{ours}` | {note} |"));
        }
    }
}
