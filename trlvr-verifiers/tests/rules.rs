//! Table tests: one table per rule, with cases that must and must not be equal.

use std::time::{Duration, Instant};

use trlvr::verifier::Verifier;
use trlvr_verifiers::{Extraction, MathVerifier, check, equivalent, extract, normalize};

fn table(name: &str, equal: &[(&str, &str)], different: &[(&str, &str)]) {
    for (a, b) in equal {
        assert!(
            equivalent(a, b),
            "{name}: {a:?} should equal {b:?} ({:?} vs {:?})",
            normalize(a),
            normalize(b)
        );
        assert!(equivalent(b, a), "{name}: symmetric {b:?} / {a:?}");
    }
    for (a, b) in different {
        assert!(
            !equivalent(a, b),
            "{name}: {a:?} should differ from {b:?} ({:?} vs {:?})",
            normalize(a),
            normalize(b)
        );
        assert!(!equivalent(b, a), "{name}: symmetric {b:?} / {a:?}");
    }
}

#[test]
fn extraction() {
    let math = [
        (r"so $\boxed{5}$.", Some("5")),
        (r"\boxed{\frac{1}{\sqrt{2}}} and later \boxed{\{1,2\}}", Some(r"\{1,2\}")),
        (r"We get \boxed 7.", Some("7")),
        (r"Hence \fbox{x+1}", Some("x+1")),
        ("Therefore, the answer is 12 dollars.", Some("12 dollars")),
        ("Final answer: $x = 3$", Some("x = 3")),
        ("Final Answer: The final answer is $\\frac{3}{4}$. I hope it is correct.", Some(r"\frac{3}{4}")),
        ("42", Some("42")),
        ("$-3$", Some("-3")),
        ("I do not know.\nReally, no idea at all.", None),
        (r"broken \boxed{5", None),
        ("", None),
    ];
    for (text, want) in math {
        assert_eq!(extract(text, Extraction::Math).as_deref(), want, "{text:?}");
    }
    let gsm = [
        ("She pays 2*9 = <<2*9=18>>18\n#### 18", Some("18")),
        ("#### 1,000", Some("1,000")),
        (r"so \boxed{7}", Some("7")),
        ("the answer is 5 apples", Some("5 apples")),
        ("In total she has 3 + 4 = 7 eggs left.", Some("7")),
        ("no digits", None),
    ];
    for (text, want) in gsm {
        assert_eq!(extract(text, Extraction::Gsm8k).as_deref(), want, "{text:?}");
    }
    assert_eq!(extract(r" \( \frac12 \) ", Extraction::Bare).as_deref(), Some(r"\frac12"));
    assert_eq!(extract(r"\boxed{3}", Extraction::Bare).as_deref(), Some("3"));
    assert_eq!(extract("   ", Extraction::Bare), None);
}

#[test]
fn latex_noise() {
    table(
        "noise",
        &[
            (r"\left(1,2\right)", "(1,2)"),
            (r"10,\!080", "10080"),
            (r"x\,+\;1\:", "1+x"),
            (r"1\,000", "1000"),
            ("$5$", "5"),
            (r"\text{5}", "5"),
            (r"\textbf{5}", "5"),
            (r"\mathrm{5}", "5"),
            (r"\mbox{5}", "5"),
            ("5.", "5"),
            (r"\displaystyle\frac{1}{2}", "0.5"),
        ],
        &[(r"\left(1,2\right]", "(1,2)"), ("5.1", "5"), ("3 4", "12"), ("3 4", "34")],
    );
}

#[test]
fn units_degrees_percent_currency() {
    table(
        "units",
        &[
            ("5 cm", "5"),
            ("12 dollars", "12"),
            ("x = 5 apples", "5"),
            (r"864 \mbox{ inches}^2", "864"),
            (r"15\mbox{ cm}^2", "15"),
            (r"5.4 \text{ cents}", "5.4"),
            (r"\frac{270}7\text{ degrees}", r"\frac{270}{7}"),
            ("10 square units", "10"),
            ("10 sq ft", "10"),
            (r"2\pi rh", r"2\pi r h"),
            (r"90^\circ", "90"),
            (r"90^{\circ}", "90"),
            ("90°", "90"),
            (r"50\%", "50"),
            ("50%", "50"),
            (r"\$18.90", "18.9"),
            (r"\$32,\!348", "32348"),
        ],
        &[("5 cm", "6"), (r"90^\circ", "91"), (r"50\%", "0.51"), (r"2\pi rh", r"2\pi"), ("2 ab", "2")],
    );
}

#[test]
fn thousands_separators() {
    table(
        "thousands",
        &[
            ("1,000", "1000"),
            ("1{,}000", "1000"),
            ("1,234,567.5", "1234567.5"),
            ("1, 234", "234, 1"),
            (r"11,\! 111,\! 111,\! 100", "11111111100"),
        ],
        &[("1,000", "100"), ("1,00", "100"), ("1, 234", "1234")],
    );
}

#[test]
fn fractions_and_mixed_numbers() {
    table(
        "fractions",
        &[
            (r"\frac{1}{2}", "0.5"),
            (r"\dfrac{1}{2}", "1/2"),
            (r"\tfrac{3}{4}", ".75"),
            (r"\frac12", r"\frac{1}{2}"),
            (r"\frac 34", "0.75"),
            (r"\frac9{19}", "9/19"),
            (r"2\frac{1}{2}", "2.5"),
            ("2 1/2", "5/2"),
            (r"-2\frac{1}{2}", "-2.5"),
            (r"137 \frac{1}{2}", "275/2"),
            (r"\frac{1}{3}", r"\frac{2}{6}"),
            (r"\frac{1}{3}", r"0.\overline{3}"),
            (r"\frac{1}{6}", r"0.1\overline{6}"),
            (r"\frac{611}{495}", r"1.2\overline{34}"),
            ("1", r"0.\overline{9}"),
        ],
        &[
            (r"\frac{1}{3}", "0.333"),
            (r"2\frac{1}{2}", "1"),
            (r"\frac{1}{2}", r"\frac{2}{1}"),
            (r"\frac{1}{3}", r"0.\overline{33}4"),
            (r"\frac{1}{3}", r"0.\overline{4}"),
        ],
    );
}

#[test]
fn radicals_constants_and_notation() {
    table(
        "radicals",
        &[
            (r"\sqrt2", r"\sqrt{2}"),
            (r"2\sqrt{2}", r"\sqrt{8}"),
            (r"\frac{\sqrt{3}}{3}", r"\frac{1}{\sqrt{3}}"),
            (r"\sqrt[3]{27}", "3"),
            (r"\pi", "3.14159265358979"),
            (r"2\pi", r"\pi \cdot 2"),
            ("π", r"\pi"),
            (r"(2,\infty)", r"(2, \infty)"),
            (r"1.5\times10^{3}", "1500"),
            ("1e3", "1000"),
            ("1.5e-3", "0.0015"),
            ("2e+1", r"1 + 2e"),
            (r"2 \cdot 10^{-2}", "0.02"),
            ("-2 + 7i", "7i - 2"),
            (r"\sin \frac{\pi}{6}", r"\frac12"),
            (r"\cos(\pi/3)", "0.5"),
            (r"\tan \frac{\pi}{4}", "1"),
            (r"\log_2 8", "3"),
            ("5!", "120"),
            (r"\binom{5}{2}", "10"),
        ],
        &[
            (r"\sqrt2", "1.41"),
            (r"\pi", "3.14"),
            (r"\infty", r"-\infty"),
            ("1e3", "100"),
            (r"\sqrt{3}", r"\sqrt{2}"),
            ("-2 + 7i", "2 - 7i"),
        ],
    );
}

#[test]
fn variables_equations_and_pm() {
    table(
        "equations",
        &[
            ("x = 5", "5"),
            ("5", "x=5"),
            ("y = 2x+1", "y = 1+2x"),
            ("y = 2x+1", "2x + 1 = y"),
            ("x > 3", "3 < x"),
            (r"x \geq 3", r"3 \le x"),
            (r"x \ge 2", r"[2,\infty)"),
            ("x < 0", r"(-\infty, 0)"),
            (r"-1 < x \le 4", "(-1, 4]"),
            ("5x - 7y + 11z + 4 = 0", "-5x + 7y - 11z - 4 = 0"),
            (r"3 \pm 2\sqrt{2}", r"3 + 2\sqrt2, 3 - 2\sqrt2"),
            (r"1 \pm \sqrt{19}", r"1 - \sqrt{19}, 1 + \sqrt{19}"),
            (r"x = 1 \pm \sqrt{19}", r"1 + \sqrt{19}, 1 - \sqrt{19}"),
        ],
        &[
            ("x = 5", "6"),
            ("y = 2x+1", "y = 2x-1"),
            ("x > 3", "x < 3"),
            ("x > 3", r"x \ge 3"),
            (r"x \ge 2", r"(2,\infty)"),
            (r"3 \pm 2\sqrt{2}", r"3 + 2\sqrt2"),
        ],
    );
}

#[test]
fn symbolic_expressions() {
    table(
        "symbolic",
        &[
            ("x^2 + 2x + 1", "(x+1)^2"),
            ("(a+5)(b+2)", "ab + 2a + 5b + 10"),
            (r"\frac{x^2-1}{x-1}", "x+1"),
            (r"\frac{11+9a}{20}", r"\frac{9a}{20} + \frac{11}{20}"),
            ("8n^2 + 4n + 1", "1 + 4n + 8n^2"),
            (r"\sin^2 x + \cos^2 x", "1"),
            (r"\cot x", r"\frac{\cos x}{\sin x}"),
            (r"\sqrt{x^2}", "x"),
            ("p - q", "-(q - p)"),
            ("3R^2", "3 R^2"),
            (r"x^8 + x^7 + x^6 + x^5 + x^4 + x^3 + x^2 + x + 1", r"\frac{x^9 - 1}{x - 1}"),
            // trigonometric values at standard angles, in radians and in degrees
            (r"\frac{\sqrt{3}}{2}", r"\sin\frac{\pi}{3}"),
            (r"\frac{\sqrt{3}}{2}", r"\sin 60^\circ"),
            ("1", r"\tan(45^{\circ})"),
            (r"\frac{1}{2}", r"\cos{60^\circ}"),
            (r"-\frac{\sqrt{2}}{2}", r"\cos 135^\circ"),
        ],
        &[
            ("x^2 + 2x + 1", "(x-1)^2"),
            (r"\frac{1}{2}", r"\cos 60"),
            (r"\frac{\sqrt{3}}{2}", r"\sin 30^\circ"),
            ("2k", "2k+2"),
            ("x", "y"),
            ("3R^2", "3r^2"),
            ("ab", "a+b"),
            (r"\sin x", r"\cos x"),
        ],
    );
}

#[test]
fn intervals_tuples_sets_and_lists() {
    table(
        "structures",
        &[
            ("(1,2]", r"\left(1, 2\right]"),
            (r"\{1,2\}", r"\{2,1\}"),
            (r"\{1,2\}", "2, 1"),
            ("1, 2", "2, 1"),
            ("-2,1", "1,-2"),
            ("3, 5, 7", "7, 3, 5"),
            ("1 or 2", "2, 1"),
            (r"(-\infty, 2) \cup (3, \infty)", r"(3,\infty)\cup(-\infty,2)"),
            ("(1, 2)", r"\left(\frac{2}{2}, 2\right)"),
            (r"x \in [-2,7]", "[-2,7]"),
            (r"\{5\}", "5"),
            (r"\left( 3, \frac{\pi}{2} \right)", r"(3, \pi/2)"),
        ],
        &[
            ("(1,2]", "[1,2]"),
            ("(1,2)", "[1,2]"),
            ("(1,2)", "(2,1)"),
            (r"\{1,2\}", r"\{1,2,3\}"),
            ("1, 2", "1"),
            ("(1,2,3)", "(1,2)"),
            (r"(-\infty, 2) \cup (3, \infty)", r"(-\infty, 2] \cup (3, \infty)"),
        ],
    );
}

#[test]
fn matrices() {
    table(
        "matrices",
        &[
            (r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", r"\begin{bmatrix}1&2\\3&4\end{bmatrix}"),
            (
                r"\begin{pmatrix} -1/3 \\ 2/3 \end{pmatrix}",
                r"\begin{pmatrix} -\frac13 \\ \frac{2}{3} \end{pmatrix}",
            ),
        ],
        &[
            (
                r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}",
                r"\begin{pmatrix} 1 & 3 \\ 2 & 4 \end{pmatrix}",
            ),
            (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 & 2 \end{pmatrix}"),
        ],
    );
}

#[test]
fn text_and_choices() {
    table(
        "text",
        &[
            (r"\text{Evelyn}", "evelyn"),
            (r"\text{east}", "East"),
            ("north  east", "North East"),
            (r"\text{(B)}", "B"),
            ("(B)", "B"),
            (r"\textbf{(C)}", "(C)"),
            (r"\text{(C) } 12", "C"),
            ("2516_8", r"2516_{8}"),
        ],
        &[(r"\text{Evelyn}", "Navin"), ("(B)", "(C)"), ("B", "b"), ("2516_8", "2516")],
    );
}

#[test]
fn empty_answers_are_never_equal() {
    assert!(!equivalent("", ""));
    assert!(!equivalent("  ", "5"));
    assert!(!equivalent("$$", "$$"));
}

#[test]
fn pathological_input_is_fast_and_not_equal() {
    let big = "9".repeat(1 << 20);
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let braces = format!("{}1{}", "{".repeat(100_000), "}".repeat(100_000));
    let boxes = r"\boxed{".repeat(200_000);
    let cases: Vec<(String, &str)> = vec![
        ("10^{10^{10}}".into(), "1"),
        ("10^{10^{10}}".into(), "10^{10^{10}+1}"),
        ("2^{2^{2^{2^{2^{2}}}}}".into(), "3"),
        ("10000000!".into(), "1"),
        (r"\frac{1}{0}".into(), "1"),
        (big.clone(), "1"),
        (deep.clone(), "1"),
        (braces, "1"),
        (format!("x^{{{}}}", "9".repeat(5000)), "1"),
        ("1+".repeat(5000) + "1", "5001"),
        (r"\pm".repeat(1000), "1"),
    ];
    for (a, b) in &cases {
        let start = Instant::now();
        assert!(!equivalent(a, b), "{}", &a[..a.len().min(40)]);
        assert!(start.elapsed() < Duration::from_secs(1), "slow on {}", &a[..a.len().min(40)]);
    }
    let start = Instant::now();
    assert_eq!(extract(&boxes, Extraction::Math), None);
    let long_response = format!("{}\\boxed{{5}}", "blah ".repeat(200_000));
    assert_eq!(extract(&long_response, Extraction::Math).as_deref(), Some("5"));
    assert!(MathVerifier::default().verify(&big, "5").value == 0.0);
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn verifier_rewards_and_reasons() {
    let v = MathVerifier::default();
    let r = v.verify(r"thus \boxed{\frac{1}{2}}", "0.5");
    assert_eq!((r.value, r.correct, r.reason.as_str()), (1.0, true, "equal"));
    let r = v.verify(r"thus \boxed{3}", "0.5");
    assert_eq!((r.value, r.correct, r.reason.as_str()), (0.0, false, "not equal"));
    let r = v.verify("I give up.\nSorry about that, really.", "0.5");
    assert_eq!((r.value, r.reason.as_str()), (0.0, "no answer found"));
    let r = v.verify(r"\boxed{1}", "");
    assert_eq!(r.reason, "no reference answer");

    let f = MathVerifier::default().with_format_reward(0.1);
    assert_eq!(f.verify(r"\boxed{3}", "0.5").value, 0.1);
    assert_eq!(f.verify(r"\boxed{0.5}", "0.5").value, 1.0);
    assert_eq!(f.verify("the answer is 3", "0.5").value, 0.0);
    assert_eq!(f.verify(r"\boxed{}", "0.5").value, 0.0);

    let g = MathVerifier::gsm8k();
    assert!(g.verify("so 9*2 = 18.\n#### 18", "She makes 18 dollars.\n#### 18").correct);
    assert!(g.verify("she makes $1,018 per day", "1018").correct);
    assert!(!g.verify("#### 17", "#### 18").correct);
}

#[test]
fn verdict_serialises() {
    let v = check("1,000", r"The total is \boxed{1000}.");
    assert!(v.equal);
    let json = serde_json::to_value(&v).expect("serialise");
    assert_eq!(json["gold"], "1,000");
    assert_eq!(json["gold_normalized"], "1000");
    assert_eq!(json["pred"], "1000");
    assert_eq!(json["equal"], true);
    assert_eq!(json["reason"], "equal");
}

#[test]
fn typical_model_responses() {
    let v = MathVerifier::default();
    let cases = [
        (r"Solving, $x = 2$ or $x = 3$, so $\boxed{x = 2 \text{ or } x = 3}$.", "2, 3", true),
        (r"The roots are \boxed{3, -1}.", "-1, 3", true),
        (r"So the area is $\boxed{12\pi \text{ square units}}$.", r"12\pi", true),
        (r"Therefore $\boxed{\dfrac{\sqrt{3}}{2}}$", r"\frac{\sqrt3}{2}", true),
        (r"which gives \boxed{(-\infty, -2] \cup [3, \infty)}", r"(-\infty,-2]\cup[3,\infty)", true),
        (r"which gives \boxed{(-\infty, -2) \cup [3, \infty)}", r"(-\infty,-2]\cup[3,\infty)", false),
        (r"The answer is $\boxed{\textbf{(B)}}$", r"\text{(B)}", true),
        ("The answer is (D).", r"\text{(B)}", false),
        (r"Thus the total is \$1,250.00.  The answer is 1250.", "1250", true),
        (r"Final Answer: The final answer is $3\sqrt{2}$. I hope it is correct.", r"\sqrt{18}", true),
        (r"\boxed{x^2 - 4}", "(x-2)(x+2)", true),
        (r"\boxed{x^2 + 4}", "(x-2)(x+2)", false),
        (r"\boxed{y = -\frac{1}{2}x + 3}", "x + 2y = 6", true),
        (r"\boxed{\begin{pmatrix} 2 \\ -1 \end{pmatrix}}", r"\begin{pmatrix} 2 \\ -1 \end{pmatrix}", true),
        (r"\boxed{\begin{pmatrix} -1 \\ 2 \end{pmatrix}}", r"\begin{pmatrix} 2 \\ -1 \end{pmatrix}", false),
        (r"So we get \boxed{45^\circ}.", "45", true),
        (r"So we get \boxed{0.5}", r"50\%", false),
    ];
    for (response, gold, want) in cases {
        let r = v.verify(response, gold);
        assert_eq!(r.correct, want, "{response:?} vs {gold:?}: {:?}", check(gold, response));
    }
}

#[test]
fn strict_reward_reads_only_the_last_box() {
    let last = |s: &str| extract(s, Extraction::LastBox);
    // The last of two boxes wins.
    assert_eq!(last(r"first \boxed{3}, then \boxed{5}.").as_deref(), Some("5"));
    assert_eq!(last(r"\boxed{3} and finally \fbox{4}").as_deref(), Some("4"));
    // A broken last box is no answer, even with a good box before it.
    assert_eq!(last(r"\boxed{5} no wait \boxed{6"), None);
    // No fall-backs: phrases, `####`, bare answers and numbers in the text do not count.
    for text in ["the answer is 5", "Final answer: 5", "#### 5", "5", "$5$", "so 5 apples"] {
        assert_eq!(last(text), None, "{text:?}");
    }
    assert_eq!(last(r"\boxed{}"), None);

    let v = MathVerifier::strict();
    assert!(v.verify(r"so \boxed{\frac{1}{2}}", "0.5").correct);
    assert!(!v.verify("the answer is 5", "5").correct);
    assert!(!v.verify(r"\boxed{5} hmm, \boxed{6", "5").correct);
    assert!(!v.verify(r"\boxed{5} no, it is \boxed{6}", "5").correct);
    assert_eq!(v.verify(r"\boxed{6}", "5").value, 0.0, "no format reward");
    // The lenient default still reads phrases and earlier boxes.
    assert!(MathVerifier::default().verify("the answer is 5", "5").correct);

    let gsm = MathVerifier::strict().with_reference_extraction(Extraction::Gsm8k);
    assert!(gsm.verify(r"so she has \boxed{1,000} dollars", "1000 in all.\n#### 1,000").correct);
    assert!(!gsm.verify("so she has 1000 dollars.\n#### 1000", "#### 1000").correct);
    let math = MathVerifier::strict().with_reference_extraction(Extraction::Math);
    assert!(math.verify(r"\boxed{2}", r"Since $1+1=2$, we get $\boxed{2}$.").correct);
}

#[test]
fn chains_approximations_rounding_and_decimal_commas() {
    table(
        "free-text equivalences",
        &[
            ("x = 5+5+1 = 11", "11"),
            (r"y = 4 \cdot 6 = 24", "24"),
            (r"\frac{1}{3} \approx 0.33", r"\frac13"),
            (r"x \approx 3.14", "3.14"),
            (r"x \geq 5", "x >= 5"),
            (r"x \neq 2", "x != 2"),
            (r"x \lt 3", "x < 3"),
            ("0.0833333333333333", r"\frac{1}{12}"),
            ("0.083333", r"\frac{1}{12}"),
            ("-0.666667", r"-\frac{2}{3}"),
            ("1.414214", r"\sqrt{2}"),
            ("(0.6, 2.666667]", r"(\frac35, \frac83]"),
            ("2,74", "2.74"),
            ("-3,5", "-3.5"),
            ("12 €", "12"),
        ],
        &[
            ("x = 5+5+1 = 12", "11"),
            ("2x = 10", "10"),
            ("x = 11 = y", "11"),
            (r"\frac{1}{4} \approx 0.25", r"\frac13"),
            ("0.33", r"\frac13"),
            ("0.0834", r"\frac{1}{12}"),
            ("3.0000001", "3"),
            ("1.41", r"\sqrt{2}"),
            ("(0.6, 2.7]", r"(\frac35, \frac83]"),
            ("2,74", "2.75"),
            ("1,2", r"\{1.2\}"),
            ("2,74", "274"),
        ],
    );
}

/// Hostile free text is "not equal" (how fast is the `hostile` group of the bench).
#[test]
fn hostile_free_text_is_not_equal() {
    let grader = MathVerifier::grader();
    let hostile = [
        "$".repeat(1 << 18),
        r"\[".repeat(1 << 16),
        "1,".repeat(1 << 17),
        "9".repeat(1 << 18),
        "the answer is ".repeat(1 << 14),
        format!("${}1{}$", "(".repeat(25_000), ")".repeat(25_000)),
        format!("{}2", r"\begin{align*} = ".repeat(12_000)),
        format!("x = {}", "1 = ".repeat(25_000)),
        "A B C D ".repeat(25_000),
        format!("$10^{{10^{{10}}}}$ {}", "é".repeat(25_000)),
    ];
    for text in &hostile {
        let head: String = text.chars().take(30).collect();
        assert!(!grader.check("5", text).equal, "{head}");
        assert!(!grader.check(text, "5").equal, "{head}");
        assert!(!grader.check("C", text).equal || text.starts_with('A'), "{head}");
    }
}

#[test]
fn pipeline_stages_run_in_order_and_can_be_chosen() {
    use trlvr_verifiers::extract::Pipeline;
    let free = |s: &str| extract(s, Extraction::FREE);
    let text = r"We get $x = 2$, so the answer is 3. Check: 4 apples. \boxed{5}";
    assert_eq!(free(text).as_deref(), Some("5"), "a box first");
    assert_eq!(free("the answer is 3. Check: $4$ and 6").as_deref(), Some("3"), "then an anchor");
    assert_eq!(free("first $4$, then $x=5$, and 6 more").as_deref(), Some("x=5"), "then math");
    assert_eq!(free("so she has 99 marbles.").as_deref(), Some("99"), "then the last number");
    assert_eq!(free("x^2+1").as_deref(), Some("x^2+1"), "a bare formula before its last number");
    assert_eq!(free("Evelyn").as_deref(), Some("Evelyn"), "short text last");
    let numbers_only = Extraction::Pipeline(Pipeline { number: true, ..Pipeline::NONE });
    assert_eq!(extract("the answer is 3. Check: $4$ and 6", numbers_only).as_deref(), Some("6"));
    assert_eq!(extract(r"\boxed{5}", Extraction::Pipeline(Pipeline::NONE)), None);
}
