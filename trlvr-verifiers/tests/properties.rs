//! Property tests of normalisation and equivalence.

use proptest::prelude::*;
use trlvr::verifier::Verifier;
use trlvr_verifiers::{Extraction, MathVerifier, equivalent, extract, normalize};

const VOCAB: &[&str] = &[
    "x",
    "y",
    "1",
    "2",
    "7",
    "10",
    "0.5",
    "+",
    "-",
    "*",
    "/",
    "^",
    "=",
    "<",
    ">",
    ",",
    " ",
    ".",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    r"\{",
    r"\}",
    r"\frac",
    r"\dfrac",
    r"\sqrt",
    r"\pi",
    r"\pm",
    r"\infty",
    r"\cup",
    r"\le",
    r"\text{",
    "cm",
    "or",
    r"\left(",
    r"\right)",
    r"\!",
    r"\,",
    "$",
    r"\$",
    "%",
    r"\%",
    r"^\circ",
    r"{,}",
    r"\cdot",
    "i",
    "e",
    "B",
    r"\sin",
    r"\boxed{",
    "_",
    r"\begin{pmatrix}",
    r"\end{pmatrix}",
    "&",
    r"\\",
    "!",
    "|",
];

/// Strings that look like answers: LaTeX-ish fragments glued together.
fn answerish() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(proptest::sample::select(VOCAB), 0..14).prop_map(|v| v.concat()),
        "[-]?[0-9]{1,6}(\\.[0-9]{1,4})?",
        "\\PC{0,24}",
    ]
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// The decimal expansion of `n/d` when it terminates.
fn decimal(n: i64, d: i64) -> Option<String> {
    let mut rest = d;
    for p in [2, 5] {
        while rest % p == 0 {
            rest /= p;
        }
    }
    if rest != 1 {
        return None;
    }
    let sign = if n < 0 { "-" } else { "" };
    let (mut num, mut digits) = (n.abs() % d, String::new());
    while num != 0 {
        num *= 10;
        digits.push(char::from(b'0' + (num / d) as u8));
        num %= d;
    }
    let whole = n.abs() / d;
    Some(if digits.is_empty() { format!("{sign}{whole}") } else { format!("{sign}{whole}.{digits}") })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn normalisation_is_idempotent(s in answerish()) {
        let once = normalize(&s);
        prop_assert_eq!(normalize(&once), once);
    }

    #[test]
    fn equivalence_is_reflexive(s in answerish()) {
        // Every non-empty answer equals itself (an empty one equals nothing).
        prop_assert!(normalize(&s).is_empty() || equivalent(&s, &s));
    }

    #[test]
    fn equivalence_is_symmetric(a in answerish(), b in answerish()) {
        prop_assert_eq!(equivalent(&a, &b), equivalent(&b, &a));
    }

    #[test]
    fn near_misses_are_symmetric(n in -1000i64..1000, d in 1i64..50, var in "[xyab]") {
        let a = format!(r"\frac{{{n}}}{{{d}}}{var}");
        let b = format!("{n}{var}/{d}");
        prop_assert!(equivalent(&a, &b));
        prop_assert_eq!(equivalent(&a, "x"), equivalent("x", &a));
    }

    #[test]
    fn one_rational_many_spellings(n in -100_000i64..100_000, d in 1i64..2000) {
        let g = gcd(n, d).max(1);
        let (n, d) = (n / g, d / g);
        let gold = format!(r"\frac{{{n}}}{{{d}}}");
        let mut spellings = vec![
            format!(r"\dfrac{{{n}}}{{{d}}}"),
            format!(r"\tfrac{{{n}}}{{{d}}}"),
            format!("{n}/{d}"),
            format!(r"\frac{{{}}}{{{}}}", 3 * n, 3 * d),
        ];
        if let Some(dec) = decimal(n, d) {
            spellings.push(dec);
        }
        if d > 1 && n.abs() > d {
            let sign = if n < 0 { "-" } else { "" };
            let (w, r) = (n.abs() / d, n.abs() % d);
            spellings.push(format!(r"{sign}{w}\frac{{{r}}}{{{d}}}"));
            if n > 0 {
                spellings.push(format!("{w} {r}/{d}"));
            }
        }
        for s in &spellings {
            prop_assert!(equivalent(&gold, s), "{} vs {}", gold, s);
            prop_assert!(equivalent(s, &gold), "{} vs {}", s, gold);
        }
    }

    #[test]
    fn wrong_numbers_are_never_equal(n in -10_000_000_000_000i64..10_000_000_000_000) {
        let right = n.to_string();
        let boxed = format!(r"\boxed{{{right}}}");
        let below = (n - 1).to_string();
        let above = (n + 1).to_string();
        prop_assert!(!equivalent(&right, &above));
        prop_assert!(!equivalent(&boxed, &below));
        if n != 0 {
            let double = (2 * n).to_string();
            let seventh = format!("{n}/7");
            let double_seventh = format!("{}/7", 2 * n);
            prop_assert!(!equivalent(&right, &double));
            prop_assert!(!equivalent(&seventh, &double_seventh));
        }
    }

    #[test]
    fn wrong_fractions_are_never_equal(n in -5000i64..5000, d in 1i64..500) {
        let gold = format!(r"\frac{{{n}}}{{{d}}}");
        let bigger_num = format!(r"\frac{{{}}}{{{d}}}", n + 1);
        let bigger_den = format!(r"\frac{{{n}}}{{{}}}", d + 1);
        prop_assert!(!equivalent(&gold, &bigger_num));
        prop_assert!(n == 0 || !equivalent(&gold, &bigger_den));
    }

    #[test]
    fn extraction_and_verification_never_panic(text in "\\PC{0,80}", frag in answerish()) {
        let response = format!("{text} \\boxed{{{frag}}} {text}");
        for how in [Extraction::Math, Extraction::Gsm8k, Extraction::Bare, Extraction::LastBox] {
            let _ = extract(&text, how);
            let _ = extract(&response, how);
        }
        let r = MathVerifier::default().with_format_reward(0.1).verify(&response, &frag);
        prop_assert!(r.value == 0.0 || r.value == 0.1 || r.value == 1.0);
        prop_assert_eq!(r.correct, r.value == 1.0);
    }

    #[test]
    fn grader_never_panics_on_free_text(
        parts in proptest::collection::vec(
            prop_oneof![
                "\\PC{0,12}",
                proptest::sample::select(&["$", "$$", r"\(", r"\)", r"\[", r"\]", "####", "=", r"\approx",
                    "the answer is ", "答案是", r"\begin{align*}", r"\end{align*}", "&", r"\\", "1,", "2,74",
                    " 000", "(B)", "D. ", r"\boxed{", "}", "0.083333", "€", "²"][..])
                    .prop_map(String::from),
            ],
            0..24,
        ),
        gold in answerish(),
    ) {
        let text = parts.concat();
        let grader = MathVerifier::grader();
        for (g, p) in [(gold.as_str(), text.as_str()), (text.as_str(), gold.as_str()), (text.as_str(), text.as_str())] {
            let v = grader.check(g, p);
            prop_assert_eq!(v.equal, v.reason == "equal");
        }
        let _ = extract(&text, Extraction::FREE);
    }

    #[test]
    fn a_final_box_wins_over_the_text_before_it(text in "[^\\\\]{0,80}", n in -100_000i64..100_000) {
        let response = format!("{text}\n\\boxed{{{n}}}");
        prop_assert!(MathVerifier::grader().check(&n.to_string(), &response).equal, "{}", response);
        prop_assert!(!MathVerifier::grader().check(&(n + 1).to_string(), &response).equal, "{}", response);
    }

    #[test]
    fn the_last_number_of_plain_prose_answers(text in "[^0-9$\\\\#]{0,60}", n in 0i64..10_000_000) {
        let response = format!("{text} So the total is {n}.");
        let grader = MathVerifier::grader();
        prop_assert!(grader.check(&n.to_string(), &response).equal, "{}", response);
        prop_assert!(!grader.check(&(n + 1).to_string(), &response).equal, "{}", response);
    }
}
