use super::*;

#[test]
fn table() {
    let cases = [
        (r"\left( 3, \frac{\pi}{2} \right)", r"(3,\frac{\pi}{2})"),
        (r"10,\!080", "10080"),
        (r"11,\! 111,\! 111,\! 100", "11111111100"),
        (r"\$32,\!348", "32348"),
        (r"1{,}000", "1000"),
        ("58,500", "58500"),
        ("1, 2", "1, 2"),
        ("1, 234", "1, 234"),
        ("1,234", "1234"),
        (r"864 \mbox{ inches}^2", "864"),
        (r"15\mbox{ cm}^2", "15"),
        (r"\frac{270}7\text{ degrees}", r"\frac{270}{7}"),
        (r"\frac 34", r"\frac{3}{4}"),
        (r"\frac9{19}", r"\frac{9}{19}"),
        (r"\dfrac{17}{50}", r"\frac{17}{50}"),
        (r"11\sqrt2", r"11\sqrt{2}"),
        (r"90^{\circ}", "90"),
        (r"\sin 30^\circ", r"\sin(30\pi/180)"),
        (r"\cos(60^{\circ}) + 30^\circ", r"\cos(60\pi/180)+30"),
        (r"\tan{45^\circ", r"\tan{45"),
        (r"50\%", "50"),
        (r"0.\overline{3}", r"\frac{3}{9}"),
        (r"0.1\overline{6}", r"\frac{15}{90}"),
        (r"1.2\overline{34}", r"\frac{1222}{990}"),
        (r".\overline{27}", r"\frac{27}{99}"),
        (r"x = 2.\overline 5", r"x=\frac{23}{9}"),
        (r"\overline{AB}", r"\overline{AB}"),
        (r"\text{Evelyn}", "Evelyn"),
        (r"\textbf{(C)}", "C"),
        ("5.", "5"),
        ("2 1/2", r"2\frac{1}{2}"),
        (r"\cot x", r"\cot x"),
        (r"4210_{5}", "4210_5"),
        (r"x \in [-2,7]", r"x\in[-2,7]"),
        (r"1 \text{ or } 2", "1, 2"),
        ("12 dollars", "12"),
        (r"5.4 \text{ cents}", "5.4"),
        (r"x \le 3", r"x\le 3"),
        (r"\sqrt[3]{x}", r"\sqrt[3]{x}"),
        (r"\frac{\sqrt2}{\dfrac12}", r"\frac{\sqrt{2}}{\frac{1}{2}}"),
        ("π", r"\pi"),
        (r"\frac{1}{3} \approx 0.33", r"\frac{1}{3}"),
        (r"x \approx 3.14", "3.14"),
        ("x ≈ 2", "2"),
        ("2,74 €", "2,74"),
        ("٣٥", "35"),
    ];
    for (input, want) in cases {
        assert_eq!(normalize(input), want, "normalize({input:?})");
    }
}

#[test]
fn idempotent_on_samples() {
    let deep = format!("{}x{}", r"\text{".repeat(40), "}".repeat(40));
    for s in [r"\frac\frac12 3", r"\text{\text{a}}", "1,000,0", r"\sqrt\sqrt2", &deep] {
        let once = normalize(s);
        assert_eq!(normalize(&once), once, "{s:?}");
    }
}
