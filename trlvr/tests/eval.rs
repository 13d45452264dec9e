//! Evaluation: the pass@k estimator against enumeration, the tax and its paired
//! interval on a hand example, legibility and drift against direct computations, a
//! positive control (a junior that cannot read the senior's notation), resuming, and an
//! evaluation under a second schedule taking the first one's solo samples.

use burn::prelude::*;
use proptest::prelude::*;
use trlvr::eval::{
    Bootstrap, ChainStats, CompareConfig, Comparison, EvalConfig, EvalProblem, EvalSet, Evaluation, Mode,
    ProblemResult, Report, Run, SampleStore, Shown, SoloSource, Throughput, pass_at_k, prompt_hash,
};
use trlvr::prelude::*;

/// pass@k by brute force: the share of k-subsets of the n samples with a correct one.
fn enumerate_pass_at_k(correct: &[bool], k: usize) -> f64 {
    let n = correct.len();
    let (mut hit, mut all) = (0u64, 0u64);
    for mask in 0u32..(1 << n) {
        if mask.count_ones() as usize != k {
            continue;
        }
        all += 1;
        hit += u64::from((0..n).any(|i| mask & (1 << i) != 0 && correct[i]));
    }
    hit as f64 / all as f64
}

proptest! {
    #[test]
    fn pass_at_k_equals_enumeration(correct in proptest::collection::vec(any::<bool>(), 1..=12), k in 1usize..=12) {
        let n = correct.len();
        prop_assume!(k <= n);
        let c = correct.iter().filter(|&&x| x).count();
        let want = enumerate_pass_at_k(&correct, k);
        let got = pass_at_k(n, c, k).unwrap();
        prop_assert!((got - want).abs() < 1e-12, "n {} c {} k {}: {} vs {}", n, c, k, got, want);
    }
}

#[test]
fn pass_at_k_hand_values() {
    // n 8, c 3: pass@1 = 3/8; pass@2 = 1 - C(5,2)/C(8,2) = 1 - 10/28; pass@8 = 1.
    assert!((pass_at_k(8, 3, 1).unwrap() - 0.375).abs() < 1e-12);
    assert!((pass_at_k(8, 3, 2).unwrap() - 18.0 / 28.0).abs() < 1e-12);
    assert!((pass_at_k(8, 3, 4).unwrap() - (1.0 - 5.0 / 70.0)).abs() < 1e-12);
    assert_eq!(pass_at_k(8, 3, 8).unwrap(), 1.0);
    assert_eq!(pass_at_k(8, 0, 8).unwrap(), 0.0);
}

fn result(id: usize, n: usize, solo_correct: usize, handoff_correct: usize) -> ProblemResult {
    ProblemResult {
        id,
        n,
        solo_correct,
        handoff_correct,
        solo_tokens: 10,
        handoff_tokens: 10,
        handoff_senior_tokens: 5,
        handoff_junior_nll: 1.0,
        legibility: ChainStats {
            chains: 2,
            chain_ce: 4.0,
            chain_top1: 0.8,
            tokens: 10,
            junior_nll: 20.0,
            junior_top1: 4,
            kl_k3: 1.0,
            kl_exact: 2.0,
        },
        prompt_hash: None,
    }
}

#[test]
fn tax_and_its_paired_interval_on_a_hand_example() {
    // Four problems, two samples each. Solo correct 2, 2, 1, 0; handoff 2, 0, 1, 0.
    // pass@1: solo (1 + 1 + .5 + 0) / 4 = 62.5 %, handoff 37.5 %; tax 25 points, ratio 0.6.
    let problems = vec![result(1, 2, 2, 2), result(2, 2, 2, 0), result(3, 2, 1, 1), result(4, 2, 0, 0)];
    let config =
        EvalConfig { n: 2, ks: vec![1, 2], bootstrap: 2000, bootstrap_seed: 3, ..EvalConfig::default() };
    let report =
        Report::from_results(&config, vec![("hand".into(), problems)], Throughput::default()).unwrap();
    let f = &report.sets[0].figures;
    assert_eq!(f.solo[0].estimate.value, 62.5);
    assert_eq!(f.handoff[0].estimate.value, 37.5);
    // pass@2: solo 1, 1, 1, 0 -> 75 %; handoff 1, 0, 1, 0 -> 50 %.
    assert_eq!((f.solo[1].estimate.value, f.handoff[1].estimate.value), (75.0, 50.0));
    assert_eq!(f.tax.points.value, 25.0);
    assert!((f.tax.ratio.value - 0.6).abs() < 1e-12);
    // Paired: the per-problem differences are 0, 1, 0, 0 (x100). The mean of four draws
    // is 0 with probability (3/4)^4 = 0.32 and 75 or more with probability 0.051, 100
    // with 0.004: the 95% interval is [0, 75]. Unpaired resampling would reach below 0.
    assert_eq!((f.tax.points.low, f.tax.points.high), (0.0, 75.0));
    // The same resamples give the interval of the differences directly.
    let diff = [0.0, 100.0, 0.0, 0.0];
    let boot = Bootstrap::new(&[4], 2000, 3, 0.95).unwrap();
    let direct = boot.estimate(|s| s[0].iter().map(|&i| diff[i]).sum::<f64>() / 4.0);
    assert_eq!(direct, f.tax.points);
    // Macro over two copies of the set is the same figure.
    let twice =
        vec![("a".into(), report.sets[0].problems.clone()), ("b".into(), report.sets[0].problems.clone())];
    let report = Report::from_results(&config, twice, Throughput::default()).unwrap();
    assert_eq!(report.macro_figures.tax.points.value, 25.0);
    assert_eq!(report.macro_figures.legibility.junior_ce.value, 2.0);
    assert_eq!(report.macro_figures.legibility.junior_top1.value, 40.0);
    assert!(report.to_markdown(&[]).contains("| macro | 8 |"));
}

// ---------------------------------------------------------------------------------------
// A toy task on bigram models. Vocabulary:
const Q: TokenId = 0; // the question
const A: TokenId = 1; // " a"
const B: TokenId = 2; // " b"
const PARA: TokenId = 3; // "\n\n"
const OK: TokenId = 4; // " ok": the answer
const BAD: TokenId = 5; // " bad"
const EOS: TokenId = 6;
const V: usize = 7;
const TEXTS: [&str; V] = ["Q", " a", " b", "\n\n", " ok", " bad", "<eos>"];

fn classes() -> TokenClasses {
    TokenClasses::from_texts(&TEXTS, &[EOS]).unwrap()
}

fn detokenize(ids: &[TokenId]) -> String {
    ids.iter().map(|&i| TEXTS[i as usize]).collect()
}

/// Correct when the response says the reference and never " bad".
struct SaysOk;
impl Verifier for SaysOk {
    fn verify(&self, response: &str, reference: &str) -> Reward {
        let correct = response.contains(reference) && !response.contains(" bad");
        Reward { value: f32::from(u8::from(correct)), correct, reason: String::new() }
    }
}

/// The senior writes paragraphs of " a"/" b" and, after a paragraph, the answer.
fn senior_table() -> [[f32; V]; V] {
    let n = -20.0;
    [
        //  Q    a    b   \n\n  ok  bad  eos
        [n, 2.0, 2.0, n, n, n, n],         // after Q
        [n, 0.5, 2.0, 1.0, n, n, n],       // after a
        [n, 1.0, 0.5, 2.0, n, n, n],       // after b
        [n, 1.0, 1.0, n, 1.5, n, n],       // after a paragraph
        [n, n, n, n, n, n, 5.0],           // after ok
        [n, n, n, n, n, n, 5.0],           // after bad
        [n, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], // after eos (never read)
    ]
}

/// A junior that reads " a" and " b" as if they were " bad": its rows for them are the
/// senior's row for " bad" (the embedding of those tokens scrambled).
fn scrambled_junior_table() -> [[f32; V]; V] {
    let mut t = senior_table();
    t[A as usize] = t[BAD as usize];
    t[B as usize] = t[BAD as usize];
    t
}

fn toy_sets(problems: usize) -> Vec<EvalSet> {
    // Distinct prompts (Q repeated) so problems draw from distinct streams.
    let problems = (0..problems)
        .map(|i| EvalProblem { id: i + 1, prompt: vec![Q; i + 1], reference: " ok".into() })
        .collect();
    vec![EvalSet::new("toy", problems, Box::new(SaysOk))]
}

fn toy_config() -> EvalConfig {
    EvalConfig { n: 8, max_new_tokens: 40, bootstrap: 500, batch_problems: 5, ..EvalConfig::default() }
}

fn evaluate(senior: &BigramLm, junior: &BigramLm, problems: usize) -> (Report, SampleStore) {
    let classes = classes();
    let eval = Evaluation::new(senior, junior, &classes, toy_config(), &detokenize).unwrap();
    let mut store = SampleStore::in_memory();
    let report = eval.run(&toy_sets(problems), &mut store, &mut |_| {}).unwrap();
    (report, store)
}

#[test]
fn a_junior_that_cannot_read_the_senior_shows_a_tax_and_a_higher_cross_entropy() {
    let device = Device::default();
    let senior = BigramLm::new(&senior_table(), &device);
    let scrambled = BigramLm::new(&scrambled_junior_table(), &device);
    let (own, _) = evaluate(&senior, &senior, 20);
    let (other, _) = evaluate(&senior, &scrambled, 20);
    // Each problem's prompt hash is kept, and the pair compares (B: the scrambled junior):
    // the same solo accuracy to the bit, a tax and a cross-entropy higher beyond doubt.
    let hashes: Vec<Option<u64>> = own.sets[0].problems.iter().map(|p| p.prompt_hash).collect();
    assert_eq!(hashes, (1..=20).map(|i| Some(prompt_hash(&vec![Q; i]))).collect::<Vec<_>>());
    let c = Comparison::new(&Run::from(own.clone()), &Run::from(other.clone()), &CompareConfig::default())
        .unwrap();
    let d = &c.macro_differences;
    assert_eq!((d.solo[0].difference.b_minus_a.high, d.solo[0].difference.shown), (0.0, Shown::Neither));
    assert_eq!(
        (d.tax_points.shown, d.junior_ce.shown, d.kl_exact.shown),
        (Shown::BAbove, Shown::BAbove, Shown::BAbove)
    );
    assert_eq!(d.tax_points.b_minus_a.value, other.macro_figures.tax.points.value);
    let (own, other) = (&own.macro_figures, &other.macro_figures);
    eprintln!("self-paired: {own:?}\nscrambled: {other:?}");
    // Self-paired: identical streams, identical models: the same samples, no tax, no KL.
    assert_eq!(own.tax.points.value, 0.0);
    assert_eq!(own.drift.kl_exact.value, 0.0);
    assert!(own.solo[0].estimate.value > 80.0);
    // The scrambled junior: the same solo accuracy, a large tax whose interval excludes
    // 0, a much higher cross-entropy, a lower top-1, a positive KL.
    assert_eq!(other.solo[0].estimate.value, own.solo[0].estimate.value);
    assert!(other.tax.points.value > 30.0 && other.tax.points.low > 10.0, "{:?}", other.tax);
    assert!(other.tax.ratio.high < 0.9);
    assert!(other.legibility.junior_ce.value > own.legibility.junior_ce.value + 2.0);
    assert!(other.legibility.junior_ce.low > own.legibility.junior_ce.high);
    assert!(other.legibility.junior_top1.value < own.legibility.junior_top1.value);
    assert!(other.drift.kl_exact.value > 1.0 && other.drift.kl_k3.value > 1.0);
}

/// The solo and handoff chains of the toy set, from the store.
fn chains(store: &SampleStore, problems: usize, mode: Mode) -> Vec<(Vec<TokenId>, Vec<TokenId>, Vec<Owner>)> {
    toy_sets(problems)
        .remove(0)
        .problems
        .iter()
        .flat_map(|p| {
            let hash = store_hash(&p.prompt);
            store
                .get("toy", p.id, mode, hash)
                .unwrap()
                .samples
                .iter()
                .map(|s| {
                    // The chain without the EOS that closed it.
                    let end = s.tokens.len() - usize::from(s.finish == Finish::Eos);
                    (p.prompt.clone(), s.tokens[..end].to_vec(), s.owner_list()[..end].to_vec())
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The store keys records by an FNV-1a hash of the prompt (as `trlvr::eval` does).
fn store_hash(tokens: &[TokenId]) -> u64 {
    tokens
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Per-token log-probs of the response tokens under `model` by `Partner::score` (what
/// `trlvr score` prints).
fn scored(model: &BigramLm, prompt: &[TokenId], response: &[TokenId]) -> Vec<f64> {
    let seq: Vec<TokenId> = prompt.iter().chain(response).copied().collect();
    let lp: Vec<f32> =
        model.score(&TokenBatch::new(vec![seq], 0).unwrap(), 1.0).unwrap().try_into_vec_as().unwrap();
    lp[prompt.len()..].iter().map(|&x| f64::from(x)).collect()
}

/// log-softmax of a table row, in f64 on the host.
fn log_softmax(row: &[f32; V]) -> Vec<f64> {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let z: f64 = row.iter().map(|&x| (f64::from(x) - max).exp()).sum();
    row.iter().map(|&x| f64::from(x) - max - z.ln()).collect()
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-4 * (1.0 + b.abs()), "{what}: {a} vs {b}");
}

struct Direct {
    chains: f64,
    chain_ce: f64,
    chain_top1: f64,
    tokens: f64,
    ce: f64,
    top1: f64,
    k3: f64,
    kl: f64,
}

/// Legibility and drift of the solo chains, computed directly: by `score` for the
/// log-probs, from the tables on the host for top-1 and the exact KL.
fn direct(
    store: &SampleStore,
    senior: &BigramLm,
    junior: &BigramLm,
    s: &[[f32; V]; V],
    j: &[[f32; V]; V],
) -> Direct {
    let mut d = Direct {
        chains: 0.0,
        chain_ce: 0.0,
        chain_top1: 0.0,
        tokens: 0.0,
        ce: 0.0,
        top1: 0.0,
        k3: 0.0,
        kl: 0.0,
    };
    for (prompt, response, _) in chains(store, 12, Mode::Solo) {
        assert!(!response.contains(&EOS));
        let (lj, ls) = (scored(junior, &prompt, &response), scored(senior, &prompt, &response));
        let (ce, top1) = (d.ce, d.top1);
        let mut prev = *prompt.last().unwrap();
        for (t, &token) in response.iter().enumerate() {
            d.tokens += 1.0;
            d.ce -= lj[t];
            let delta = lj[t] - ls[t];
            d.k3 += delta.exp() - delta - 1.0;
            let row = &j[prev as usize];
            let best = (0..V).max_by(|&a, &b| row[a].total_cmp(&row[b]).then(b.cmp(&a))).unwrap();
            d.top1 += f64::from(u8::from(best == token as usize));
            let (ps, pj) = (log_softmax(&s[prev as usize]), log_softmax(row));
            d.kl += (0..V).map(|v| ps[v].exp() * (ps[v] - pj[v])).sum::<f64>();
            prev = token;
        }
        if !response.is_empty() {
            d.chains += 1.0;
            d.chain_ce += (d.ce - ce) / response.len() as f64;
            d.chain_top1 += (d.top1 - top1) / response.len() as f64;
        }
    }
    d
}

/// For a self-paired junior, a mildly perturbed one and the scrambled one: the figures
/// of the evaluation and the direct computation on the same chains.
fn figures_and_direct() -> Vec<(bool, trlvr::eval::Figures, Direct, SampleStore, BigramLm)> {
    let device = Device::default();
    let s = senior_table();
    let mut mild = s;
    mild[A as usize][B as usize] -= 1.0;
    mild[PARA as usize][OK as usize] += 0.7;
    [s, mild, scrambled_junior_table()]
        .into_iter()
        .map(|junior_table| {
            let senior = BigramLm::new(&s, &device);
            let junior = BigramLm::new(&junior_table, &device);
            let (report, store) = evaluate(&senior, &junior, 12);
            let d = direct(&store, &senior, &junior, &s, &junior_table);
            (junior_table == s, report.sets[0].figures.clone(), d, store, junior)
        })
        .collect()
}

#[test]
fn junior_cross_entropy_equals_score() {
    for (_, f, d, _, _) in figures_and_direct() {
        // The mean of per-chain means (method.md §5), and over all tokens together.
        close(f.legibility.junior_ce.value, d.chain_ce / d.chains, "junior cross-entropy");
        close(f.legibility.junior_ce_tokens.value, d.ce / d.tokens, "junior cross-entropy, token-weighted");
    }
}

#[test]
fn junior_top1_equals_the_argmax_of_its_table() {
    for (_, f, d, _, _) in figures_and_direct() {
        close(f.legibility.junior_top1.value, 100.0 * d.chain_top1 / d.chains, "junior top-1");
    }
}

#[test]
fn k3_kl_equals_score_differences() {
    for (self_paired, f, d, _, _) in figures_and_direct() {
        close(f.drift.kl_k3.value, d.k3 / d.tokens, "KL k3");
        if self_paired {
            assert_eq!(f.drift.kl_k3.value, 0.0);
        }
    }
}

#[test]
fn exact_kl_equals_the_tables_and_is_zero_only_self_paired() {
    for (self_paired, f, d, _, _) in figures_and_direct() {
        close(f.drift.kl_exact.value, d.kl / d.tokens, "KL exact");
        if self_paired {
            assert_eq!(f.drift.kl_exact.value, 0.0);
        } else {
            assert!(f.drift.kl_exact.value > 1e-3);
        }
    }
}

#[test]
fn junior_nll_of_senior_tokens_equals_score() {
    for (_, f, d, store, junior) in figures_and_direct() {
        close(f.drift.junior_nll.value, d.ce / d.tokens, "junior NLL, solo");
        // The senior-written tokens of the handoff chains.
        let (mut nll, mut count) = (0.0, 0.0);
        for (prompt, response, owners) in chains(&store, 12, Mode::Handoff) {
            let lj = scored(&junior, &prompt, &response);
            for (t, o) in owners.iter().enumerate() {
                if *o == Owner::Senior {
                    nll -= lj[t];
                    count += 1.0;
                }
            }
        }
        close(f.drift.junior_nll_handoff.value, nll / count, "junior NLL, handoff");
    }
}

#[test]
fn an_interrupted_evaluation_resumes_and_a_finished_one_is_not_sampled_again() {
    let device = Device::default();
    let senior = BigramLm::new(&senior_table(), &device);
    let junior = BigramLm::new(&scrambled_junior_table(), &device);
    let classes = classes();
    let dir = std::env::temp_dir().join(format!("trlvr-eval-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("samples.jsonl");
    let _ = std::fs::remove_file(&path);
    let eval = Evaluation::new(&senior, &junior, &classes, toy_config(), &detokenize).unwrap();
    let settings = eval.sample_settings();
    // The uninterrupted run.
    let (whole, _) = evaluate(&senior, &junior, 12);
    // An "interrupted" run: only the first six problems were sampled, solo only.
    let mut store = SampleStore::open(&path, &settings).unwrap();
    eval.sample(&toy_sets(6), &mut store, &mut |_| {}).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let solo_only: Vec<&str> = text.lines().filter(|l| !l.contains("\"handoff\"")).collect();
    std::fs::write(&path, solo_only.join("\n") + "\n").unwrap();
    // Resuming draws only what is missing and gives the same figures.
    let mut store = SampleStore::open(&path, &settings).unwrap();
    assert_eq!(store.len(), 6);
    let mut first_done = None;
    let resumed = eval
        .run(&toy_sets(12), &mut store, &mut |p| {
            first_done.get_or_insert(p.done);
        })
        .unwrap();
    assert_eq!(first_done, Some(6), "six problem-modes were found in the store");
    assert!(resumed.throughput.solo_tokens > 0 && resumed.throughput.handoff_tokens > 0);
    assert_eq!(resumed.sets, whole.sets);
    // Finished: re-grading draws nothing.
    let mut store = SampleStore::open(&path, &settings).unwrap();
    let again = eval.run(&toy_sets(12), &mut store, &mut |_| {}).unwrap();
    assert_eq!(again.throughput, Throughput::default());
    assert_eq!(again.sets, whole.sets);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The solo samples of each problem of `sets`, drawn `batch_problems` problems at a time.
fn solo_samples(sets: &[EvalSet], batch_problems: usize) -> Vec<Vec<Vec<TokenId>>> {
    let device = Device::default();
    let senior = BigramLm::new(&senior_table(), &device);
    let classes = classes();
    let config = EvalConfig { batch_problems, ..toy_config() };
    let eval = Evaluation::new(&senior, &senior, &classes, config, &detokenize).unwrap();
    let mut store = SampleStore::in_memory();
    eval.sample(sets, &mut store, &mut |_| {}).unwrap();
    sets[0]
        .problems
        .iter()
        .map(|p| {
            let record = store.get("toy", p.id, Mode::Solo, store_hash(&p.prompt)).unwrap();
            record.samples.iter().map(|s| s.tokens.clone()).collect()
        })
        .collect()
}

#[test]
fn copies_of_one_prompt_draw_their_own_samples_in_any_batching() {
    // Problems 1 and 3 share a prompt, as do 2 and 4.
    let prompts = [vec![Q], vec![Q, Q], vec![Q], vec![Q, Q], vec![Q, Q, Q]];
    let sets = || {
        let problems = prompts
            .iter()
            .enumerate()
            .map(|(i, p)| EvalProblem { id: i + 1, prompt: p.clone(), reference: " ok".into() })
            .collect();
        vec![EvalSet::new("toy", problems, Box::new(SaysOk))]
    };
    let one_batch = solo_samples(&sets(), 5);
    // One problem per batch: each copy still gets its own draw, the same as in one batch.
    let alone = solo_samples(&sets(), 1);
    assert_eq!(one_batch, alone, "samples depend on the problem, not on its batch");
    assert_ne!(one_batch[0], one_batch[2], "problem 3 repeats problem 1's prompt but not its samples");
    assert_ne!(one_batch[1], one_batch[3]);
    // A prompt without copies draws what it draws on its own.
    let single = vec![EvalSet::new(
        "toy",
        vec![EvalProblem { id: 5, prompt: vec![Q, Q, Q], reference: " ok".into() }],
        Box::new(SaysOk),
    )];
    let store_one = solo_samples(&single, 1);
    assert_eq!(store_one[0], one_batch[4]);
}

#[test]
fn bad_settings_are_errors() {
    let device = Device::default();
    let senior = BigramLm::new(&senior_table(), &device);
    let bigger = BigramLm::random(V + 1, 1.0, &device);
    let classes = classes();
    let err = Evaluation::new(&senior, &bigger, &classes, toy_config(), &detokenize).unwrap_err();
    assert!(matches!(err, trlvr::Error::Vocabulary(_)), "{err}");
    let k_too_big = EvalConfig { n: 2, ks: vec![1, 4], ..toy_config() };
    assert!(Evaluation::new(&senior, &senior, &classes, k_too_big, &detokenize).is_err());
    let eval = Evaluation::new(&senior, &senior, &classes, toy_config(), &detokenize).unwrap();
    let mut sets = toy_sets(2);
    sets[0].problems[1].id = 1;
    let err = eval.run(&sets, &mut SampleStore::in_memory(), &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("appears twice"), "{err}");
}

/// The handoff mode with another schedule: the word schedule's owners (replayed from the
/// tokens), recorded in the samples' settings; a schedule that never hands over refused.
#[test]
fn the_handoff_mode_takes_another_schedule() {
    let device = Device::default();
    let senior = BigramLm::new(&senior_table(), &device);
    // Self-paired, so both authors write chains alike and the coins alone split the tokens.
    let junior = BigramLm::new(&senior_table(), &device);
    let classes = classes();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let eval = Evaluation::new(&senior, &junior, &classes, toy_config(), &detokenize)
        .unwrap()
        .with_handoff(&word)
        .unwrap();
    assert!(eval.sample_settings()["handoff"].as_str().unwrap().starts_with("WordBoundary"));
    let mut store = SampleStore::in_memory();
    let report = eval.run(&toy_sets(12), &mut store, &mut |_| {}).unwrap();
    let owners: Vec<Owner> =
        chains(&store, 12, Mode::Handoff).into_iter().flat_map(|(_, _, owners)| owners).collect();
    let senior_share = owners.iter().filter(|&&o| o == Owner::Senior).count() as f64 / owners.len() as f64;
    // Word-level coins: about half of the tokens each, and the junior may write first
    // (step alternation always starts with the senior).
    assert!((0.3..0.7).contains(&senior_share), "{senior_share}");
    let first_junior = chains(&store, 12, Mode::Handoff)
        .iter()
        .filter(|(_, _, o)| o.first() == Some(&Owner::Junior))
        .count();
    assert!(first_junior > 0);
    assert!((0.3..0.7).contains(&report.macro_figures.handoff_senior_share));
    let solo = Solo::senior();
    let refused =
        Evaluation::new(&senior, &junior, &classes, toy_config(), &detokenize).unwrap().with_handoff(&solo);
    assert!(refused.unwrap_err().to_string().contains("never hands over"));
}

/// A second evaluation of the same senior under the word schedule takes the first one's
/// solo samples and measures: the same report as drawing them again, with no solo token
/// drawn; the measures are taken only for the source's own samples and junior, and a
/// source drawn with another sampler is refused.
#[test]
fn a_second_schedule_takes_the_first_evaluation_s_solo_samples_and_measures() {
    let device = Device::default();
    let senior = BigramLm::new(&senior_table(), &device);
    let junior = BigramLm::new(&scrambled_junior_table(), &device);
    let classes = classes();
    let dir = std::env::temp_dir().join(format!("trlvr-eval-solo-source-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (first_path, second_path) = (dir.join("first.jsonl"), dir.join("second.jsonl"));
    let first = Evaluation::new(&senior, &junior, &classes, toy_config(), &detokenize).unwrap();
    let mut store = SampleStore::open(&first_path, &first.sample_settings()).unwrap();
    let mut first_report = first.run(&toy_sets(12), &mut store, &mut |_| {}).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let second = || {
        Evaluation::new(&senior, &junior, &classes, toy_config(), &detokenize)
            .unwrap()
            .with_handoff(&word)
            .unwrap()
    };
    let fresh = second().run(&toy_sets(12), &mut SampleStore::in_memory(), &mut |_| {}).unwrap();
    let settings = second().sample_settings();
    let source = SoloSource::read(&first_path, Some(&first_report), &settings).unwrap();
    assert_eq!(source.len(), (12, 12));
    let mut store = SampleStore::open(&second_path, &settings).unwrap();
    assert_eq!(source.adopt(&mut store).unwrap(), 12);
    let taken = second().with_solo_source(&source).run(&toy_sets(12), &mut store, &mut |_| {}).unwrap();
    assert_eq!(taken.sets, fresh.sets, "the same figures as drawing and measuring again");
    assert_eq!(taken.throughput.solo_tokens, 0);
    assert!(taken.throughput.handoff_tokens > 0);
    assert_eq!(source.adopt(&mut store).unwrap(), 0, "nothing is taken twice");

    // The measures are the source's, not measured again: a marked one comes through,
    // but not onto samples that are not the source's.
    first_report.sets[0].problems[0].legibility.junior_nll += 100.0;
    first_report.sets[0].problems[1].legibility.junior_nll += 100.0;
    let marked = SoloSource::read(&first_path, Some(&first_report), &settings).unwrap();
    let mut own = store_record(&first_path, 2);
    own.samples[0].tokens.insert(0, A);
    own.samples[0].owners.insert(0, 'S');
    let with_own = || {
        let mut store = SampleStore::in_memory();
        store.append(vec![own.clone()]).unwrap();
        assert_eq!(marked.adopt(&mut store).unwrap(), 11);
        store
    };
    let report = second().with_solo_source(&marked).run(&toy_sets(12), &mut with_own(), &mut |_| {}).unwrap();
    let measured = second().run(&toy_sets(12), &mut with_own(), &mut |_| {}).unwrap();
    let nll = |r: &Report, i: usize| r.sets[0].problems[i].legibility.junior_nll;
    assert_eq!(nll(&report, 0), nll(&measured, 0) + 100.0);
    assert_eq!(nll(&measured, 0), nll(&fresh, 0));
    assert_eq!(report.sets[0].problems[1], measured.sets[0].problems[1], "problem 2's samples are its own");
    assert_ne!(nll(&report, 1), nll(&fresh, 1) + 100.0);

    // Another junior: the samples, not their measures. Another sampler: refused.
    let mut other = settings.clone();
    other["junior"] = "another".into();
    assert_eq!(SoloSource::read(&first_path, Some(&first_report), &other).unwrap().len(), (12, 0));
    let mut hotter = settings.clone();
    hotter["seed"] = 7.into();
    let err = SoloSource::read(&first_path, None, &hotter).unwrap_err().to_string();
    assert!(err.contains("first.jsonl") && err.contains("seed: 0 -> 7"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Problem `id`'s solo record in the samples file `path`.
fn store_record(path: &std::path::Path, id: usize) -> trlvr::eval::ProblemSamples {
    let (_, store) = SampleStore::read_any(path).unwrap();
    store.records().find(|r| r.id == id && r.mode == Mode::Solo).unwrap().clone()
}
