//! The sentence schedule passes trlvr's testing kit and redraws exactly where it says:
//! after every sentence end and at its gap cap, never after a plain word start.

use proptest::prelude::*;
use trlvr::prelude::*;
use trlvr::schedule::replay;
use trlvr::testing::{check_schedule, token_stream, toy_classes};
use trlvr_sentence_handoff::SentenceHandoff;

/// ids: 0 " The", 1 " cat", 2 ".", 3 "?", 4 "!", 5 "3", 6 "\n", 7 "<eos>"
fn classes() -> TokenClasses {
    TokenClasses::from_texts(&[" The", " cat", ".", "?", "!", "3", "\n", "<eos>"], &[7]).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn passes_the_kit(tokens in token_stream(&toy_classes(), 40), p in 0.0f64..=1.0, gap in 1usize..6, seed in 0u64..1000) {
        let schedule = SentenceHandoff::new(p, gap).unwrap();
        check_schedule(&schedule, &toy_classes(), &tokens, seed).map_err(|v| TestCaseError::fail(v.to_string()))?;
    }
}

#[test]
fn sentence_ends_are_a_token_class() {
    let texts = [" The", ".", "?\n", "!  ", " 3.", ".)", "\n\n", "e.g", "。", "<eos>"];
    let classes = TokenClasses::from_texts(&texts, &[9]).unwrap();
    let ends: Vec<bool> = (0..texts.len() as TokenId).map(|t| classes.is_sentence_end(t)).collect();
    assert_eq!(ends, [false, true, true, true, true, false, true, false, true, false]);
}

/// Over 256 seeds: every handoff follows a sentence end or the cap, and each such point
/// does hand off in some seed (a schedule that ignored sentence ends or the cap fails).
#[test]
fn redraws_after_sentence_ends_and_at_the_cap_only() {
    let classes = classes();
    let max_gap = 4;
    let schedule = SentenceHandoff::new(0.5, max_gap).unwrap();
    // "The cat cat cat cat cat. The cat? 3 3 3 3 3 3 The! cat\n The"
    let tokens = [0, 1, 1, 1, 1, 1, 2, 0, 1, 3, 5, 5, 5, 5, 5, 5, 0, 4, 1, 6, 0];
    let mut redraw_before = vec![false; tokens.len() + 1];
    let mut gap = 0;
    for (i, &t) in tokens.iter().enumerate() {
        gap += 1;
        if classes.is_sentence_end(t) || gap >= max_gap {
            redraw_before[i + 1] = true;
            gap = 0;
        }
    }
    let mut handoffs = vec![0; tokens.len()];
    for seed in 0..256 {
        let (owners, finish) = replay(&schedule, &classes, &tokens, seed, 0);
        assert_eq!((owners.len(), finish), (tokens.len(), None));
        for i in 1..owners.len() {
            if owners[i] != owners[i - 1] {
                assert!(redraw_before[i], "handoff before token {i} without a redraw (seed {seed})");
                handoffs[i] += 1;
            }
        }
    }
    for i in 1..tokens.len() {
        assert_eq!(
            redraw_before[i],
            handoffs[i] > 0,
            "token {i}: redraw point {} but {} handoffs",
            redraw_before[i],
            handoffs[i]
        );
    }
    // The fixture covers both kinds of redraw point and word starts that are neither.
    assert!(redraw_before[7] && redraw_before[10] && redraw_before[14] && !redraw_before[2]);
}

#[test]
fn bad_settings_are_refused() {
    let err = SentenceHandoff::new(1.5, 8).unwrap_err().to_string();
    assert!(err.contains("p_senior") && err.contains("1.5"), "{err}");
    let err = SentenceHandoff::new(0.5, 0).unwrap_err().to_string();
    assert!(err.contains("max_gap"), "{err}");
    // p_senior = 0: the junior writes everything.
    let (owners, _) = replay(&SentenceHandoff::new(0.0, 2).unwrap(), &classes(), &[0, 2, 1, 3, 5], 3, 0);
    assert_eq!(owners, vec![Owner::Junior; 5]);
}
