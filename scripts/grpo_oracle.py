"""Reference GRPO losses and gradients for trlvr's oracle test.

Implements the published formulas (PPO clipped surrogate with separate eps_low/eps_high,
dual clip, log-ratio clamp, masked aggregation modes, k1/k2/k3 KL estimators) in
PyTorch, independently of trlvr, on fixed inputs, and writes
trlvr/tests/fixtures/grpo_oracle.json; then the junior-KL ablation (method.md section 4:
the GRPO loss plus beta times the token-mean of the k3 estimate of KL(pi_theta || pi_junior),
whatever the GRPO aggregation) on its own inputs, written to
tests/fixtures/junior_kl_oracle.json with each case's plugin config.

    python3 -m venv V && V/bin/pip install torch numpy
    V/bin/python scripts/grpo_oracle.py
"""
import json
import pathlib

import numpy as np
import torch

torch.set_default_dtype(torch.float64)  # the reference runs in f64; trlvr in f32

ROWS, WIDTH = 4, 8
rng = np.random.default_rng(20261129)
# Layout per row: prompt length, response owners (1 = senior), then padding.
prompt = [2, 1, 3, 2]
owners = [
    [1, 1, 0, 1, 0, 1],
    [1, 1, 1, 1, 1, 1, 1],
    [0, 0, 0],  # all junior: contributes nothing, counts in no denominator
    [0, 1, 1, 0, 1],
]
mask = np.zeros((ROWS, WIDTH))
for i, (p, o) in enumerate(zip(prompt, owners)):
    for t, s in enumerate(o):
        mask[i, p + t] = s
lp = rng.uniform(-3.0, -0.05, (ROWS, WIDTH))
# Log-ratios from -1.6 to 1.6: ratios on both sides of both clip bounds and above c = 3.
log_ratio = rng.uniform(-1.6, 1.6, (ROWS, WIDTH))
old = lp - log_ratio
ref = lp + rng.uniform(-1.0, 1.0, (ROWS, WIDTH))
adv = np.array([1.3, -0.9, 0.4, -1.7])


def aggregate(x, m, mode, horizon):
    tokens = m.sum()
    per_row = m.sum(-1)
    has = per_row > 0
    seqs = has.sum()
    xm = x * m
    if mode == "token-mean":
        return xm.sum() / tokens
    if mode == "seq-mean-token-mean":
        return (xm.sum(-1)[has] / per_row[has]).sum() / seqs
    if mode == "seq-mean-token-sum":
        return xm.sum(-1)[has].sum() / seqs
    if mode == "seq-mean-token-sum-norm":
        # verl: a constant divisor, whatever the lengths and the rows with senior tokens
        return xm.sum() / horizon
    raise ValueError(mode)


def kl(lp, ref, m, estimator):
    # delta = log pi_ref - log pi_theta, clamped; k3 clamped to +-10.
    delta = torch.clamp(torch.where(m > 0, ref - lp, torch.zeros_like(lp)), -20, 20)
    if estimator == "k1":
        return -delta
    if estimator == "k2":
        return 0.5 * delta**2
    return torch.clamp(torch.exp(delta) - delta - 1, -10, 10)


def grpo(cfg):
    logp = torch.tensor(lp, requires_grad=True)
    m = torch.tensor(mask)
    A = torch.tensor(adv)[:, None] * m
    lr = torch.where(m > 0, logp - torch.tensor(old), torch.zeros_like(logp)).clamp(-20, 20)
    ratio = torch.exp(lr)
    pg1 = -A * ratio
    pg2 = -A * torch.clamp(ratio, 1 - cfg["clip_low"], 1 + cfg["clip_high"])
    loss_tok = torch.maximum(pg1, pg2)
    if cfg["dual_clip"] is not None:
        loss_tok = torch.where(A < 0, torch.minimum(loss_tok, -cfg["dual_clip"] * A), loss_tok)
    loss = aggregate(loss_tok, m, cfg["aggregation"], cfg["horizon"])
    if cfg["kl"] is not None:
        loss = loss + cfg["kl_coef"] * aggregate(kl(logp, torch.tensor(ref), m, cfg["kl"]), m, cfg["aggregation"], cfg["horizon"])
    loss.backward()
    return loss.item(), logp.grad.numpy().ravel().tolist()


def case(name, **over):
    cfg = dict(clip_low=0.2, clip_high=0.28, dual_clip=3.0, aggregation="token-mean", horizon=10, kl=None, kl_coef=0.0)
    cfg.update(over)
    loss, grad = grpo(cfg)
    return dict(name=name, config=cfg, loss=loss, grad=grad)


cases = []
for agg in ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]:
    cases.append(case(f"{agg}, dual clip", aggregation=agg))
    cases.append(case(f"{agg}, no dual clip", aggregation=agg, dual_clip=None))
cases.append(case("symmetric clip 0.2", clip_low=0.2, clip_high=0.2))
cases.append(case("wide high clip (DAPO clip-higher)", clip_low=0.1, clip_high=0.5, dual_clip=None))
for est in ["k1", "k2", "k3"]:
    cases.append(case(f"KL {est}", kl=est, kl_coef=0.1))
    cases.append(case(f"KL {est}, seq-mean-token-mean", kl=est, kl_coef=0.05, aggregation="seq-mean-token-mean"))

out = dict(
    rows=ROWS,
    width=WIDTH,
    prompt_lengths=prompt,
    owners=owners,
    log_probs=lp.ravel().tolist(),
    old_log_probs=old.ravel().tolist(),
    ref_log_probs=ref.ravel().tolist(),
    advantages=adv.tolist(),
    cases=cases,
)
path = pathlib.Path(__file__).resolve().parent.parent / "trlvr/tests/fixtures/grpo_oracle.json"
path.write_text(json.dumps(out, indent=1) + "\n")
print(f"wrote {len(cases)} cases to {path}")


# ---- junior-KL (method.md section 4) -------------------------------------------------
# Inputs rounded to f32 first, so that trlvr (f32) and this f64 reference see the same
# numbers. The junior's log-probs sit up to 3.5 nats above the policy's: k3 then exceeds
# 10 and its clamp is exercised.
jrng = np.random.default_rng(20261130)
j_prompt = [1, 2, 0]
j_owners = [
    [1, 1, 0, 1, 1],
    [0, 1, 1, 1],
    [1, 0, 0, 1, 1, 1],
]
J_ROWS, J_WIDTH = 3, 7
j_mask = np.zeros((J_ROWS, J_WIDTH))
for i, (p, o) in enumerate(zip(j_prompt, j_owners)):
    for t, s in enumerate(o):
        j_mask[i, p + t] = s
f32 = lambda a: a.astype(np.float32).astype(np.float64)
j_lp = f32(jrng.uniform(-4.0, -0.05, (J_ROWS, J_WIDTH)))
j_old = f32(j_lp - jrng.uniform(-1.4, 1.4, (J_ROWS, J_WIDTH)))
j_jun = f32(j_lp + jrng.uniform(-3.0, 3.5, (J_ROWS, J_WIDTH)))
j_adv = f32(np.array([0.9, -1.4, 0.3]))


def junior_kl(beta, clip_low=0.2, clip_high=0.2, dual_clip=3.0, aggregation="token-mean", horizon=10):
    logp = torch.tensor(j_lp, requires_grad=True)
    m = torch.tensor(j_mask)
    A = torch.tensor(j_adv)[:, None] * m
    lr = torch.where(m > 0, logp - torch.tensor(j_old), torch.zeros_like(logp)).clamp(-20, 20)
    ratio = torch.exp(lr)
    loss_tok = torch.maximum(-A * ratio, -A * torch.clamp(ratio, 1 - clip_low, 1 + clip_high))
    if dual_clip is not None:
        loss_tok = torch.where(A < 0, torch.minimum(loss_tok, -dual_clip * A), loss_tok)
    pg = aggregate(loss_tok, m, aggregation, horizon)
    # The KL term is a token-mean over senior tokens whatever the GRPO aggregation.
    loss = pg + beta * aggregate(kl(logp, torch.tensor(j_jun), m, "k3"), m, "token-mean", horizon)
    loss.backward()
    agg = {"seq-mean-token-sum-norm": {"horizon": horizon}} if aggregation == "seq-mean-token-sum-norm" else aggregation
    config = dict(beta=beta, grpo=dict(clip_low=clip_low, clip_high=clip_high, dual_clip=dual_clip, aggregation=agg))
    return dict(config=config, loss=loss.item(), grad=logp.grad.numpy().ravel().tolist())


j_cases = [
    dict(name="paper beta 0.001, token-mean", **junior_kl(0.001)),
    dict(name="beta 0.2, clip-higher 0.28", **junior_kl(0.2, clip_high=0.28)),
    dict(name="beta 0.1, Dr. GRPO (seq-mean-token-sum-norm, horizon 10)", **junior_kl(0.1, aggregation="seq-mean-token-sum-norm")),
    dict(name="beta 0.5, seq-mean-token-mean, no dual clip", **junior_kl(0.5, dual_clip=None, aggregation="seq-mean-token-mean")),
    dict(name="beta 0: plain GRPO", **junior_kl(0.0)),
    dict(name="beta 1, k3 clamp at 10 hit", **junior_kl(1.0)),
]
delta = np.clip(j_jun - j_lp, -20, 20)
assert ((np.exp(delta) - delta - 1 > 10) & (j_mask > 0)).any(), "no senior token hits the k3 clamp"
j_out = dict(
    rows=J_ROWS,
    width=J_WIDTH,
    prompt_lengths=j_prompt,
    owners=j_owners,
    log_probs=j_lp.ravel().tolist(),
    old_log_probs=j_old.ravel().tolist(),
    junior_log_probs=j_jun.ravel().tolist(),
    advantages=j_adv.tolist(),
    cases=j_cases,
)
j_path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/junior_kl_oracle.json"
j_path.write_text(json.dumps(j_out, indent=1) + "\n")
print(f"wrote {len(j_cases)} cases to {j_path}")
