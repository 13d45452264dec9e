//! Links that hold: every relative link of README.md and docs/ reaches a file (and, with
//! `#anchor`, one of its headings), and every `method.md §N` the repository cites is a
//! section of docs/method.md.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (hidden folders, `target` and `assets` left out) that `keep`
/// takes.
fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "assets" {
                files(&path, keep, out);
            }
        } else if keep(&path) {
            out.push(path);
        }
    }
}

/// README.md and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    files(&root().join("docs"), &|p| p.extension().is_some_and(|e| e == "md"), &mut pages);
    pages.sort();
    pages
}

/// A page's lines outside fenced code blocks.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped but `-` and
/// `_`, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown page's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    prose_lines(text).filter(|l| l.starts_with('#')).map(|l| slug(l.trim_start_matches('#'))).collect()
}

/// The targets of `[text](target)` links outside code blocks and inline code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        // Inline code may hold brackets and parentheses that are no link.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push(after[..end].split_whitespace().next().unwrap_or_default().to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_reaches_its_file_and_heading() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) =
                target.split_once('#').map_or((target.as_str(), None), |(f, a)| (f, Some(a)));
            let path = if file.is_empty() { page.clone() } else { page.parent().unwrap().join(file) };
            let name = page.strip_prefix(root()).unwrap().display().to_string();
            if !path.exists() {
                broken.push(format!("{name}: {target} (no such file)"));
                continue;
            }
            if let Some(anchor) = anchor
                && path.extension().is_some_and(|e| e == "md")
                && !anchors(&std::fs::read_to_string(&path).unwrap()).contains(anchor)
            {
                broken.push(format!("{name}: {target} (no such heading)"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every committed text file that could cite the method (sources, docs, recipes, studies).
fn citing_files() -> Vec<PathBuf> {
    let text =
        |p: &Path| p.extension().is_some_and(|e| ["rs", "md", "toml", "py", "sh"].iter().any(|x| e == *x));
    let mut out = Vec::new();
    files(root(), &text, &mut out);
    out
}

#[test]
fn every_method_reference_names_a_section() {
    let method = std::fs::read_to_string(root().join("docs/method.md")).unwrap();
    let sections: BTreeSet<String> = method
        .lines()
        .filter_map(|l| l.strip_prefix("## §"))
        .map(|l| l.split('.').next().unwrap().to_string())
        .collect();
    assert!(sections.len() >= 6, "docs/method.md numbers its sections: {sections:?}");
    let mut missing = Vec::new();
    let mut cited = 0;
    for file in citing_files() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (at, _) in text.match_indices("method.md") {
            let after = text[at + "method.md".len()..].trim_start_matches(' ');
            let Some(section) = after.strip_prefix('§') else { continue };
            // `§2-4` cites a range: both ends must exist.
            let cited_range = section.split(|c: char| !c.is_ascii_digit() && c != '-').next().unwrap();
            // `method.md §N` in prose about the references is no reference.
            for n in cited_range.split('-').filter(|n| !n.is_empty()) {
                cited += 1;
                if !sections.contains(n) {
                    missing.push(format!("{}: method.md §{n}", file.strip_prefix(root()).unwrap().display()));
                }
            }
        }
    }
    assert!(cited > 30, "only {cited} references found: the scan is broken");
    assert!(missing.is_empty(), "references to sections docs/method.md lacks:\n{}", missing.join("\n"));
}

/// One row of docs/figures.toml.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CurrentFigure {
    what: String,
    /// The heading of docs/performance.md with the dated run.
    measured: String,
    figure: String,
    command: String,
    machine: String,
}

/// README.md's current-figures table is docs/figures.toml rendered (between its two
/// markers); `TRLVR_BLESS=1` writes it there instead of comparing.
#[test]
fn the_current_figures_table_is_figures_toml() {
    #[derive(serde::Deserialize)]
    struct File {
        figure: Vec<CurrentFigure>,
    }
    let (start, end) = ("<!-- current figures: docs/figures.toml -->\n", "<!-- end of current figures -->");
    let source = std::fs::read_to_string(root().join("docs/figures.toml")).unwrap();
    let rows: File = toml::from_str(&source).unwrap();
    let mut table = String::from("| what | figure | command | machine |\n|---|---|---|---|\n");
    for r in &rows.figure {
        table += &format!(
            "| [{}](docs/performance.md#{}) | {} | {} | {} |\n",
            r.what, r.measured, r.figure, r.command, r.machine
        );
    }
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (before, rest) = readme.split_once(start).expect("README.md has the current-figures marker");
    let (shown, after) = rest.split_once(end).expect("README.md has the end-of-figures marker");
    if std::env::var_os("TRLVR_BLESS").is_some() {
        std::fs::write(&path, format!("{before}{start}{table}{end}{after}")).unwrap();
    } else {
        assert_eq!(
            shown, table,
            "README.md's table differs from docs/figures.toml: rerun with TRLVR_BLESS=1"
        );
    }
}
