//! The GRPO loss on your own tensors, as README.md shows it ("Using trlvr from your own
//! code"): the lines between the markers are the README's snippet, word for word
//! (tests/house.rs checks it), so the README's example compiles and runs.
//!
//! ```sh
//! cargo run --example grpo_loss
//! ```
#![allow(clippy::print_stdout)] // an example reports on stdout

fn main() -> trlvr::Result<()> {
    // README begin
    use trlvr::burn::prelude::*;
    use trlvr::prelude::*;

    let device = Device::default().autodiff();
    // Row layout: prompt ++ response ++ padding; owners cover the response.
    let masks = RolloutMasks::new(
        &[1, 1],
        &[vec![Owner::Senior, Owner::Junior], vec![Owner::Senior; 2]],
        3,
        &device,
    )?;
    let loss_mask = masks.loss_mask(); // real AND response AND senior
    let adv = advantages(&[1.0, 0.0], 2, AdvantageNorm::GroupStd)?;
    // Your policy's per-token log-probs [batch, width] (with gradients), and π_old's.
    let log_probs =
        Tensor::<2>::random([2, 3], trlvr::burn::tensor::Distribution::Uniform(-3.0, 0.0), &device)
            .require_grad();
    let old_log_probs = log_probs.clone().detach();
    let batch = ObjectiveBatch {
        log_probs: log_probs.clone(),
        old_log_probs,
        ref_log_probs: None,
        advantages: Tensor::from_floats(adv.as_slice(), &device),
        normalizer: loss_mask.normalizer()?, // of the whole mini-batch
        loss_mask,
    };
    let out = Grpo::new(GrpoConfig::default())?.loss(&batch)?;
    let grads = out.loss.backward();
    assert!(log_probs.grad(&grads).is_some());
    // README end
    println!("loss {}, senior tokens {}", out.metrics["loss"], out.metrics["senior_tokens"]);
    Ok(())
}
