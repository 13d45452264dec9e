//! The tandem rollout engine: solo equivalence, replay, exact caches, EOS and length,
//! batch independence, the catch-up modes, vocabulary checks.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use burn::prelude::*;
use proptest::prelude::*;
use trlvr::prelude::*;
use trlvr::schedule::replay;

const VOCAB: usize = 12;
const EOS_A: TokenId = 10;
const EOS_B: TokenId = 11;

fn classes() -> TokenClasses {
    let texts = [" a", "b", " c", "d", "\n\n", " e", "f", "\n", " g", "h", "<eos1>", "<eos2>"];
    TokenClasses::from_texts(&texts, &[EOS_A, EOS_B]).unwrap()
}

/// A bigram model whose EOS logits are pushed down (long rows) or up.
fn model(seed: u64, eos_bias: f32) -> BigramLm {
    let device = Device::default();
    device.seed(seed);
    let table = BigramLm::random(VOCAB, 1.5, &device).table.val();
    let bias: Vec<f32> = (0..VOCAB).map(|i| if i as TokenId >= EOS_A { eos_bias } else { 0.0 }).collect();
    let bias =
        Tensor::<1>::from_floats(bias.as_slice(), &device).unsqueeze_dim::<2>(0).expand([VOCAB, VOCAB]);
    BigramLm::from_tensor(table + bias)
}

fn config(seed: u64, g: usize, max: usize) -> RolloutConfig {
    RolloutConfig { group_size: g, max_new_tokens: max, seed, ..RolloutConfig::default() }
}

fn prompts() -> Vec<Vec<TokenId>> {
    vec![vec![0, 1, 2], vec![3], vec![5, 6, 7, 8]]
}

/// Wraps a partner and counts its calls and how many tokens it is made to read.
struct Counting<'a> {
    inner: &'a dyn Partner,
    starts: AtomicUsize,
    calls: AtomicUsize,
    fed: AtomicUsize,
    /// Rows retired, each counted once per call that named it.
    retired: Mutex<Vec<usize>>,
}

impl<'a> Counting<'a> {
    fn new(inner: &'a dyn Partner) -> Self {
        Self {
            inner,
            starts: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            fed: AtomicUsize::new(0),
            retired: Mutex::new(Vec::new()),
        }
    }
}

impl Partner for Counting<'_> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn device(&self) -> Device {
        self.inner.device()
    }
    fn start(&self, prompts: &[&[TokenId]], copies: usize) -> trlvr::Result<(Session, Tensor<2>)> {
        self.starts.fetch_add(1, Ordering::Relaxed);
        self.inner.start(prompts, copies)
    }
    fn extend(&self, session: &mut Session, feeds: &[Feed<'_>]) -> trlvr::Result<Tensor<2>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.fed.fetch_add(feeds.iter().map(|f| f.tokens.len()).sum(), Ordering::Relaxed);
        self.inner.extend(session, feeds)
    }
    fn retire(&self, session: &mut Session, rows: &[usize]) -> trlvr::Result<()> {
        self.retired.lock().unwrap().extend(rows);
        self.inner.retire(session, rows)
    }
    fn score(&self, batch: &TokenBatch, temperature: f32) -> trlvr::Result<Tensor<2>> {
        self.inner.score(batch, temperature)
    }
}

#[test]
fn always_senior_schedule_reproduces_solo() {
    let (senior, junior, classes) = (model(1, -2.0), model(2, -2.0), classes());
    let tandem = RolloutEngine::new(&senior, &junior, &classes, config(7, 4, 40)).unwrap();
    let solo = RolloutEngine::solo(&senior, &classes, config(7, 4, 40)).unwrap();
    let a = tandem.generate(&prompts(), &WordBoundary::new(1.0, 32).unwrap()).unwrap();
    let b = solo.generate(&prompts(), &Solo::senior()).unwrap();
    assert_eq!(a, b);
    assert!(a.iter().all(|r| r.senior_share() == 1.0));
}

#[test]
fn solo_never_starts_the_junior_and_catch_up_reads_each_token_once() {
    let (senior, junior, classes) = (model(3, -1.0), model(4, -1.0), classes());
    let (s, j) = (Counting::new(&senior), Counting::new(&junior));
    let engine = RolloutEngine::new(&s, &j, &classes, config(5, 3, 30)).unwrap();
    engine.generate(&prompts(), &Solo::senior()).unwrap();
    assert_eq!(j.starts.load(Ordering::Relaxed), 0);
    assert_eq!(j.fed.load(Ordering::Relaxed), 0);
    // Every row, once finished, is retired from the senior's batch once; the junior, never
    // started, hears of none.
    let mut retired = s.retired.lock().unwrap().clone();
    retired.sort_unstable();
    assert_eq!(retired, (0..prompts().len() * 3).collect::<Vec<_>>());
    assert!(j.retired.lock().unwrap().is_empty());

    let (s, j) = (Counting::new(&senior), Counting::new(&junior));
    let engine = RolloutEngine::new(&s, &j, &classes, config(5, 3, 30)).unwrap();
    let rollouts = engine.generate(&prompts(), &WordBoundary::default()).unwrap();
    // Each model reads each response token at most once (its own by decoding, the
    // other's by catch-up); the last token of a row is read by nobody.
    let bound: usize = rollouts.iter().map(|r| r.tokens.len().saturating_sub(1)).sum();
    let (fs, fj) = (s.fed.load(Ordering::Relaxed), j.fed.load(Ordering::Relaxed));
    assert!(fs <= bound && fj <= bound, "senior read {fs}, junior {fj}, bound {bound}");
    assert_eq!((s.starts.load(Ordering::Relaxed), j.starts.load(Ordering::Relaxed)), (1, 1));
    for model in [&s, &j] {
        let mut retired = model.retired.lock().unwrap().clone();
        retired.sort_unstable();
        assert_eq!(retired, (0..rollouts.len()).collect::<Vec<_>>(), "each row retired once");
    }
}

#[test]
fn every_catch_up_mode_gives_the_same_rollouts() {
    let (senior, junior, classes) = (model(9, -1.0), model(10, -1.0), classes());
    let run = |catch_up, concurrent| {
        let (s, j) = (Counting::new(&senior), Counting::new(&junior));
        let cfg = RolloutConfig { catch_up, concurrent, ..config(4, 3, 30) };
        let rollouts = RolloutEngine::new(&s, &j, &classes, cfg)
            .unwrap()
            .generate(&prompts(), &WordBoundary::default())
            .unwrap();
        (rollouts, [s.fed.load(Ordering::Relaxed), j.fed.load(Ordering::Relaxed)])
    };
    let (lazy, lazy_reads) = run(CatchUp::Lazy, true);
    let (piggyback, piggyback_reads) = run(CatchUp::Piggyback, true);
    let (eager, eager_reads) = run(CatchUp::Eager, false);
    assert_eq!(lazy, piggyback);
    assert_eq!(lazy, eager);
    assert_eq!(run(CatchUp::Piggyback, false).0, lazy, "concurrency changes nothing");
    // Sampling where the logits are draws the same tokens (same uniforms, same rule).
    let on_device = RolloutConfig { host_sampling: Some(false), ..config(4, 3, 30) };
    let device_drawn = RolloutEngine::new(&senior, &junior, &classes, on_device)
        .unwrap()
        .generate(&prompts(), &WordBoundary::default())
        .unwrap();
    for (a, b) in device_drawn.iter().zip(&lazy) {
        assert_eq!((&a.tokens, &a.owners, a.finish), (&b.tokens, &b.owners, b.finish));
        assert!(a.log_probs.iter().zip(&b.log_probs).all(|(x, y)| (x - y).abs() < 1e-5));
    }
    // Eager: both models read every token as it comes (the release's cost), missing at
    // most the last two of a row (written after that model's last pass). The others
    // read no more than that.
    let tokens: usize = eager.iter().map(|r| r.tokens.len()).sum();
    for m in 0..2 {
        assert!(eager_reads[m] >= tokens - 2 * eager.len(), "{eager_reads:?} {tokens}");
        assert!(lazy_reads[m] <= piggyback_reads[m] && piggyback_reads[m] <= eager_reads[m]);
    }
}

#[test]
fn a_model_with_nothing_to_write_is_not_called() {
    // One row and strict alternation: each step exactly one model writes.
    let (senior, junior, classes) = (model(11, -3.0), model(12, -3.0), classes());
    let schedule = StepAlternation { first: Owner::Senior, max_rounds: 150 };
    for catch_up in [CatchUp::Lazy, CatchUp::Piggyback, CatchUp::Eager] {
        let (s, j) = (Counting::new(&senior), Counting::new(&junior));
        let cfg = RolloutConfig { catch_up, ..config(2, 1, 60) };
        let r =
            RolloutEngine::new(&s, &j, &classes, cfg).unwrap().generate(&[vec![0, 1]], &schedule).unwrap();
        let owners = &r[0].owners;
        assert!(owners.contains(&Owner::Junior), "the junior should get a turn");
        let calls = s.calls.load(Ordering::Relaxed) + j.calls.load(Ordering::Relaxed);
        // The first token comes from the prefill's logits.
        let steps = owners.len() - 1;
        match catch_up {
            CatchUp::Eager => assert!(calls > steps + 1, "{calls} calls for {steps} steps"),
            _ => assert_eq!(calls, steps, "{catch_up:?}"),
        }
    }
}

#[test]
fn progress_follows_every_step() {
    let (senior, junior, classes) = (model(13, -0.5), model(14, -0.5), classes());
    let engine = RolloutEngine::new(&senior, &junior, &classes, config(6, 3, 25)).unwrap();
    let mut seen: Vec<Progress> = Vec::new();
    let rollouts = engine.generate_with(&prompts(), &WordBoundary::default(), &mut |p| seen.push(p)).unwrap();
    assert_eq!(rollouts, engine.generate(&prompts(), &WordBoundary::default()).unwrap());
    let longest = rollouts.iter().map(|r| r.tokens.len()).max().unwrap();
    assert_eq!(seen.len(), longest, "one report per step");
    for (i, p) in seen.iter().enumerate() {
        assert_eq!((p.steps, p.rows), (i + 1, 9));
        // Rows still writing after step i are those longer than i + 1 tokens.
        assert_eq!(p.live, rollouts.iter().filter(|r| r.tokens.len() > i + 1).count());
        assert_eq!(p.tokens, rollouts.iter().map(|r| r.tokens.len().min(i + 1)).sum::<usize>());
    }
    assert_eq!(seen.last().unwrap().live, 0);
}

#[test]
fn eos_from_either_model_and_the_length_cap_end_rows() {
    let classes = classes();
    // The junior ends rows at once; the senior never would.
    let senior = model(5, -30.0);
    let junior = model(6, 30.0);
    let engine = RolloutEngine::new(&senior, &junior, &classes, config(1, 8, 25)).unwrap();
    let rollouts = engine.generate(&prompts(), &WordBoundary::default()).unwrap();
    let mut eos_ids = std::collections::BTreeSet::new();
    for r in &rollouts {
        assert!(r.tokens.len() <= 25);
        match r.finish {
            Finish::Eos => {
                let last = *r.tokens.last().unwrap();
                assert!(classes.is_eos(last));
                assert_eq!(*r.owners.last().unwrap(), Owner::Junior);
                assert!(r.tokens[..r.tokens.len() - 1].iter().all(|&t| !classes.is_eos(t)));
                eos_ids.insert(last);
            }
            Finish::Length => assert_eq!(r.tokens.len(), 25),
            Finish::Rounds => panic!("word schedule has no rounds"),
        }
    }
    assert_eq!(eos_ids.len(), 2, "both EOS ids should end rows: {eos_ids:?}");
    // The senior alone runs to the cap.
    let solo = RolloutEngine::solo(&senior, &classes, config(1, 2, 25)).unwrap();
    assert!(
        solo.generate(&prompts(), &Solo::senior())
            .unwrap()
            .iter()
            .all(|r| r.finish == Finish::Length && r.tokens.len() == 25)
    );
}

#[test]
fn rows_do_not_depend_on_their_batch() {
    let (senior, junior, classes) = (model(7, -1.0), model(8, -1.0), classes());
    let engine = RolloutEngine::new(&senior, &junior, &classes, config(11, 3, 30)).unwrap();
    let all = engine.generate(&prompts(), &WordBoundary::default()).unwrap();
    let alone = engine.generate(&prompts()[2..], &WordBoundary::default()).unwrap();
    assert_eq!(&all[6..], &alone.iter().map(|r| Rollout { prompt: 2, ..r.clone() }).collect::<Vec<_>>()[..]);
    // A repeated prompt gets fresh streams, not a copy.
    let twice = engine.generate(&[vec![3], vec![3]], &WordBoundary::default()).unwrap();
    assert_ne!(twice[0].tokens, twice[3].tokens);
    // Another seed, other rollouts.
    let other = RolloutEngine::new(&senior, &junior, &classes, config(12, 3, 30)).unwrap();
    assert_ne!(other.generate(&prompts(), &WordBoundary::default()).unwrap(), all);
}

#[test]
fn mismatched_vocabularies_are_refused() {
    let device = Device::default();
    let classes = classes();
    let (senior, small) = (model(1, 0.0), BigramLm::random(VOCAB + 3, 1.0, &device));
    let err = RolloutEngine::new(&senior, &small, &classes, config(0, 1, 5)).unwrap_err();
    assert!(matches!(err, Error::Vocabulary(_)), "{err}");
    for host_sampling in [Some(true), Some(false)] {
        let allowed = RolloutConfig { allow_vocab_prefix: true, host_sampling, ..config(0, 1, 5) };
        let engine = RolloutEngine::new(&senior, &small, &classes, allowed).unwrap();
        let rollouts = engine.generate(&prompts(), &TokenBernoulli::new(0.5).unwrap()).unwrap();
        assert!(rollouts.iter().flat_map(|r| &r.tokens).all(|&t| (t as usize) < VOCAB));
    }
    let tiny = BigramLm::random(8, 1.0, &device);
    assert!(
        RolloutEngine::new(&tiny, &tiny, &classes, config(0, 1, 5)).is_err(),
        "EOS outside the vocabulary"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Replay reproduces the owners, and every recorded log-prob equals its author's
    /// teacher-forced log-prob of the finished sequence (the caches stayed exact).
    #[test]
    fn owners_replay_and_log_probs_match_teacher_forcing(
        seed in any::<u64>(), p in 0.0f64..=1.0, k in 1usize..6, g in 1usize..4, n_prompts in 1usize..4,
        max in 1usize..40, which in 0usize..3, other in any::<bool>(), mode in 0usize..3,
        host_sampling in any::<Option<bool>>(),
    ) {
        let (senior, junior, classes) = (model(seed % 5, -1.0), model(seed % 7 + 10, -1.0), classes());
        let schedule: Box<dyn HandoffSchedule> = match which {
            0 => Box::new(WordBoundary::new(p, k).unwrap()),
            1 => Box::new(TokenBernoulli::new(p).unwrap()),
            _ => Box::new(StepAlternation { first: Owner::Senior, max_rounds: k }),
        };
        let prompts = &prompts()[..n_prompts];
        let catch_up = [CatchUp::Lazy, CatchUp::Piggyback, CatchUp::Eager][mode];
        let cfg = RolloutConfig { other_log_probs: other, catch_up, host_sampling, ..config(seed, g, max) };
        let engine = RolloutEngine::new(&senior, &junior, &classes, cfg).unwrap();
        let rollouts = engine.generate(prompts, schedule.as_ref()).unwrap();
        prop_assert_eq!(rollouts.len(), n_prompts * g);
        let sequences: Vec<Vec<TokenId>> = rollouts.iter().map(|r| prompts[r.prompt].iter().chain(&r.tokens).copied().collect()).collect();
        let batch = TokenBatch::new(sequences, 0).unwrap();
        let width = batch.width();
        let s = senior.score(&batch, 0.6).unwrap().try_into_vec_as::<f32>().unwrap();
        let j = junior.score(&batch, 0.6).unwrap().try_into_vec_as::<f32>().unwrap();
        for (i, r) in rollouts.iter().enumerate() {
            let (owners, _) = replay(schedule.as_ref(), &classes, &r.tokens, seed, r.row_key);
            prop_assert_eq!(&owners, &r.owners);
            let p0 = prompts[r.prompt].len();
            for (t, owner) in r.owners.iter().enumerate() {
                let (mine, theirs) = match owner { Owner::Senior => (&s, &j), Owner::Junior => (&j, &s) };
                prop_assert!((r.log_probs[t] - mine[i * width + p0 + t]).abs() < 1e-4);
                if let Some(o) = &r.other_log_probs {
                    prop_assert!((o[t] - theirs[i * width + p0 + t]).abs() < 1e-4);
                }
            }
            prop_assert!(r.tokens.len() <= max);
        }
    }
}
