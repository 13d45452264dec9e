"""Reference GRPO losses and gradients for trlvr's oracle test.

Implements the published formulas (PPO clipped surrogate with separate eps_low/eps_high,
dual clip, log-ratio clamp, masked aggregation modes, k1/k2/k3 KL estimators) in
PyTorch, independently of trlvr, on fixed inputs, and writes
trlvr/tests/fixtures/grpo_oracle.json.

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
