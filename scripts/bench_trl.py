"""Hugging Face TRL's GRPOTrainer on the work of `cargo bench --bench train_step`.

SmolLM2-135M-Instruct (the GGUF file `trlvr fetch smollm2-135m` fetches, loaded in f32),
the same two GSM8K problems with the same plain prompt text, 2 prompts x 8 completions,
64 new tokens (EOS ignored through `min_new_tokens`, as the bench ignores it; `--eos`
lets responses stop), T 0.6, one optimizer update per step (num_iterations 1, beta 0:
no reference or old-log-prob passes), loss "dapo" (token mean), f32, no gradient
checkpointing, on the CPU. Prints the median step time, its generation share, the
response length and the process CPU time over wall time of each part.

    python3 -m venv V && V/bin/pip install torch transformers trl gguf datasets
    V/bin/python scripts/bench_trl.py [--steps 3] [--threads 2] [--eos]
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import time

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

ROOT = pathlib.Path(__file__).resolve().parent.parent
# trlvr's DEFAULT_TEMPLATE (the paper's suffix), as the bench feeds it: no chat template.
TEMPLATE = (
    "{question} Solve the following math problem step by step. Put your final answer inside "
    "\\boxed{{}}, like \\boxed{{42}} or \\boxed{{\\frac{{1}}{{2}}}}."
)

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--eos", action="store_true", help="let responses stop at EOS")
args = parser.parse_args()
torch.set_num_threads(args.threads)

fetch = ["cargo", "run", "--release", "-q", "--", "fetch", "smollm2-135m"]
gguf = pathlib.Path(subprocess.check_output(fetch, cwd=ROOT, text=True).strip())
tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
# Loaded from GGUF, the model is marked quantized though its weights are f32; the trainer
# refuses quantized models, so clear the mark.
model.is_quantized = False
model.hf_quantizer = None
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config

problems = [json.loads(l) for l in open(ROOT / "assets/math/gsm8k-train.jsonl")][:2]
rows = [{"prompt": TEMPLATE.format(question=p["question"]), "answer": p["answer"].split("####")[-1].strip()} for p in problems]
dataset = Dataset.from_list(rows * (4 * (args.steps + 1)))


def last_box(text):
    at = text.rfind("\\boxed{")
    if at < 0:
        return None
    depth, start = 0, at + len("\\boxed{")
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth < 0:
            return text[start:i]
    return None


def reward(completions, answer, **_):
    norm = lambda s: re.sub(r"[\s,$]", "", s or "")
    return [float(norm(last_box(c)) == norm(a)) for c, a in zip(completions, answer)]


generation, generation_cpu = [], []
generate = model.generate


def timed_generate(*a, **k):
    t, c = time.perf_counter(), time.process_time()
    out = generate(*a, **k)
    generation.append(time.perf_counter() - t)
    generation_cpu.append(time.process_time() - c)
    return out


model.generate = timed_generate


class StepTimes(TrainerCallback):
    def __init__(self):
        self.times, self.cpu, self.lengths, self.start = [], [], [], None

    def on_step_begin(self, *_, **__):
        self.start = (time.perf_counter(), time.process_time())

    def on_step_end(self, *_, **__):
        self.times.append(time.perf_counter() - self.start[0])
        self.cpu.append(time.process_time() - self.start[1])

    def on_log(self, _args, _state, _control, logs=None, **__):
        if logs and "completions/mean_length" in logs:
            self.lengths.append(logs["completions/mean_length"])


times = StepTimes()
config = GRPOConfig(
    output_dir=str(ROOT / "target/bench-trl"),
    per_device_train_batch_size=16,
    num_generations=8,
    max_completion_length=64,
    temperature=0.6,
    top_p=1.0,
    loss_type="dapo",
    beta=0.0,
    num_iterations=1,
    learning_rate=1e-6,
    weight_decay=0.01,
    max_grad_norm=1.0,
    bf16=False,
    fp16=False,
    gradient_checkpointing=False,
    use_cpu=True,
    max_steps=args.steps + 1,
    logging_steps=1,
    save_strategy="no",
    report_to=[],
    seed=0,
    generation_kwargs={} if args.eos else {"min_new_tokens": 64},
)
trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=dataset, processing_class=tokenizer)
trainer.add_callback(times)
trainer.train()
n = len(times.times) - 1  # the first step is a warm-up
steps, gens = times.times[1:], generation[-n:]
rest = [s - g for s, g in zip(steps, gens)]
rest_cpu = [c - gc for c, gc in zip(times.cpu[1:], generation_cpu[-n:])]
step, gen, upd = statistics.median(steps), statistics.median(gens), statistics.median(rest)
gen_cpu = statistics.median([c / w for c, w in zip(generation_cpu[-n:], gens)])
upd_cpu = statistics.median([c / w for c, w in zip(rest_cpu, rest)])
length = statistics.median(times.lengths[1:]) if len(times.lengths) > 1 else float("nan")
print(f"TRL {__import__('trl').__version__}, torch {torch.__version__}, {args.threads} threads")
print("| | step (s) | generation (s) | rest: log-probs, update (s) | response tokens | CPU generation | CPU rest |")
print("|---|---|---|---|---|---|---|")
print(f"| TRL GRPOTrainer | {step:.2f} | {gen:.2f} | {upd:.2f} | {length:.1f} | {100 * gen_cpu:.0f}% | {100 * upd_cpu:.0f}% |")
print(json.dumps({"step_s": step, "generation_s": gen, "rest_s": upd, "response_len": length, "steps": steps}))
