//! The layout rules a newcomer relies on, read from the sources: no import circle
//! between files of a crate, short command functions, long library files say why, plugins
//! take their models from the host, and no committed file names a local machine's paths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's crates: (name, source folder).
const CRATES: [(&str, &str); 4] = [
    ("trlvr", "trlvr/src"),
    ("trlvr-models", "trlvr-models/src"),
    ("trlvr-verifiers", "trlvr-verifiers/src"),
    ("trlvr-cli", "src"),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The module path of a file under `src` (`a/b.rs` and `a/b/mod.rs` are `a::b`; the
/// crate root is empty).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code of a file before its inline tests, without comments.
fn code(text: &str) -> String {
    let body = text.split("#[cfg(test)]").next().unwrap_or_default();
    body.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// Every path the code names from the crate root: `crate::a::b`, `super::c` and
/// `self::d` resolved against `module`, paths into `children` (its child modules), and
/// the branches of `use crate::{a, b::{c}}` groups. A `pub use` of a child only
/// re-exports: it is no dependency.
fn named_paths(code: &str, module: &[String], children: &[String]) -> Vec<Vec<String>> {
    let is_reexport = |statement: &&str| {
        let s = statement.trim_start();
        s.starts_with("pub use") || s.starts_with("pub(crate) use")
    };
    let own: String = code.split_inclusive(';').filter(|s| !is_reexport(s)).collect();
    // A name the module re-exports from a child and uses in its own code is a dependency.
    let mut paths: Vec<Vec<String>> = Vec::new();
    for statement in code.split_inclusive(';').filter(is_reexport) {
        let rest = statement.trim_start().split_once("use ").map_or("", |(_, r)| r.trim_start());
        let base = if rest.starts_with("crate::") || rest.starts_with("super::") { continue } else { module };
        if !children.iter().any(|c| rest.starts_with(&format!("{c}::"))) {
            continue;
        }
        let alias = rest.split_once(" as ").map(|(_, a)| a.trim_end_matches(';').trim().to_string());
        for path in expand(rest, base).0 {
            let name = alias.clone().or_else(|| path.last().cloned());
            let used = name.is_some_and(|name| {
                own.match_indices(name.as_str()).any(|(at, _)| {
                    let before =
                        own[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
                    let after = own[at + name.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_');
                    !before && !after
                })
            });
            if used {
                paths.push(path);
            }
        }
    }
    let code = own;
    let bytes = code.as_bytes();
    // Inline modules (`mod name { .. }`) with the depth their body opens at: `super::`
    // inside one is the file's module.
    let (mut depth, mut inline): (usize, Vec<(String, usize)>) = (0, Vec::new());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        let starts_word =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        if starts_word && bytes[i..].starts_with(b"mod ") {
            let name: String =
                code[i + 4..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if code[i + 4 + name.len()..].trim_start().starts_with('{') {
                inline.push((name, depth + 1));
            }
        }
        let here: Vec<String> = module.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
        let child = children
            .iter()
            .find(|c| inline.is_empty() && bytes[i..].starts_with(format!("{c}::").as_bytes()));
        let (base, len): (Vec<String>, usize) = if starts_word && bytes[i..].starts_with(b"crate::") {
            (Vec::new(), 7)
        } else if starts_word && bytes[i..].starts_with(b"self::") {
            (here, 6)
        } else if starts_word && bytes[i..].starts_with(b"super::") {
            let mut base = here;
            let mut len = 0;
            while bytes[i + len..].starts_with(b"super::") {
                base.pop();
                len += 7;
            }
            (base, len)
        } else if starts_word && child.is_some() {
            (here, 0)
        } else {
            i += 1;
            continue;
        };
        let (found, used) = expand(&code[i + len..], &base);
        paths.extend(found);
        // The path's own characters hold no braces but a group's: count those.
        for &b in &bytes[i + len..i + len + used] {
            match b {
                b'{' => depth += 1,
                b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        i += len + used.max(1);
    }
    paths
}

/// The paths below `base` named at the start of `rest` (`a::b`, or a `{..}` group);
/// and how many bytes they took.
fn expand(rest: &str, base: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut path = base.to_vec();
    let mut i = 0;
    let bytes = rest.as_bytes();
    loop {
        if bytes.get(i) == Some(&b'{') {
            let mut depth = 0;
            let mut end = i;
            for (k, c) in rest[i..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = i + k;
                    break;
                }
            }
            let inner = &rest[i + 1..end];
            let mut found = Vec::new();
            let mut depth = 0;
            let mut start = 0;
            for (k, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.extend(expand(inner[start..k].trim(), &path).0);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            found.extend(expand(inner[start..].trim(), &path).0);
            return (found, end + 1);
        }
        let ident: String = rest[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if ident.is_empty() {
            return (vec![path], i);
        }
        i += ident.len();
        if ident != "self" {
            path.push(ident);
        }
        if rest[i..].starts_with("::") {
            i += 2;
        } else {
            return (vec![path], i);
        }
    }
}

/// File-level dependencies of one crate: file -> files it names (the root excluded: it
/// re-exports).
fn dependencies(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = rust_files(src);
    let modules: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| (module_of(src, f), f.strip_prefix(root()).unwrap().display().to_string()))
        .collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let name = modules[&module].clone();
        let text = std::fs::read_to_string(file).unwrap();
        let mut edges = BTreeSet::new();
        let children: Vec<String> = modules
            .keys()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(&module))
            .map(|m| m[module.len()].clone())
            .collect();
        for path in named_paths(&code(&text), &module, &children) {
            // The longest prefix of the path that is a file of its own.
            let target = (1..=path.len()).rev().find_map(|n| modules.get(&path[..n]));
            if let Some(target) = target
                && *target != name
            {
                edges.insert(target.clone());
            }
        }
        if !module.is_empty() {
            graph.insert(name, edges);
        }
    }
    graph
}

/// The files on a circle of `graph`, each circle once (Tarjan's components of two or more).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(w: &mut Walk<'g>, v: &'g str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for u in w.graph.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.graph.contains_key(u) {
                continue;
            }
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.low[v].min(w.low[u]);
                w.low.insert(v, low);
            } else if w.stack.contains(&u) {
                let low = w.low[v].min(w.index[u]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(u) = w.stack.pop() {
                component.push(u.to_string());
                if u == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut walk =
        Walk { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            visit(&mut walk, v);
        }
    }
    walk.found
}

#[test]
fn the_circle_finder_finds_circles() {
    let module = vec!["a".to_string()];
    let code = "use crate::{b::{X, c::Y}, d};\npub use g::{Z, W};\nlet x = super::e::f() + g::h() + W;";
    let paths = named_paths(code, &module, &["g".to_string()]);
    let expected: Vec<Vec<String>> =
        [&["a", "g", "W"][..], &["b", "X"], &["b", "c", "Y"], &["d"], &["e", "f"], &["a", "g", "h"]]
            .iter()
            .map(|p| p.iter().map(|s| s.to_string()).collect())
            .collect();
    assert_eq!(paths, expected);
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect();
    assert_eq!(circles(&graph), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
}

#[test]
fn no_file_imports_in_a_circle() {
    let mut found = Vec::new();
    for (name, src) in CRATES {
        let graph = dependencies(&root().join(src));
        assert!(graph.len() > 3, "{name}: too few files read from {src}");
        found.extend(circles(&graph));
    }
    assert!(found.is_empty(), "files that import each other (directly or around): {found:#?}");
}

/// The model files reach the CPU kernels through `kernels.rs` alone, and hold no CPU
/// dispatch of their own: no file outside `kernels/` names a file inside it, or gates on
/// the CPU's architecture or features, or handles flex's own tensors.
#[test]
fn model_files_call_the_kernels_through_their_interface() {
    let kernels = "trlvr-models/src/kernels/";
    let graph = dependencies(&root().join("trlvr-models/src"));
    assert!(graph.keys().any(|f| f.starts_with(kernels)), "no kernel files read under {kernels}");
    let mut found = Vec::new();
    for (file, edges) in &graph {
        // The interface names its kernels; everything else goes through it.
        if file.starts_with(kernels) || file == "trlvr-models/src/kernels.rs" {
            continue;
        }
        found.extend(edges.iter().filter(|e| e.starts_with(kernels)).map(|e| format!("{file} names {e}")));
        let text = code(&std::fs::read_to_string(root().join(file)).unwrap());
        for dispatch in ["target_arch", "target_feature", "FlexTensor", "pulp::"] {
            if text.contains(dispatch) {
                found.push(format!("{file} uses {dispatch}"));
            }
        }
    }
    assert!(found.is_empty(), "kernel work outside trlvr-models/src/kernels: {found:#?}");
}

/// The lines of each function longer than `limit`, as `file:line name (n lines)`.
fn long_functions(src: &Path, limit: usize) -> Vec<String> {
    let mut long = Vec::new();
    for file in rust_files(src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i].trim_start();
            let is_fn = !line.starts_with("//")
                && line.split('(').next().is_some_and(|head| head.split_whitespace().any(|w| w == "fn"));
            if !is_fn {
                i += 1;
                continue;
            }
            let (mut depth, mut opened, mut end) = (0i32, false, None);
            for (j, l) in lines.iter().enumerate().skip(i) {
                let code = l.split("//").next().unwrap_or_default();
                for c in code.chars() {
                    match c {
                        '{' => (depth, opened) = (depth + 1, true),
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
                    end = Some(j);
                    break;
                }
            }
            let end = end.unwrap_or(lines.len() - 1);
            if opened && end + 1 - i > limit {
                let name =
                    line.split("fn ").nth(1).unwrap_or(line).split(['(', '<']).next().unwrap_or_default();
                long.push(format!("{}:{} {name} ({} lines)", file.display(), i + 1, end + 1 - i));
            }
            i = if opened { end + 1 } else { i + 1 };
        }
    }
    long
}

#[test]
fn command_functions_are_short() {
    let long = long_functions(&root().join("src"), 80);
    assert!(long.is_empty(), "functions over 80 lines in the command line's src/: {long:#?}");
}

#[test]
fn long_library_files_say_why() {
    let mut unexplained = Vec::new();
    for (_, src) in CRATES {
        for file in rust_files(&root().join(src)) {
            let text = std::fs::read_to_string(&file).unwrap();
            let doc: String = text.lines().take_while(|l| l.starts_with("//!")).collect::<Vec<_>>().join(" ");
            if text.lines().count() > 500 && !doc.to_lowercase().contains("long") {
                unexplained.push(file.strip_prefix(root()).unwrap().display().to_string());
            }
        }
    }
    assert!(unexplained.is_empty(), "over 500 lines with no reason at the top: {unexplained:#?}");
}

#[test]
fn plugins_take_their_models_from_the_host() {
    for entry in std::fs::read_dir(root().join("plugins")).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            let deps = text.split("[dependencies]").nth(1).unwrap_or_default();
            let deps = deps.split("\n[").next().unwrap_or_default();
            assert!(!deps.contains("trlvr-models"), "{} links the model stack", manifest.display());
        }
    }
}

#[test]
fn no_committed_file_names_a_local_machine() {
    let Ok(out) = std::process::Command::new("git").arg("-C").arg(root()).arg("ls-files").output() else {
        return; // not a git checkout (a packaged crate): nothing committed to read
    };
    let local = ["/work/", "/root/", "/home/", "/tmp/venv"];
    let mut found = Vec::new();
    for file in String::from_utf8_lossy(&out.stdout).lines() {
        if file == "tests/house.rs" {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root().join(file)) else { continue };
        for (n, line) in text.lines().enumerate() {
            if local.iter().any(|l| line.contains(l)) {
                found.push(format!("{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "local machine paths: {found:#?}");
}

/// README.md's library snippet is `examples/grpo_loss.rs` between its markers, word for
/// word: the example compiles (and runs in CI), so the README's does.
#[test]
fn the_readme_s_library_snippet_is_the_example() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let example = std::fs::read_to_string(root().join("examples/grpo_loss.rs")).unwrap();
    let start = readme.find("```rust\nuse trlvr::burn::prelude::*;").expect("the snippet in README.md") + 8;
    let snippet = &readme[start..start + readme[start..].find("```").unwrap()];
    let begin = example.find("// README begin\n").unwrap() + "// README begin\n".len();
    let region = &example[begin..example.find("    // README end").unwrap()];
    let region: String =
        region.lines().map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l))).collect();
    assert_eq!(snippet, region);
}
