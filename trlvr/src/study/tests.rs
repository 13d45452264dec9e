//! The verdict rules on crafted distributions: not testable (design, precondition),
//! not shown, contradicted, shown; Holm's procedure across claims and over a claim's
//! alternatives; and an analysis of crafted runs end to end.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::claim::ClaimSpec;
use super::*;
use crate::eval::{ChainStats, EvalConfig, ProblemResult, Report, Throughput};

const ARMS: [&str; 6] = ["grpo", "trlvr", "kl-a", "kl-b", "kl-c", "base"];

fn claims(json: serde_json::Value) -> Vec<Claim> {
    let specs: Vec<ClaimSpec> = serde_json::from_value(json).unwrap();
    let arms: Vec<String> = ARMS.map(String::from).to_vec();
    check_claims(&specs, Names { arms: &arms, evaluations: &["step".to_string()], columns: &[] }).unwrap()
}

/// A distribution centred on `value` whose 95% interval is about `value ± half`.
fn around(value: f64, half: f64) -> Distribution {
    // 2000 draws evenly spread over value ± 1.0256 half: the 2.5% and 97.5% points land at ± half.
    let spread = half / 0.95;
    let draws = (0..2001).map(|i| value - spread + 2.0 * spread * f64::from(i) / 2000.0).collect();
    Distribution { value, draws }
}

/// Reads `claims` with each test's distribution looked up by its label.
fn judge(claims: &[Claim], table: &[(&str, Distribution)], multiplicity: Multiplicity) -> Vec<ClaimReading> {
    let table: BTreeMap<String, Distribution> =
        table.iter().map(|(k, d)| ((*k).to_string(), d.clone())).collect();
    let how = Reading { confidence: 0.95, multiplicity, several_evaluations: false };
    verdict::judge(claims, how, &|t: &Test| {
        table
            .get(&t.label(false))
            .cloned()
            .unwrap_or_else(|| panic!("no distribution for {}", t.label(false)))
    })
}

fn solo_claim(requires: serde_json::Value) -> Vec<Claim> {
    claims(serde_json::json!([{
        "id": "solo", "statement": "TRLVR as accurate alone as GRPO",
        "figure": "solo", "a": "trlvr", "b": "grpo", "within": 5.0, "expected_half_width": 3.0,
        "requires": requires,
    }]))
}

#[test]
fn equivalence_reads_shown_not_shown_and_contradicted_off_its_interval() {
    let c = solo_claim(serde_json::json!([]));
    for (value, half, want) in [
        (0.5, 3.0, Verdict::Shown),        // [-2.5, 3.5] inside ±5
        (3.0, 3.0, Verdict::NotShown),     // [0, 6] straddles +5
        (-4.0, 3.5, Verdict::NotShown),    // [-7.5, -0.5] straddles -5
        (9.0, 3.0, Verdict::Contradicted), // [6, 12] wholly outside
        (-12.0, 3.0, Verdict::Contradicted),
    ] {
        let r = judge(&c, &[("trlvr − grpo: solo", around(value, half))], Multiplicity::None);
        assert_eq!(r[0].verdict, want, "{value} ± {half}: {}", r[0].why);
        let e = r[0].alternatives[0].tests[0].estimate;
        assert!((e.low - (value - half)).abs() < 0.01 && (e.high - (value + half)).abs() < 0.01, "{e:?}");
    }
}

/// A failed precondition makes the claim not testable whatever its own result: the same
/// verdict for a result that would show it and one that would contradict it.
#[test]
fn a_failed_precondition_is_not_testable_whatever_the_result() {
    let c = solo_claim(serde_json::json!([{ "figure": "solo", "a": "grpo", "below": 93.0 }]));
    let saturated = around(97.0, 1.5); // [95.5, 98.5]: GRPO at the ceiling
    let straddling = around(92.0, 2.0); // [90, 94]: not shown below 93 either
    let fine = around(85.0, 3.0);
    for (grpo, testable) in [(&saturated, false), (&straddling, false), (&fine, true)] {
        for result in [around(0.0, 2.0), around(20.0, 2.0)] {
            let r = judge(
                &c,
                &[("grpo: solo", grpo.clone()), ("trlvr − grpo: solo", result.clone())],
                Multiplicity::None,
            );
            let want = match (testable, result.value == 0.0) {
                (false, _) => Verdict::NotTestable,
                (true, true) => Verdict::Shown,
                (true, false) => Verdict::Contradicted,
            };
            assert_eq!(r[0].verdict, want, "{}", r[0].why);
            if !testable {
                assert!(
                    r[0].why.starts_with("a precondition is not shown: grpo: solo < 93 is"),
                    "{}",
                    r[0].why
                );
            }
            assert_eq!(r[0].requires[0].outcome == Verdict::Shown, testable);
        }
    }
}

/// A claim the design declares untestable (a ceiling of the task, known before the run)
/// is not testable with that reason, whether its intervals would show or contradict it,
/// and takes no place in Holm's order.
#[test]
fn a_claim_declared_untestable_is_not_testable_whatever_the_result() {
    let declared = claims(serde_json::json!([
        {
            "id": "solo", "statement": "s", "figure": "solo", "a": "trlvr", "b": "grpo",
            "within": 5.0, "expected_half_width": 2.0,
            "untestable": "the plain notation fits 60% of the problems",
        },
        { "id": "tax", "statement": "t", "figure": "tax", "a": "trlvr", "below": 5.0 },
    ]));
    for result in [around(0.0, 1.0), around(20.0, 1.0)] {
        let r = judge(
            &declared,
            &[("trlvr − grpo: solo", result), ("trlvr: tax", around(0.0, 1.0))],
            Multiplicity::Holm,
        );
        assert_eq!(r[0].verdict, Verdict::NotTestable);
        assert!(r[0].why.contains("the plain notation fits 60%"), "{}", r[0].why);
        // Holm counts one testable claim: the other is read at the study's confidence.
        assert_eq!(r[1].verdict, Verdict::Shown);
        assert!((r[1].confidence - 0.95).abs() < 1e-12, "{}", r[1].confidence);
    }
}

/// A margin no wider than the interval the design expects cannot show equivalence: not
/// testable before the run, even when the realised interval happens to be narrow.
#[test]
fn a_margin_inside_the_expected_interval_is_not_testable_by_design() {
    let c = claims(serde_json::json!([{
        "id": "solo", "statement": "s", "figure": "solo", "a": "trlvr", "b": "grpo",
        "within": 2.0, "expected_half_width": 2.5,
    }]));
    let r = judge(&c, &[("trlvr − grpo: solo", around(0.0, 0.5))], Multiplicity::None);
    assert_eq!(r[0].verdict, Verdict::NotTestable);
    assert!(r[0].why.starts_with("by design:"), "{}", r[0].why);
}

/// An undefined figure (no chain measured, say) is not testable, not "not shown".
#[test]
fn an_undefined_figure_is_not_testable() {
    let c = claims(
        serde_json::json!([{ "id": "ce", "statement": "s", "figure": "junior_ce", "a": "trlvr", "b": "grpo", "below": 0.0 }]),
    );
    let nan = Distribution { value: f64::NAN, draws: vec![f64::NAN; 10] };
    let r = judge(&c, &[("trlvr − grpo: junior_ce", nan)], Multiplicity::None);
    assert_eq!(r[0].verdict, Verdict::NotTestable);
    assert!(r[0].why.contains("undefined"), "{}", r[0].why);
}

/// Two claims each shown at 95% alone: under Holm the first is read at 97.5%, where it
/// straddles, so the procedure stops and neither is shown. A strong claim first lets the
/// borderline one be read at 95%.
#[test]
fn holm_reads_claims_in_turn_and_stops_at_the_first_undecided() {
    let c = claims(serde_json::json!([
        { "id": "tax", "statement": "s", "figure": "tax", "a": "trlvr", "b": "grpo", "below": 0.0 },
        { "id": "ce", "statement": "s", "figure": "junior_ce", "a": "trlvr", "b": "grpo", "below": 0.0 },
    ]));
    let borderline = around(-2.03, 2.0); // 95%: [-4.03, -0.03]; 97.5%: about [-4.08, +0.02]
    let strong = around(-10.0, 2.0);
    let table = [("trlvr − grpo: tax", borderline.clone()), ("trlvr − grpo: junior_ce", borderline.clone())];
    let alone = judge(&c, &table, Multiplicity::None);
    assert!(alone.iter().all(|r| r.verdict == Verdict::Shown));
    let holm = judge(&c, &table, Multiplicity::Holm);
    assert_eq!(holm[0].verdict, Verdict::NotShown, "{}", holm[0].why);
    assert_eq!(holm[1].verdict, Verdict::NotShown, "{}", holm[1].why);
    assert!((holm[0].confidence - 0.975).abs() < 1e-12 && (holm[1].confidence - 0.95).abs() < 1e-12);
    assert!(holm[1].why.starts_with("Holm's procedure stopped at claim \"tax\""), "{}", holm[1].why);
    let table = [("trlvr − grpo: tax", borderline), ("trlvr − grpo: junior_ce", strong)];
    let holm = judge(&c, &table, Multiplicity::Holm);
    assert_eq!((holm[0].verdict, holm[1].verdict), (Verdict::Shown, Verdict::Shown));
    assert!((holm[1].confidence - 0.975).abs() < 1e-12 && (holm[0].confidence - 0.95).abs() < 1e-12);
}

fn kl_claim() -> Vec<Claim> {
    claims(serde_json::json!([{
        "id": "kl", "statement": "no KL-Reg setting reaches TRLVR", "rule": "none",
        "each": ["kl-a", "kl-b", "kl-c"],
        "tests": [
            { "figure": "tax", "a": "{each}", "b": "trlvr", "below": 5.0 },
            { "figure": "solo", "a": "{each}", "b": "trlvr", "above": -5.0 },
        ],
    }]))
}

/// "None reaches": one setting shown to reach at 1 − α/3 contradicts it; every setting
/// failing a test shows it; a setting that reaches only at 95% (not at 98.3%) is not
/// enough, and leaves the claim not shown.
#[test]
fn none_of_several_settings_is_read_with_holm_over_them() {
    let c = kl_claim();
    let fails = (around(20.0, 3.0), around(0.0, 3.0)); // its tax far above TRLVR's
    let reaches = (around(0.0, 2.0), around(0.0, 2.0));
    let barely = (around(2.95, 2.0), around(0.0, 2.0)); // tax: 95% [0.95, 4.95]; 98.3% up to 5.02
    let read = |settings: [&(Distribution, Distribution); 3]| {
        let mut table = Vec::new();
        for (name, (tax, solo)) in ["kl-a", "kl-b", "kl-c"].iter().zip(settings) {
            table.push((format!("{name} − trlvr: tax"), tax.clone()));
            table.push((format!("{name} − trlvr: solo"), solo.clone()));
        }
        let table: Vec<(&str, Distribution)> = table.iter().map(|(k, d)| (k.as_str(), d.clone())).collect();
        judge(&c, &table, Multiplicity::None).remove(0)
    };
    let r = read([&fails, &reaches, &fails]);
    assert_eq!(r.verdict, Verdict::Contradicted, "{}", r.why);
    assert!(r.why.starts_with("holds at confidence 0.9833: kl-b"), "{}", r.why);
    let r = read([&fails, &fails, &fails]);
    assert_eq!(r.verdict, Verdict::Shown, "{}", r.why);
    let r = read([&fails, &barely, &fails]);
    assert_eq!(r.verdict, Verdict::NotShown, "{}", r.why);
    assert_eq!(r.alternatives[1].tests[0].outcome, Verdict::Shown, "shown at 95% alone");
    assert_eq!(r.alternatives[1].holds, Verdict::NotShown);
}

proptest! {
    /// A test's outcome always follows its interval and threshold.
    #[test]
    fn outcomes_follow_intervals(value in -20.0f64..20.0, half in 0.01f64..10.0, t in -10.0f64..10.0, m in 0.1f64..10.0) {
        let d = around(value, half);
        let e = d.estimate(0.95);
        for (threshold, shown, contradicted) in [
            (Threshold::Below(t), e.high < t, e.low > t),
            (Threshold::Above(t), e.low > t, e.high < t),
            (Threshold::Within(m), e.low > -m && e.high < m, e.low > m || e.high < -m),
        ] {
            let test = Test { figure: Figure::Solo, a: "a".into(), b: None, evaluation: "e".into(), threshold, expected_half_width: None };
            let outcome = verdict::read_test(&test, &d, 0.95, false).outcome;
            let want = if shown { Verdict::Shown } else if contradicted { Verdict::Contradicted } else { Verdict::NotShown };
            prop_assert_eq!(outcome, want);
        }
    }
}

fn crafted(solved: impl Fn(usize) -> usize, hash: u64) -> Evaluated {
    let problems = (0..30)
        .map(|id| ProblemResult {
            id,
            n: 4,
            solo_correct: solved(id).min(4),
            handoff_correct: solved(id).min(4) / 2,
            solo_tokens: 40,
            handoff_tokens: 40,
            handoff_senior_tokens: 20,
            handoff_junior_nll: 10.0,
            legibility: ChainStats::default(),
            prompt_hash: Some(hash + id as u64),
        })
        .collect();
    let config = EvalConfig { n: 4, ks: vec![1], bootstrap: 10, ..EvalConfig::default() };
    Report::from_results(&config, vec![("toy".into(), problems)], Throughput::default()).unwrap().into()
}

/// End to end: the table's pooled figures are the mean of equal-sized seeds, each seed's
/// own value is listed, and results on other prompts are refused.
#[test]
fn an_analysis_pools_seeds_and_refuses_other_problems() {
    let arm = |name: &str, runs: Vec<Evaluated>| ArmResults {
        name: name.into(),
        seeds: (1..=runs.len() as u64).collect(),
        evaluations: BTreeMap::from([("step".to_string(), runs)]),
    };
    let grpo = arm("grpo", vec![crafted(|i| i % 5, 0), crafted(|i| i % 3, 0), crafted(|i| (i + 1) % 5, 0)]);
    let trlvr = arm("trlvr", vec![crafted(|i| i % 4, 0), crafted(|i| i % 2, 0)]);
    let c = claims(
        serde_json::json!([{ "id": "x", "statement": "s", "figure": "solo", "a": "trlvr", "b": "grpo", "above": 0.0 }]),
    );
    let a = Analysis::new(&[grpo.clone(), trlvr.clone()], &c, &AnalysisConfig::default()).unwrap();
    let row = a.row("step", "grpo").unwrap();
    let solo = &row.figures[&Figure::Solo];
    assert_eq!(solo.seeds.len(), 3);
    assert!((solo.estimate.value - solo.seeds.iter().sum::<f64>() / 3.0).abs() < 1e-9);
    assert!(solo.estimate.low < solo.estimate.value && solo.estimate.value < solo.estimate.high);
    assert!(a.seed_notes["grpo"].starts_with("3 seeds resampled"));
    let json = serde_json::to_string(&a).unwrap();
    let back: Analysis = serde_json::from_str(&json).unwrap();
    assert_eq!(back.claims, a.claims);
    // One seed of TRLVR on other prompts (another template, say): refused.
    let other = arm("trlvr", vec![crafted(|i| i % 4, 0), crafted(|i| i % 2, 7)]);
    let err = Analysis::new(&[grpo, other], &c, &AnalysisConfig::default()).unwrap_err();
    assert!(matches!(err, Error::Incomparable(_)), "{err}");
    assert!(err.to_string().contains("arm trlvr (seed 2) was evaluated on other problems"), "{err}");
}

/// Runs of 30 problems × 4 samples: `solo` and `handoff` correct samples on every problem.
fn flat(solo: usize, handoff: usize) -> Evaluated {
    let problems = (0..30)
        .map(|id| ProblemResult {
            id,
            n: 4,
            solo_correct: solo,
            handoff_correct: handoff,
            solo_tokens: 40,
            handoff_tokens: 40,
            handoff_senior_tokens: 20,
            handoff_junior_nll: 10.0,
            legibility: ChainStats::default(),
            prompt_hash: Some(id as u64),
        })
        .collect();
    let config = EvalConfig { n: 4, ks: vec![1], bootstrap: 10, ..EvalConfig::default() };
    Report::from_results(&config, vec![("toy".into(), problems)], Throughput::default()).unwrap().into()
}

/// Claim 4's rule end to end, over settings of three seeds each: a setting whose every
/// seed pays a large tax fails; one whose seeds match TRLVR's reaches it and contradicts
/// the claim; one whose seeds disagree (one of three pays the tax) is undecided, because
/// its seeds are resampled, and leaves the claim not shown.
#[test]
fn claim_four_over_settings_with_seeds_follows_the_seed_resampling() {
    let arm = |name: &str, runs: Vec<Evaluated>| ArmResults {
        name: name.into(),
        seeds: (1..=runs.len() as u64).collect(),
        evaluations: BTreeMap::from([("step".to_string(), runs)]),
    };
    let trlvr = || arm("trlvr", vec![flat(3, 3), flat(3, 3), flat(3, 3)]);
    let far = |name: &str| arm(name, vec![flat(4, 0), flat(4, 0), flat(4, 1)]);
    let same = |name: &str| arm(name, vec![flat(3, 3), flat(3, 3), flat(3, 3)]);
    let split = |name: &str| arm(name, vec![flat(3, 3), flat(4, 0), flat(3, 3)]);
    let c = kl_claim();
    let verdict = |arms: Vec<ArmResults>| {
        let a = Analysis::new(&arms, &c, &AnalysisConfig::default()).unwrap();
        (a.claims[0].verdict, a.claims[0].alternatives.iter().map(|x| x.holds).collect::<Vec<_>>())
    };
    let (v, holds) = verdict(vec![trlvr(), far("kl-a"), far("kl-b"), far("kl-c")]);
    assert_eq!(v, Verdict::Shown, "every setting fails: {holds:?}");
    let (v, holds) = verdict(vec![trlvr(), far("kl-a"), same("kl-b"), far("kl-c")]);
    assert_eq!((v, holds[1]), (Verdict::Contradicted, Verdict::Shown), "{holds:?}");
    let (v, holds) = verdict(vec![trlvr(), far("kl-a"), split("kl-b"), far("kl-c")]);
    assert_eq!(v, Verdict::NotShown, "{holds:?}");
    assert_eq!(holds[1], Verdict::NotShown, "a third of the seeds pay the tax: {holds:?}");
}

/// A precondition comparing two arms puts that pair on every pair figure, once, in each
/// evaluation both have: its own figure the same estimate the precondition was read at.
#[test]
fn a_precondition_s_pair_is_shown_on_every_pair_figure() {
    let arm = |name: &str, runs: Vec<Evaluated>| ArmResults {
        name: name.into(),
        seeds: (1..=runs.len() as u64).collect(),
        evaluations: BTreeMap::from([("step".to_string(), runs)]),
    };
    let grpo = arm("grpo", vec![crafted(|i| i % 5, 0), crafted(|i| i % 3, 0)]);
    let trlvr = arm("trlvr", vec![crafted(|i| i % 4, 0), crafted(|i| i % 2, 0)]);
    let base = arm("base", vec![crafted(|i| i % 2, 0)]);
    let requires = serde_json::json!([{ "figure": "solo", "a": "grpo", "b": "base", "above": 0.0 }]);
    let c = claims(serde_json::json!([
        { "id": "x", "statement": "s", "figure": "solo", "a": "trlvr", "b": "grpo", "above": 0.0, "requires": requires },
        { "id": "y", "statement": "t", "figure": "tax", "a": "trlvr", "b": "grpo", "below": 0.0, "requires": requires },
    ]));
    let a = Analysis::new(&[grpo, trlvr, base], &c, &AnalysisConfig::default()).unwrap();
    assert_eq!(a.pairs.len(), 1, "one pair, though two claims require it");
    let pair = &a.pairs[0];
    assert_eq!((pair.a.as_str(), pair.b.as_str(), pair.evaluation.as_str()), ("grpo", "base", "step"));
    assert_eq!(pair.figures[&Figure::Solo], a.claims[0].requires[0].estimate);
    let tax = |arm: &str| a.row("step", arm).unwrap().figures[&Figure::Tax].estimate.value;
    assert!((pair.figures[&Figure::Tax].value - (tax("grpo") - tax("base"))).abs() < 1e-9);
    assert_eq!(pair.figures.len(), PAIR_FIGURES.len());
}
