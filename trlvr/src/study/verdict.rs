//! Reading claims off intervals: shown, contradicted, not shown, or not testable.
//!
//! A test is read off the percentile interval of its figure (or difference) at the
//! claim's confidence: **shown** when the whole interval lies on the claim's side of the
//! threshold (inside the margin, for equivalence), **contradicted** when it lies wholly on
//! the other side (outside the margin), **not shown** when it straddles.
//!
//! A claim is **not testable** when, before its own figures are read, the study could not
//! have decided it either way: an equivalence margin no wider than the half-width the
//! design expects (declared in the file), a precondition not shown (those rest on other
//! figures: [`super::claim`] refuses one that reads the claim's own comparison), or a
//! figure that is undefined (no chains to measure, say).
//!
//! Several claims: with [`Multiplicity::Holm`], the testable claims are ranked by how far
//! their intervals clear their thresholds and read in turn at confidence
//! 1 − α/m, 1 − α/(m − 1), ... (Holm's step-down procedure, α = 1 − confidence); at the
//! first claim not decided the procedure stops and the claims after it are not shown.
//! Within a [`Rule::None`] claim the same procedure runs over its alternatives, whose
//! "holds" would contradict it; it is shown only when every alternative is contradicted
//! at the claim's confidence (an intersection of tests, which needs no correction).

use serde::{Deserialize, Serialize};

use super::claim::{Claim, Rule, Test, Threshold};
use super::resample::{Distribution, Side};
use crate::eval::Estimate;

/// What the intervals say of a test or a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every interval the claim needs lies on its side.
    Shown,
    /// An interval lies wholly on the other side.
    Contradicted,
    /// Neither: an interval straddles its threshold.
    NotShown,
    /// The study could not have decided it: see [`ClaimReading::why`].
    NotTestable,
}

impl Verdict {
    /// In words.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Shown => "shown",
            Verdict::Contradicted => "contradicted",
            Verdict::NotShown => "not shown",
            Verdict::NotTestable => "not testable",
        }
    }
}

/// How a study corrects for reading several claims.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Multiplicity {
    /// Holm's step-down procedure over the testable claims (default).
    #[default]
    Holm,
    /// Every claim at the study's confidence.
    None,
}

/// One test read at one confidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestReading {
    /// `trlvr − grpo: solo`.
    pub label: String,
    /// The test.
    pub test: Test,
    /// The confidence of the interval.
    pub confidence: f64,
    /// The figure (or difference) and its interval.
    pub estimate: Estimate,
    /// Shown, contradicted or not shown.
    pub outcome: Verdict,
}

/// One alternative of a claim, read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlternativeReading {
    /// Its `each` arm, if any.
    pub label: Option<String>,
    /// Its tests at the claim's confidence.
    pub tests: Vec<TestReading>,
    /// Whether it holds: every test shown ([`Rule::None`]: at its Holm confidence).
    pub holds: Verdict,
    /// [`Rule::None`]: the confidence its "holds" was read at, and the tests there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holm: Option<(f64, Vec<TestReading>)>,
}

/// A claim, read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimReading {
    /// Key.
    pub id: String,
    /// In words.
    pub statement: String,
    /// What the intervals say.
    pub verdict: Verdict,
    /// The confidence it was read at (after Holm's correction, if any).
    pub confidence: f64,
    /// The rule that gave the verdict, in words.
    pub rule: String,
    /// The numbers behind the verdict, in words.
    pub why: String,
    /// Its preconditions, read at the study's confidence.
    pub requires: Vec<TestReading>,
    /// Its alternatives.
    pub alternatives: Vec<AlternativeReading>,
}

/// How the claims are read.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    /// The intervals' confidence before any correction (0.95).
    pub confidence: f64,
    /// Across claims.
    pub multiplicity: Multiplicity,
    /// Whether test labels name their evaluation.
    pub several_evaluations: bool,
}

/// Reads `test` off `dist` at `confidence`.
pub fn read_test(test: &Test, dist: &Distribution, confidence: f64, several: bool) -> TestReading {
    let e = dist.estimate(confidence);
    let outcome = if e.value.is_nan() {
        Verdict::NotShown
    } else {
        match test.threshold {
            Threshold::Below(t) => side(e.high < t, e.low > t),
            Threshold::Above(t) => side(e.low > t, e.high < t),
            Threshold::Within(m) => side(e.low > -m && e.high < m, e.low > m || e.high < -m),
        }
    };
    TestReading { label: test.label(several), test: test.clone(), confidence, estimate: e, outcome }
}

fn side(shown: bool, contradicted: bool) -> Verdict {
    if shown {
        Verdict::Shown
    } else if contradicted {
        Verdict::Contradicted
    } else {
        Verdict::NotShown
    }
}

/// How far a test is from being shown (`Shown`) or contradicted: about half the level at
/// which its interval first clears (the share of draws on the wrong side). Ranks only.
fn distance(test: &Test, dist: &Distribution, toward: Verdict) -> f64 {
    let shown = toward == Verdict::Shown;
    match test.threshold {
        Threshold::Below(t) => dist.share_against(if shown { Side::Below } else { Side::Above }, t),
        Threshold::Above(t) => dist.share_against(if shown { Side::Above } else { Side::Below }, t),
        Threshold::Within(m) if shown => {
            dist.share_against(Side::Below, m).max(dist.share_against(Side::Above, -m))
        }
        Threshold::Within(m) => dist.share_against(Side::Above, m).min(dist.share_against(Side::Below, -m)),
    }
}

/// All of `parts`: contradicted if one is, shown if all are.
fn all(parts: impl IntoIterator<Item = Verdict>) -> Verdict {
    let parts: Vec<Verdict> = parts.into_iter().collect();
    if parts.contains(&Verdict::Contradicted) {
        Verdict::Contradicted
    } else if parts.iter().all(|p| *p == Verdict::Shown) {
        Verdict::Shown
    } else {
        Verdict::NotShown
    }
}

/// Whether `claim` can be decided, judged before its own figures are read: its design
/// (margins against expected half-widths), its preconditions, its figures defined.
/// `None` when testable, else why not.
fn untestable(
    claim: &Claim,
    requires: &[TestReading],
    dist: &dyn Fn(&Test) -> Distribution,
) -> Option<String> {
    if let Some(why) = &claim.untestable {
        return Some(format!("by design, declared before the run: {why}"));
    }
    for t in claim.alternatives.iter().flat_map(|a| &a.tests) {
        if let (Threshold::Within(m), Some(h)) = (t.threshold, t.expected_half_width)
            && h >= m
        {
            return Some(format!(
                "by design: {} is to lie within ±{m}, but the interval the design expects is ±{h} wide, so \
                 equivalence could not be shown whatever the result",
                t.label(true)
            ));
        }
    }
    let failed: Vec<String> = requires
        .iter()
        .filter(|r| r.outcome != Verdict::Shown)
        .map(|r| {
            format!(
                "{} {} is {} ({})",
                r.label,
                r.test.threshold.words(),
                r.outcome.word(),
                show(&r.estimate, r.test.figure.decimals())
            )
        })
        .collect();
    if !failed.is_empty() {
        return Some(format!("a precondition is not shown: {}", failed.join("; ")));
    }
    let undefined: Vec<String> = claim
        .alternatives
        .iter()
        .flat_map(|a| &a.tests)
        .filter(|t| dist(t).value.is_nan())
        .map(|t| t.label(true))
        .collect();
    if !undefined.is_empty() {
        return Some(format!("undefined figures: {}", undefined.join(", ")));
    }
    None
}

/// `value [low, high]` at `d` decimals.
pub fn show(e: &Estimate, d: usize) -> String {
    e.show(d)
}

/// Reads every claim. `dist` gives a test's distribution (its figure or difference over
/// the study's resamples).
pub fn judge(claims: &[Claim], how: Reading, dist: &dyn Fn(&Test) -> Distribution) -> Vec<ClaimReading> {
    let base = how.confidence;
    let several = how.several_evaluations;
    let mut readings: Vec<ClaimReading> = claims
        .iter()
        .map(|claim| {
            let requires: Vec<TestReading> =
                claim.requires.iter().map(|t| read_test(t, &dist(t), base, several)).collect();
            let why = untestable(claim, &requires, dist);
            let mut reading = read_claim(claim, base, how, dist);
            reading.requires = requires;
            if let Some(why) = why {
                reading.verdict = Verdict::NotTestable;
                reading.why = why;
            }
            reading
        })
        .collect();
    if how.multiplicity == Multiplicity::Holm {
        holm(claims, &mut readings, how, dist);
    }
    readings
}

/// Holm's step-down procedure over the testable claims: re-reads each at its level.
fn holm(claims: &[Claim], readings: &mut [ClaimReading], how: Reading, dist: &dyn Fn(&Test) -> Distribution) {
    let alpha = 1.0 - how.confidence;
    let mut order: Vec<(f64, usize)> = readings
        .iter()
        .enumerate()
        .filter(|(_, r)| r.verdict != Verdict::NotTestable)
        .map(|(i, _)| (rank(&claims[i], dist), i))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let m = order.len();
    let mut stopped: Option<String> = None;
    for (step, &(_, i)) in order.iter().enumerate() {
        let confidence = 1.0 - alpha / (m - step) as f64;
        let requires = std::mem::take(&mut readings[i].requires);
        let mut reading = read_claim(&claims[i], confidence, how, dist);
        reading.requires = requires;
        reading.rule += &format!(
            " Holm's procedure over the {m} testable claims: this one was {} in turn, read at confidence \
             1 − {alpha:.3}/{} = {confidence:.4}.",
            ordinal(step + 1),
            m - step
        );
        if let Some(first) = &stopped {
            reading.why = format!(
                "Holm's procedure stopped at claim {first:?}, which was not decided, so no later claim is shown \
                 or contradicted. (At its own level: {} — {})",
                reading.verdict.word(),
                reading.why
            );
            reading.verdict = Verdict::NotShown;
        } else if reading.verdict == Verdict::NotShown {
            stopped = Some(claims[i].id.clone());
        }
        readings[i] = reading;
    }
}

fn ordinal(n: usize) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        n => format!("{n}th"),
    }
}

/// A claim's rank for Holm's procedure: how close it is to being decided either way.
fn rank(claim: &Claim, dist: &dyn Fn(&Test) -> Distribution) -> f64 {
    let far = |t: &Test, toward| distance(t, &dist(t), toward);
    match claim.rule {
        Rule::All => {
            let tests: Vec<&Test> = claim.alternatives.iter().flat_map(|a| &a.tests).collect();
            let shown = tests.iter().map(|t| far(t, Verdict::Shown)).fold(0.0, f64::max);
            let contradicted = tests.iter().map(|t| far(t, Verdict::Contradicted)).fold(1.0, f64::min);
            shown.min(contradicted)
        }
        Rule::None => {
            let k = claim.alternatives.len() as f64;
            let holds = |a: &super::claim::Alternative| {
                a.tests.iter().map(|t| far(t, Verdict::Shown)).fold(0.0, f64::max)
            };
            let fails = |a: &super::claim::Alternative| {
                a.tests.iter().map(|t| far(t, Verdict::Contradicted)).fold(1.0, f64::min)
            };
            let contradicted = claim.alternatives.iter().map(|a| (k * holds(a)).min(1.0)).fold(1.0, f64::min);
            let shown = claim.alternatives.iter().map(fails).fold(0.0, f64::max);
            shown.min(contradicted)
        }
    }
}

/// Reads `claim` at `confidence` (preconditions aside).
fn read_claim(
    claim: &Claim,
    confidence: f64,
    how: Reading,
    dist: &dyn Fn(&Test) -> Distribution,
) -> ClaimReading {
    let several = how.several_evaluations;
    let read = |t: &Test, c: f64| read_test(t, &dist(t), c, several);
    let percent = |c: f64| format!("{:.1}%", 100.0 * c);
    let (verdict, alternatives, rule, why) = match claim.rule {
        Rule::All => {
            let tests: Vec<TestReading> =
                claim.alternatives.iter().flat_map(|a| &a.tests).map(|t| read(t, confidence)).collect();
            let verdict = all(tests.iter().map(|t| t.outcome));
            let why = tests
                .iter()
                .map(|t| {
                    format!(
                        "{} = {} ({} {}: {})",
                        t.label,
                        show(&t.estimate, t.test.figure.decimals()),
                        percent(t.confidence),
                        t.test.threshold.words(),
                        t.outcome.word()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            let rule = format!(
                "Shown when every test's {} interval lies on its side of the threshold (inside the margin), \
                 contradicted when one lies wholly on the other side, otherwise not shown.",
                percent(confidence)
            );
            let alternative = AlternativeReading { label: None, tests, holds: verdict, holm: None };
            (verdict, vec![alternative], rule, why)
        }
        Rule::None => read_none(claim, confidence, &read),
    };
    ClaimReading {
        id: claim.id.clone(),
        statement: claim.statement.clone(),
        verdict,
        confidence,
        rule,
        why,
        requires: Vec::new(),
        alternatives,
    }
}

/// A [`Rule::None`] claim: contradicted when one alternative is shown to hold at
/// confidence 1 − α/k (Holm's procedure over the k alternatives for "one holds": its first
/// step, Bonferroni's bound); shown when every alternative is contradicted at `confidence`.
fn read_none(
    claim: &Claim,
    confidence: f64,
    read: &dyn Fn(&Test, f64) -> TestReading,
) -> (Verdict, Vec<AlternativeReading>, String, String) {
    let alpha = 1.0 - confidence;
    let k = claim.alternatives.len();
    let level = 1.0 - alpha / k as f64;
    let alternatives: Vec<AlternativeReading> = claim
        .alternatives
        .iter()
        .map(|a| {
            let tests: Vec<TestReading> = a.tests.iter().map(|t| read(t, confidence)).collect();
            let at_level: Vec<TestReading> = a.tests.iter().map(|t| read(t, level)).collect();
            let holds = if all(at_level.iter().map(|t| t.outcome)) == Verdict::Shown {
                Verdict::Shown
            } else if tests.iter().any(|t| t.outcome == Verdict::Contradicted) {
                Verdict::Contradicted
            } else {
                Verdict::NotShown
            };
            AlternativeReading { label: a.label.clone(), tests, holds, holm: Some((level, at_level)) }
        })
        .collect();
    let name = |a: &AlternativeReading| a.label.clone().unwrap_or_else(|| a.tests[0].label.clone());
    let numbers = |tests: &[TestReading]| {
        tests
            .iter()
            .map(|t| format!("{} = {}", t.label, show(&t.estimate, t.test.figure.decimals())))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let holding: Vec<&AlternativeReading> =
        alternatives.iter().filter(|a| a.holds == Verdict::Shown).collect();
    let (verdict, why) = if !holding.is_empty() {
        let list = holding
            .iter()
            .map(|a| format!("{} ({})", name(a), numbers(&a.holm.as_ref().expect("read").1)))
            .collect::<Vec<_>>()
            .join("; ");
        (Verdict::Contradicted, format!("holds at confidence {level:.4}: {list}"))
    } else {
        let each = alternatives
            .iter()
            .map(|a| {
                let word = match a.holds {
                    Verdict::Contradicted => "fails",
                    _ => "neither shown to hold nor to fail",
                };
                format!("{} {word} ({})", name(a), numbers(&a.tests))
            })
            .collect::<Vec<_>>()
            .join("; ");
        let verdict = if alternatives.iter().all(|a| a.holds == Verdict::Contradicted) {
            Verdict::Shown
        } else {
            Verdict::NotShown
        };
        (verdict, each)
    };
    let rule = format!(
        "The claim is that none of the {k} alternatives holds (an alternative holds when every one of its tests \
         is shown). Contradicted when one is shown to hold at confidence 1 − {alpha:.3}/{k} = {level:.4} (Holm's \
         procedure over the {k} for \"one holds\", whose first step is Bonferroni's bound); shown when every \
         alternative has a test contradicted at {:.1}%; otherwise not shown.",
        100.0 * confidence
    );
    (verdict, alternatives, rule, why)
}
