//! Property tests of the handoff schedules' state machines.

use proptest::prelude::*;
use trlvr::prelude::*;
use trlvr::schedule::HandoffState;
use trlvr::schedule::replay;
use trlvr::testing::{check_schedule, token_stream, toy_classes};

/// Indices where the owner changes (a handoff before token i).
fn handoffs(owners: &[Owner]) -> Vec<usize> {
    (1..owners.len()).filter(|&i| owners[i] != owners[i - 1]).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn builtins_pass_the_kit(tokens in token_stream(&toy_classes(), 120), seed in any::<u64>(), p in 0.0f64..=1.0, k in 1usize..8) {
        let classes = toy_classes();
        let schedules: Vec<Box<dyn HandoffSchedule>> = vec![
            Box::new(Solo::senior()),
            Box::new(Solo::junior()),
            Box::new(WordBoundary::new(p, k).unwrap()),
            Box::new(TokenBernoulli::new(p).unwrap()),
            Box::new(StepAlternation::default()),
            Box::new(StepAlternation { first: Owner::Junior, max_rounds: 3 }),
        ];
        for s in &schedules {
            check_schedule(s.as_ref(), &classes, &tokens, seed).map_err(|v| TestCaseError::fail(format!("{}: {v}", s.name())))?;
        }
    }

    #[test]
    fn certain_coins_give_one_author(tokens in token_stream(&toy_classes(), 120), seed in any::<u64>(), k in 1usize..40) {
        let classes = toy_classes();
        for (p, owner) in [(1.0, Owner::Senior), (0.0, Owner::Junior)] {
            let word = WordBoundary::new(p, k).unwrap();
            let token = TokenBernoulli::new(p).unwrap();
            prop_assert!(replay(&word, &classes, &tokens, seed, 0).0.iter().all(|&o| o == owner));
            prop_assert!(replay(&token, &classes, &tokens, seed, 0).0.iter().all(|&o| o == owner));
        }
    }

    /// A handoff happens only right after a word-start token or after K tokens without a redraw.
    #[test]
    fn word_handoffs_follow_boundaries_or_the_cap(tokens in token_stream(&toy_classes(), 200), seed in any::<u64>(), p in 0.05f64..0.95, k in 1usize..6) {
        let classes = toy_classes();
        let (owners, _) = replay(&WordBoundary::new(p, k).unwrap(), &classes, &tokens, seed, 1);
        // Recompute the redraw points from the definition: after a boundary token, or
        // when the gap since the last redraw reaches K.
        let mut gap = 0;
        let mut redraw_before = vec![false; tokens.len() + 1];
        for (i, &t) in tokens.iter().enumerate() {
            gap += 1;
            if classes.is_word_start(t) || gap >= k {
                redraw_before[i + 1] = true;
                gap = 0;
            }
        }
        for i in handoffs(&owners) {
            prop_assert!(redraw_before[i], "handoff before token {} without a redraw", i);
        }
    }

    /// Step alternation switches exactly when the current turn's text ends with "\n\n".
    #[test]
    fn step_switches_exactly_at_paragraph_ends(tokens in token_stream(&toy_classes(), 200), seed in any::<u64>()) {
        let classes = toy_classes();
        let texts = [" the", "cat", " sat", "\n", "\n\n", ".\n\n", "x", " y", "\\frac", "{", "}", "1", " 2"];
        let (owners, finish) = replay(&StepAlternation::default(), &classes, &tokens, seed, 0);
        prop_assert!(owners.first().is_none_or(|&o| o == Owner::Senior));
        let mut turn = String::new();
        let mut expected = Owner::Senior;
        for (i, &t) in tokens.iter().enumerate().take(owners.len()) {
            prop_assert_eq!(owners[i], expected, "token {}", i);
            turn.push_str(texts[t as usize]);
            if turn.ends_with("\n\n") {
                expected = expected.other();
                turn.clear();
            }
        }
        prop_assert!(finish.is_none() || finish == Some(Finish::Rounds));
    }

    #[test]
    fn step_stops_after_max_rounds(n in 1usize..6) {
        let classes = toy_classes();
        let paragraphs = vec![4; 20]; // "\n\n" each
        let (owners, finish) = replay(&StepAlternation { first: Owner::Senior, max_rounds: n }, &classes, &paragraphs, 0, 0);
        prop_assert_eq!(owners.len(), n);
        prop_assert_eq!(finish, Some(Finish::Rounds));
        let alternating = owners.iter().enumerate().all(|(i, &o)| o == if i % 2 == 0 { Owner::Senior } else { Owner::Junior });
        prop_assert!(alternating);
    }
}

/// The realised senior share tracks p_sen (4,000 tokens per p; 4 sigma is < 0.04).
#[test]
fn realised_share_tracks_p() {
    let classes = toy_classes();
    let tokens: Vec<TokenId> = (0..4000).map(|i| [0, 1, 2, 6, 7, 9][i % 6]).collect();
    for p in [0.1, 0.3, 0.5, 0.8] {
        for (name, schedule) in [
            ("word", Box::new(WordBoundary::new(p, 4).unwrap()) as Box<dyn HandoffSchedule>),
            ("token", Box::new(TokenBernoulli::new(p).unwrap())),
        ] {
            let (owners, _) = replay(schedule.as_ref(), &classes, &tokens, 42, 0);
            let share = owners.iter().filter(|&&o| o == Owner::Senior).count() as f64 / owners.len() as f64;
            assert!((share - p).abs() < 0.04, "{name} p={p}: senior share {share}");
        }
    }
}

/// The redraw comes after the boundary token: with p = 0.5 on a stream of word starts,
/// handoffs appear, and the token right after a boundary may belong to either model.
#[test]
fn rows_draw_from_their_own_streams() {
    let classes = toy_classes();
    let tokens = vec![0; 64];
    let schedule = WordBoundary::default();
    let a = replay(&schedule, &classes, &tokens, 9, 0).0;
    let b = replay(&schedule, &classes, &tokens, 9, 1).0;
    assert_ne!(a, b, "rows with different keys must not share a random stream");
    assert_eq!(a, replay(&schedule, &classes, &tokens, 9, 0).0);
}

#[test]
fn bad_probabilities_are_refused() {
    assert!(WordBoundary::new(1.5, 32).is_err());
    assert!(WordBoundary::new(0.5, 0).is_err());
    assert!(TokenBernoulli::new(-0.1).is_err());
}

#[test]
fn several_eos_ids_end_the_row() {
    let classes = toy_classes();
    for eos in [13, 14] {
        let (owners, finish) = replay(&Solo::senior(), &classes, &[0, 1, eos, 0, 1], 0, 0);
        assert_eq!(owners.len(), 3);
        assert_eq!(finish, Some(Finish::Eos));
    }
}

/// Redraws only at the gap cap: ignores word starts.
#[derive(Debug)]
struct CapOnly(WordBoundary);

/// Redraws only after word starts: ignores the cap.
#[derive(Debug)]
struct WordsOnly(WordBoundary);

#[derive(Debug)]
struct Broken {
    inner: WordBoundary,
    use_words: bool,
    use_cap: bool,
    author: Owner,
    gap: usize,
}

impl HandoffState for Broken {
    fn author(&self) -> Owner {
        self.author
    }
    fn after(&mut self, token: TokenId, classes: &TokenClasses, rng: &mut dyn rand::RngCore) -> Next {
        use rand::Rng;
        self.gap += 1;
        if (self.use_words && classes.is_word_start(token))
            || (self.use_cap && self.gap >= self.inner.max_gap)
        {
            self.author = if rng.random_bool(self.inner.p_senior) { Owner::Senior } else { Owner::Junior };
            self.gap = 0;
        }
        Next::Write(self.author)
    }
}

fn broken(
    inner: WordBoundary,
    use_words: bool,
    use_cap: bool,
    rng: &mut dyn rand::RngCore,
) -> Box<dyn HandoffState> {
    use rand::Rng;
    let author = if rng.random_bool(inner.p_senior) { Owner::Senior } else { Owner::Junior };
    Box::new(Broken { inner, use_words, use_cap, author, gap: 0 })
}

impl HandoffSchedule for CapOnly {
    fn name(&self) -> &str {
        "cap-only"
    }
    fn begin(&self, rng: &mut dyn rand::RngCore) -> Box<dyn HandoffState> {
        broken(self.0, false, true, rng)
    }
}

impl HandoffSchedule for WordsOnly {
    fn name(&self) -> &str {
        "words-only"
    }
    fn begin(&self, rng: &mut dyn rand::RngCore) -> Box<dyn HandoffState> {
        broken(self.0, true, false, rng)
    }
}

#[test]
fn the_kit_catches_schedules_that_ignore_word_starts_or_the_cap() {
    use trlvr::testing::check_redraws;
    for (p, k) in [(0.5, 4), (0.1, 2), (0.9, 7)] {
        let word = WordBoundary::new(p, k).unwrap();
        check_redraws(&word, p, k).unwrap();
        let err = check_redraws(&CapOnly(word), p, k).unwrap_err().to_string();
        assert!(err.contains("word start"), "{err}");
        let err = check_redraws(&WordsOnly(word), p, k).unwrap_err().to_string();
        assert!(err.contains("gap cap"), "{err}");
    }
}

#[test]
fn builtin_schedules_refuse_bad_settings_before_any_row_starts() {
    let bad: Vec<Box<dyn HandoffSchedule>> = vec![
        Box::new(WordBoundary { p_senior: 1.5, max_gap: 4 }),
        Box::new(WordBoundary { p_senior: 0.5, max_gap: 0 }),
        Box::new(TokenBernoulli { p_senior: -0.1 }),
        Box::new(StepAlternation { first: Owner::Senior, max_rounds: 0 }),
    ];
    let classes = toy_classes();
    let device = burn::prelude::Device::default();
    let model = BigramLm::random(classes.vocab_size(), 1.0, &device);
    let config = RolloutConfig { group_size: 2, max_new_tokens: 4, ..RolloutConfig::default() };
    let engine = RolloutEngine::solo(&model, &classes, config).unwrap();
    for s in &bad {
        assert!(s.validate().is_err(), "{s:?}");
        let err = engine.generate(&[vec![0]], s.as_ref()).unwrap_err();
        assert!(matches!(err, trlvr::Error::Config(_)), "{s:?}: {err}");
        assert!(check_schedule(s.as_ref(), &classes, &[0, 1], 0).is_err(), "{s:?}");
    }
    let registry = trlvr::plugin::Registry::with_linked();
    assert!(registry.schedule("step", &serde_json::json!({ "max_rounds": 0 })).is_err());
    assert!(registry.schedule("word", &serde_json::json!({ "p_senior": 2.0 })).is_err());
}
