//! Long: the claim grammar, its checks (each refusal naming the key), and their tests.
//!
//! A study's claims as its file declares them, before anything runs: which figure of
//! which arms, the threshold or equivalence margin, the interval half-width the design
//! expects (the power statement), the preconditions that make the claim testable, and
//! how several tests combine.
//!
//! ```toml
//! [[claims]]
//! id = "solo"
//! statement = "TRLVR is as accurate alone as GRPO"
//! figure = "solo"              # see Figure: solo, handoff, tax, junior_ce, kl, ...
//! a = "trlvr"
//! b = "grpo"                   # a − b; without b, a's own figure
//! within = 5.0                 # equivalence: |a − b| < 5 points
//! expected_half_width = 3.0    # what the design expects of the interval
//! requires = [{ figure = "solo", a = "grpo", below = 93.0 }]  # GRPO did not saturate
//! # untestable = "..."       # the design knows before the run that it cannot test this
//!
//! [[claims]]
//! id = "kl-reg"
//! statement = "No KL-Reg setting reaches TRLVR's tax at its solo accuracy"
//! rule = "none"                # none of the alternatives holds
//! each = ["kl-0.01", "kl-0.1"]  # one alternative per arm, `{each}` in a or b
//! tests = [
//!     { figure = "tax", a = "{each}", b = "trlvr", below = 5.0 },
//!     { figure = "solo", a = "{each}", b = "trlvr", above = -5.0 },
//! ]
//! ```

use serde::{Deserialize, Serialize};

use crate::eval::Figure;
use crate::{Error, Result};

/// How a claim's tests combine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Every test holds (default): shown when each is shown, contradicted when one is.
    #[default]
    All,
    /// None of the alternatives holds: contradicted when one is shown to hold (Holm's
    /// procedure over the alternatives), shown when each is contradicted.
    None,
}

/// One test as written: a figure of arm `a` (or `a − b`) against a threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    /// The figure's name.
    pub figure: String,
    /// The arm (`{each}` for each of the claim's `each`).
    pub a: String,
    /// The arm subtracted, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<String>,
    /// The evaluation (default: the study's first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<String>,
    /// Holds when the figure is below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below: Option<f64>,
    /// Holds when the figure is above this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above: Option<f64>,
    /// Holds when the figure lies within ± this (equivalence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<f64>,
    /// The half-width of the interval the design expects (the power statement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_half_width: Option<f64>,
}

/// A claim as written: one test inline, or `tests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSpec {
    /// A short key (tables, JSON).
    pub id: String,
    /// The claim in words.
    pub statement: String,
    /// How the tests combine.
    #[serde(default)]
    pub rule: Rule,
    /// Arms substituted for `{each}` in the tests: with `rule = "none"` one alternative
    /// per arm, with `rule = "all"` every arm's tests must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub each: Vec<String>,
    /// An inline test's figure (with `a`, `b`, `evaluation`, a threshold and
    /// `expected_half_width` beside it); or give `tests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<String>,
    /// An inline test's arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<String>,
    /// An inline test's arm subtracted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<String>,
    /// An inline test's evaluation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<String>,
    /// An inline test's upper threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below: Option<f64>,
    /// An inline test's lower threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above: Option<f64>,
    /// An inline test's equivalence margin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<f64>,
    /// An inline test's expected half-width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_half_width: Option<f64>,
    /// The tests, when more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestSpec>,
    /// Preconditions: each must be shown for the claim to be testable. They may not judge
    /// a comparison the claim itself judges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<TestSpec>,
    /// Why the design cannot test the claim, when it knows before the run (a ceiling of the
    /// task, say): the claim is then "not testable" whatever the results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untestable: Option<String>,
}

/// Where a test's figure must lie.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Threshold {
    /// Below the value.
    Below(f64),
    /// Above the value.
    Above(f64),
    /// Within ± the margin.
    Within(f64),
}

impl Threshold {
    /// In words: `< 5`, `> -5`, `within ±5`.
    pub fn words(&self) -> String {
        match self {
            Threshold::Below(t) => format!("< {t}"),
            Threshold::Above(t) => format!("> {t}"),
            Threshold::Within(m) => format!("within ±{m}"),
        }
    }
}

/// A checked test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Test {
    /// The figure.
    pub figure: Figure,
    /// The arm.
    pub a: String,
    /// The arm subtracted, if any.
    pub b: Option<String>,
    /// The evaluation.
    pub evaluation: String,
    /// Where the figure must lie.
    pub threshold: Threshold,
    /// The half-width the design expects, if declared.
    pub expected_half_width: Option<f64>,
}

impl Test {
    /// `trlvr − grpo: solo` (with the evaluation when the study has several).
    pub fn label(&self, several_evaluations: bool) -> String {
        let arms = match &self.b {
            Some(b) => format!("{} − {b}", self.a),
            None => self.a.clone(),
        };
        let at = if several_evaluations { format!(" [{}]", self.evaluation) } else { String::new() };
        format!("{arms}: {}{at}", self.figure)
    }

    /// The comparison it reads (figure, evaluation, arms), order of arms aside.
    fn comparison(&self) -> (Figure, &str, Vec<&str>) {
        let mut arms: Vec<&str> = std::iter::once(self.a.as_str()).chain(self.b.as_deref()).collect();
        arms.sort_unstable();
        (self.figure.clone(), &self.evaluation, arms)
    }
}

/// One alternative of a claim: tests that hold together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    /// The `each` arm it was made for, if any.
    pub label: Option<String>,
    /// Its tests.
    pub tests: Vec<Test>,
}

/// A checked claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// Key.
    pub id: String,
    /// In words.
    pub statement: String,
    /// How the alternatives combine: with [`Rule::All`] there is one alternative, holding
    /// every test.
    pub rule: Rule,
    /// The alternatives.
    pub alternatives: Vec<Alternative>,
    /// Preconditions.
    pub requires: Vec<Test>,
    /// Why the design cannot test it, declared before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untestable: Option<String>,
}

/// What a claim may name: the arms, the evaluations (the first is the default) and the
/// study's own columns.
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    /// Arms.
    pub arms: &'a [String],
    /// Evaluations; the first is the default.
    pub evaluations: &'a [String],
    /// The study's own per-problem columns.
    pub columns: &'a [String],
}

const EACH: &str = "{each}";

impl TestSpec {
    /// Checks the test at `key` (`claims[2].tests[0]`, say), with `each` substituted.
    fn check(&self, key: &str, names: Names<'_>, each: Option<&str>) -> Result<Test> {
        let bad = |what: String| Error::Config(format!("{key}: {what}"));
        let figure = Figure::parse(&self.figure, names.columns).ok_or_else(|| {
            let mut known: Vec<String> = Figure::all().map(|f| f.name().to_string()).collect();
            known.extend(names.columns.iter().cloned());
            bad(format!("figure = {:?} is not a figure ({})", self.figure, known.join(", ")))
        })?;
        let arm = |field: &str, name: &str| -> Result<String> {
            let name = match each {
                Some(e) => name.replace(EACH, e),
                None if name.contains(EACH) => {
                    return Err(bad(format!("{field} = {name:?} uses {EACH}, but the claim has no `each`")));
                }
                None => name.to_string(),
            };
            if names.arms.contains(&name) {
                Ok(name)
            } else {
                Err(bad(format!("{field} = {name:?}: no such arm (arms: {})", names.arms.join(", "))))
            }
        };
        let a = arm("a", &self.a)?;
        let b = self.b.as_deref().map(|b| arm("b", b)).transpose()?;
        if b.as_deref() == Some(&a) {
            return Err(bad(format!("a and b are both {a:?}: a difference needs two arms")));
        }
        let evaluation = match &self.evaluation {
            Some(e) if names.evaluations.contains(e) => e.clone(),
            Some(e) => {
                return Err(bad(format!(
                    "evaluation = {e:?}: no such evaluation ({})",
                    names.evaluations.join(", ")
                )));
            }
            None => {
                names.evaluations.first().cloned().ok_or_else(|| bad("the study has no evaluation".into()))?
            }
        };
        let threshold = match (self.below, self.above, self.within) {
            (Some(t), None, None) => Threshold::Below(t),
            (None, Some(t), None) => Threshold::Above(t),
            (None, None, Some(m)) => Threshold::Within(m),
            (None, None, None) => {
                return Err(bad(
                    "no threshold or margin: give one of below, above or within, declared before the run"
                        .into(),
                ));
            }
            _ => return Err(bad("give one of below, above or within, not several".into())),
        };
        match threshold {
            Threshold::Below(t) | Threshold::Above(t) if !t.is_finite() => {
                return Err(bad(format!("the threshold {t} is not a finite number")));
            }
            Threshold::Within(m) if !(m > 0.0 && m.is_finite()) => {
                return Err(bad(format!("within = {m}: an equivalence margin must be positive")));
            }
            _ => {}
        }
        match self.expected_half_width {
            Some(h) if !(h > 0.0 && h.is_finite()) => {
                return Err(bad(format!("expected_half_width = {h} must be positive")));
            }
            None if matches!(threshold, Threshold::Within(_)) => {
                return Err(bad(
                    "an equivalence test needs expected_half_width: the interval half-width the design expects \
                     (the power statement), declared next to its margin"
                        .into(),
                ));
            }
            _ => {}
        }
        Ok(Test { figure, a, b, evaluation, threshold, expected_half_width: self.expected_half_width })
    }
}

impl ClaimSpec {
    /// The inline test, if one is written at the claim's level.
    fn inline(&self) -> Option<TestSpec> {
        let given = self.figure.is_some()
            || self.a.is_some()
            || self.b.is_some()
            || self.below.is_some()
            || self.above.is_some()
            || self.within.is_some()
            || self.expected_half_width.is_some()
            || self.evaluation.is_some();
        given.then(|| TestSpec {
            figure: self.figure.clone().unwrap_or_default(),
            a: self.a.clone().unwrap_or_default(),
            b: self.b.clone(),
            evaluation: self.evaluation.clone(),
            below: self.below,
            above: self.above,
            within: self.within,
            expected_half_width: self.expected_half_width,
        })
    }

    /// Checks the claim at `key` (`claims[2]`) against the study's `names`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the key: an unknown arm, figure or evaluation; a test
    /// without a threshold; an equivalence test without its expected half-width; a
    /// precondition that judges the claim's own comparison; ...
    pub fn check(&self, key: &str, names: Names<'_>) -> Result<Claim> {
        let key = format!("{key} ({:?})", self.id);
        let bad = |what: String| Error::Config(format!("{key}: {what}"));
        if self.id.trim().is_empty() || self.statement.trim().is_empty() {
            return Err(bad("a claim needs an id and a statement".into()));
        }
        let specs: Vec<(String, TestSpec)> = match (self.inline(), self.tests.is_empty()) {
            (Some(_), false) => return Err(bad("give one test inline or a `tests` list, not both".into())),
            (None, true) => {
                return Err(bad("no test: give figure, a (b), and a threshold, or `tests`".into()));
            }
            (Some(test), true) => {
                if test.figure.is_empty() || test.a.is_empty() {
                    return Err(bad("an inline test needs `figure` and `a`".into()));
                }
                vec![(key.clone(), test)]
            }
            (None, false) => {
                self.tests.iter().enumerate().map(|(i, t)| (format!("{key}.tests[{i}]"), t.clone())).collect()
            }
        };
        let uses_each =
            specs.iter().any(|(_, t)| t.a.contains(EACH) || t.b.as_deref().is_some_and(|b| b.contains(EACH)));
        if !self.each.is_empty() && !uses_each {
            return Err(bad(format!("`each` is given but no test names {EACH} in a or b")));
        }
        let check_all = |each: Option<&str>| -> Result<Vec<Test>> {
            specs.iter().map(|(k, t)| t.check(k, names, each)).collect()
        };
        let alternatives: Vec<Alternative> = match (self.rule, self.each.is_empty()) {
            (Rule::All, true) => vec![Alternative { label: None, tests: check_all(None)? }],
            (Rule::All, false) => {
                let mut tests = Vec::new();
                for e in &self.each {
                    tests.extend(check_all(Some(e))?);
                }
                vec![Alternative { label: None, tests }]
            }
            (Rule::None, false) => self
                .each
                .iter()
                .map(|e| Ok(Alternative { label: Some(e.clone()), tests: check_all(Some(e))? }))
                .collect::<Result<_>>()?,
            (Rule::None, true) => {
                check_all(None)?.into_iter().map(|t| Alternative { label: None, tests: vec![t] }).collect()
            }
        };
        let requires: Vec<Test> = self
            .requires
            .iter()
            .enumerate()
            .map(|(i, t)| t.check(&format!("{key}.requires[{i}]"), names, None))
            .collect::<Result<_>>()?;
        for (i, r) in requires.iter().enumerate() {
            let judged =
                alternatives.iter().flat_map(|a| &a.tests).find(|t| t.comparison() == r.comparison());
            if let Some(t) = judged {
                return Err(bad(format!(
                    "requires[{i}] reads {}, which the claim itself judges: a precondition must rest on figures \
                     the claim does not judge",
                    t.label(true)
                )));
            }
        }
        Ok(Claim {
            id: self.id.clone(),
            statement: self.statement.clone(),
            rule: self.rule,
            alternatives,
            requires,
            untestable: self.untestable.clone().filter(|why| !why.trim().is_empty()),
        })
    }
}

/// Checks every claim: each on its own, and ids unique.
///
/// # Errors
/// As [`ClaimSpec::check`], and for two claims with one id.
pub fn check_claims(specs: &[ClaimSpec], names: Names<'_>) -> Result<Vec<Claim>> {
    let claims: Vec<Claim> = specs
        .iter()
        .enumerate()
        .map(|(i, c)| c.check(&format!("claims[{i}]"), names))
        .collect::<Result<_>>()?;
    for (i, c) in claims.iter().enumerate() {
        if claims[..i].iter().any(|d| d.id == c.id) {
            return Err(Error::Config(format!("claims[{i}]: the id {:?} is used twice", c.id)));
        }
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> (Vec<String>, Vec<String>, Vec<String>) {
        (
            ["grpo", "trlvr", "kl-a", "kl-b", "base"].map(String::from).to_vec(),
            vec!["step".into(), "word".into()],
            vec!["shorthand".into()],
        )
    }

    fn check(toml_text: &str) -> Result<Vec<Claim>> {
        #[derive(Deserialize)]
        struct File {
            claims: Vec<ClaimSpec>,
        }
        let file: File = toml::from_str(toml_text).map_err(|e| Error::Config(e.to_string()))?;
        let (arms, evaluations, columns) = names();
        check_claims(&file.claims, Names { arms: &arms, evaluations: &evaluations, columns: &columns })
    }

    #[test]
    fn inline_tests_each_and_requires_are_read() {
        let claims = check(
            r#"
            [[claims]]
            id = "solo"
            statement = "same solo"
            figure = "solo"
            a = "trlvr"
            b = "grpo"
            within = 5.0
            expected_half_width = 3.0
            requires = [{ figure = "solo", a = "grpo", below = 93.0 }, { figure = "junior_ce", a = "grpo", b = "base", above = 0.0, evaluation = "word" }]

            [[claims]]
            id = "kl"
            statement = "no kl reaches"
            rule = "none"
            each = ["kl-a", "kl-b"]
            tests = [{ figure = "tax", a = "{each}", b = "trlvr", below = 5.0 },
                     { figure = "shorthand", a = "{each}", b = "trlvr", above = -5.0 }]
            "#,
        )
        .unwrap();
        assert_eq!(claims[0].alternatives.len(), 1);
        let t = &claims[0].alternatives[0].tests[0];
        assert_eq!((t.figure.clone(), t.a.as_str(), t.b.as_deref()), (Figure::Solo, "trlvr", Some("grpo")));
        assert_eq!((t.evaluation.as_str(), t.threshold), ("step", Threshold::Within(5.0)));
        assert_eq!(claims[0].requires[1].evaluation, "word");
        let kl = &claims[1];
        assert_eq!(kl.alternatives.len(), 2);
        assert_eq!(kl.alternatives[1].label.as_deref(), Some("kl-b"));
        assert_eq!(kl.alternatives[1].tests[0].a, "kl-b");
        assert_eq!(kl.alternatives[1].tests[1].figure, Figure::Column("shorthand".into()));
    }

    /// Each refusal names the claim's key and what is wrong.
    #[test]
    fn bad_claims_are_refused_naming_the_key() {
        let base = "[[claims]]\nid = \"c\"\nstatement = \"s\"\n";
        for (body, want) in [
            ("figure = \"solo\"\na = \"trlvr\"\nb = \"grpo\"\n", "claims[0] (\"c\"): no threshold or margin"),
            (
                "figure = \"solo\"\na = \"trvlr\"\nbelow = 1.0\n",
                "a = \"trvlr\": no such arm (arms: grpo, trlvr",
            ),
            (
                "figure = \"accuracy\"\na = \"trlvr\"\nbelow = 1.0\n",
                "figure = \"accuracy\" is not a figure (solo",
            ),
            ("figure = \"solo\"\na = \"trlvr\"\nb = \"grpo\"\nwithin = 5.0\n", "needs expected_half_width"),
            ("figure = \"solo\"\na = \"trlvr\"\nbelow = 1.0\nabove = 0.0\n", "not several"),
            (
                "figure = \"solo\"\na = \"trlvr\"\nevaluation = \"token\"\nbelow = 1.0\n",
                "no such evaluation (step, word)",
            ),
            ("figure = \"solo\"\na = \"{each}\"\nbelow = 1.0\n", "uses {each}, but the claim has no `each`"),
            ("figure = \"solo\"\na = \"trlvr\"\nb = \"trlvr\"\nbelow = 1.0\n", "both \"trlvr\""),
            (
                "figure = \"solo\"\na = \"trlvr\"\nwithin = -1.0\nexpected_half_width = 1.0\n",
                "must be positive",
            ),
            ("", "no test"),
            (
                "figure = \"solo\"\na = \"trlvr\"\nb = \"grpo\"\nbelow = 0.0\nrequires = [{ figure = \"solo\", a = \"grpo\", b = \"trlvr\", above = 0.0 }]\n",
                "requires[0] reads trlvr − grpo: solo [step], which the claim itself judges",
            ),
        ] {
            let err = check(&format!("{base}{body}")).unwrap_err().to_string();
            assert!(err.contains(want), "{body:?}: {err}");
            assert!(err.contains("claims[0]"), "{err}");
        }
        let twice = format!("{base}figure = \"solo\"\na = \"grpo\"\nbelow = 1.0\n").repeat(2);
        assert!(check(&twice).unwrap_err().to_string().contains("used twice"));
        let err = check(&format!("{base}tests = [{{ figure = \"solo\", a = \"grpo\" }}]\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("claims[0] (\"c\").tests[0]: no threshold"), "{err}");
    }
}
