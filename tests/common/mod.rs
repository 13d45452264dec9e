//! What the study and demo tests share: a check, written from the rules' words and not
//! from the library's code, that every verdict of a `study.json` follows its intervals
//! and its declared rule.

use serde_json::Value;

/// An interval from JSON.
fn interval(e: &Value) -> (f64, f64, f64) {
    let n = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    (n(&e["value"]), n(&e["low"]), n(&e["high"]))
}

/// The outcome a test's interval gives under its threshold, written here from the rule's
/// words (not the library's code).
fn outcome(test: &Value) -> &'static str {
    let (v, low, high) = interval(&test["estimate"]);
    let threshold = &test["test"]["threshold"];
    let (shown, contradicted) = if let Some(t) = threshold["below"].as_f64() {
        (high < t, low > t)
    } else if let Some(t) = threshold["above"].as_f64() {
        (low > t, high < t)
    } else {
        let m = threshold["within"].as_f64().unwrap();
        (-m < low && high < m, low > m || high < -m)
    };
    if v.is_nan() {
        "not_shown"
    } else if shown {
        "shown"
    } else if contradicted {
        "contradicted"
    } else {
        "not_shown"
    }
}

/// Every verdict of `analysis` follows its intervals and the rule it declares.
pub fn check_verdicts(analysis: &Value) {
    let claims = analysis["claims"].as_array().unwrap();
    let alpha = 1.0 - analysis["config"]["confidence"].as_f64().unwrap();
    let mut holm_levels = Vec::new();
    for c in claims {
        let id = c["id"].as_str().unwrap();
        let verdict = c["verdict"].as_str().unwrap();
        for alternative in c["alternatives"].as_array().unwrap() {
            for t in alternative["tests"].as_array().unwrap() {
                assert_eq!(t["outcome"].as_str().unwrap(), outcome(t), "{id}: {t}");
                assert_eq!(t["confidence"], c["confidence"], "{id}: read at the claim's confidence");
            }
            if let Some(holm) = alternative["holm"].as_array() {
                for t in holm[1].as_array().unwrap() {
                    assert_eq!(t["outcome"].as_str().unwrap(), outcome(t), "{id}: {t}");
                }
            }
        }
        for r in c["requires"].as_array().unwrap() {
            assert_eq!(r["outcome"].as_str().unwrap(), outcome(r), "{id}: {r}");
        }
        let tests: Vec<&str> = c["alternatives"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|a| a["tests"].as_array().unwrap().iter().map(|t| t["outcome"].as_str().unwrap()))
            .collect();
        let requires_shown = c["requires"].as_array().unwrap().iter().all(|r| r["outcome"] == "shown");
        if verdict == "not_testable" {
            let why = c["why"].as_str().unwrap();
            assert!(
                why.starts_with("by design")
                    || (!requires_shown && why.starts_with("a precondition"))
                    || why.starts_with("undefined"),
                "{id}: {why}"
            );
            continue;
        }
        assert!(requires_shown, "{id}: testable only with its preconditions shown");
        holm_levels.push(c["confidence"].as_f64().unwrap());
        if c["why"].as_str().unwrap().starts_with("Holm's procedure stopped") {
            assert_eq!(verdict, "not_shown", "{id}");
            continue;
        }
        let want = match c["alternatives"].as_array().unwrap().first().and_then(|a| a["holm"].as_array()) {
            // "none holds": an alternative shown at its Holm level contradicts; all failing shows.
            Some(_) => {
                let alternatives = c["alternatives"].as_array().unwrap();
                let holds = alternatives
                    .iter()
                    .any(|a| a["holm"][1].as_array().unwrap().iter().all(|t| t["outcome"] == "shown"));
                let fails = alternatives
                    .iter()
                    .all(|a| a["tests"].as_array().unwrap().iter().any(|t| t["outcome"] == "contradicted"));
                if holds {
                    "contradicted"
                } else if fails {
                    "shown"
                } else {
                    "not_shown"
                }
            }
            None if tests.contains(&"contradicted") => "contradicted",
            None if tests.iter().all(|t| *t == "shown") => "shown",
            None => "not_shown",
        };
        assert_eq!(verdict, want, "{id}: {c}");
    }
    // Holm: the testable claims read at 1 − α/m, 1 − α/(m − 1), ..., one each.
    holm_levels.sort_by(f64::total_cmp);
    let m = holm_levels.len();
    for (i, level) in holm_levels.iter().rev().enumerate() {
        let want = 1.0 - alpha / (m - i) as f64;
        assert!((level - want).abs() < 1e-12, "Holm levels {holm_levels:?}");
    }
}
