//! LaTeX commands: sizing and spacing dropped, text wrappers unwrapped, aliases spelled
//! one way, and the arguments of `\frac`, `\sqrt` and `\binom` braced.

/// Index of the `}` matching the `{` at `open`, skipping escaped braces `\{` / `\}`.
pub(crate) fn matching_brace(s: &str, open: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Reads a LaTeX command name (ASCII letters) starting at `i`; returns its end.
fn command_end(b: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < b.len() && b[j].is_ascii_alphabetic() {
        j += 1;
    }
    j
}

/// Rewrites LaTeX commands: drops sizing and spacing, unwraps text-like wrappers, maps
/// aliases to one spelling and braces the arguments of `\frac`, `\sqrt` and `\binom`.
pub(super) fn commands(s: &str) -> String {
    commands_at(s, 0)
}

/// Groups nested deeper than this inside `\frac{..}` arguments are copied as they are.
const MAX_ARG_NESTING: usize = 8;

/// [`commands`] inside `depth` levels of `\frac{..}` arguments.
fn commands_at(s: &str, depth: usize) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    // Closing braces of unwrapped `\text{..}` groups, innermost last.
    let mut drop_close: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'}' && drop_close.last() == Some(&i) {
            drop_close.pop();
            i += 1;
        } else if b[i] != b'\\' {
            let c = s[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        } else {
            let end = command_end(b, i + 1);
            i = if end == i + 1 {
                symbol_command(s, i + 1, &mut out)
            } else {
                named_command(s, i + 1, end, depth, &mut out, &mut drop_close)
            };
        }
    }
    out
}

/// Rewrites a one-character command such as `\!`, `\,` or `\{`, whose character is at
/// `at`; returns the index after it.
fn symbol_command(s: &str, at: usize, out: &mut String) -> usize {
    match s.as_bytes().get(at) {
        Some(b'!' | b'%' | b'$') | None => {}
        Some(b',' | b';' | b':' | b' ' | b'>') => out.push(' '),
        Some(_) => {
            let c = s[at..].chars().next().unwrap_or(' ');
            out.push('\\');
            out.push(c);
            return at + c.len_utf8();
        }
    }
    at + 1
}

/// Rewrites the command named by `s[start..end]`; returns the index after what it
/// consumed. The closing brace of an unwrapped `\text{..}` goes on `drop_close`.
fn named_command(
    s: &str,
    start: usize,
    end: usize,
    depth: usize,
    out: &mut String,
    drop_close: &mut Vec<usize>,
) -> usize {
    let b = s.as_bytes();
    let name = &s[start..end];
    let mut i = end;
    match name {
        "left" | "right" | "bigl" | "bigr" | "Bigl" | "Bigr" | "big" | "Big" | "bigg" | "Bigg" => {
            if b.get(i) == Some(&b'.') {
                i += 1;
            }
        }
        "displaystyle" | "textstyle" | "quad" | "qquad" | "limits" | "nolimits" => out.push(' '),
        "circ" | "degree" | "degrees" => {}
        "dfrac" | "tfrac" | "cfrac" | "frac" => i = braced_args(s, i, 2, "\\frac", out, depth),
        "dbinom" | "tbinom" | "binom" => i = braced_args(s, i, 2, "\\binom", out, depth),
        "sqrt" => i = sqrt(s, i, out, depth),
        "leq" | "leqslant" | "le" => out.push_str("\\le "),
        "geq" | "geqslant" | "ge" => out.push_str("\\ge "),
        "neq" | "ne" => out.push_str("\\ne "),
        "lt" => out.push('<'),
        "gt" => out.push('>'),
        "lbrace" => out.push_str("\\{"),
        "rbrace" => out.push_str("\\}"),
        "vert" | "lvert" | "rvert" | "mid" => out.push('|'),
        "ast" => out.push('*'),
        "inf" | "infin" => out.push_str("\\infty "),
        "varnothing" => out.push_str("\\emptyset "),
        "text" | "textbf" | "textit" | "textrm" | "textsf" | "textnormal" | "mathrm" | "mathbf"
        | "mathit" | "mathsf" | "mbox" | "hbox" | "boxed" | "fbox" => i = unwrap_group(s, i, drop_close),
        "operatorname" => i = operator_name(s, i, out),
        _ => {
            out.push('\\');
            out.push_str(name);
        }
    }
    i
}

/// `\sqrt` with its optional index `[n]` kept and its argument braced, from `i` (after
/// the name); returns the index after the argument.
fn sqrt(s: &str, mut i: usize, out: &mut String, depth: usize) -> usize {
    out.push_str("\\sqrt");
    if s.as_bytes().get(i) == Some(&b'[')
        && let Some(close) = s[i..].find(']')
    {
        out.push_str(&s[i..=i + close]);
        i += close + 1;
    }
    braced_args(s, i, 1, "", out, depth)
}

/// The group after a text-like wrapper (`\text{..}`, from `i` after the name): its content
/// stays in the stream, so that nested commands are rewritten in the same pass, and its
/// closing brace is remembered to be dropped. Returns where the content starts (`i` when
/// no group follows).
fn unwrap_group(s: &str, i: usize, drop_close: &mut Vec<usize>) -> usize {
    let b = s.as_bytes();
    let j = i + b[i..].iter().take_while(|c| **c == b' ').count();
    if b.get(j) == Some(&b'{')
        && let Some(close) = matching_brace(s, j)
    {
        drop_close.push(close);
        return j + 1;
    }
    i
}

/// `\operatorname{name}` (from `i` after the command) as the command `\name`; returns the
/// index after the group.
fn operator_name(s: &str, i: usize, out: &mut String) -> usize {
    if s.as_bytes().get(i) == Some(&b'{')
        && let Some(close) = matching_brace(s, i)
    {
        out.push('\\');
        out.push_str(s[i + 1..close].trim());
        out.push(' ');
        return close + 1;
    }
    i
}

/// Writes `cmd` and then `n` arguments starting at `i`, bracing single-character (or
/// single-command) arguments; returns the index after the last argument consumed.
fn braced_args(s: &str, mut i: usize, n: usize, cmd: &str, out: &mut String, depth: usize) -> usize {
    let b = s.as_bytes();
    out.push_str(cmd);
    for _ in 0..n {
        while b.get(i) == Some(&b' ') {
            i += 1;
        }
        match b.get(i) {
            Some(b'{') => match matching_brace(s, i) {
                Some(close) if depth < MAX_ARG_NESTING => {
                    out.push('{');
                    out.push_str(&commands_at(&s[i + 1..close], depth + 1));
                    out.push('}');
                    i = close + 1;
                }
                Some(close) => {
                    out.push_str(&s[i..=close]);
                    i = close + 1;
                }
                None => return i,
            },
            Some(c) if c.is_ascii_alphanumeric() => {
                out.push('{');
                out.push(*c as char);
                out.push('}');
                i += 1;
            }
            Some(b'\\') => {
                let end = command_end(b, i + 1);
                if end == i + 1 {
                    return i;
                }
                out.push('{');
                out.push_str(&s[i..end]);
                out.push('}');
                i = end;
            }
            _ => return i,
        }
    }
    i
}

/// `^{2}` to `^2` and `_{8}` to `_8`: single-character scripts lose their braces.
pub(super) fn unbrace_scripts(s: &str) -> String {
    if !s.contains("^{") && !s.contains("_{") {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if (b[i] == b'^' || b[i] == b'_')
            && i + 3 < b.len() + 1
            && b.get(i + 1) == Some(&b'{')
            && b.get(i + 2).is_some_and(u8::is_ascii_alphanumeric)
            && b.get(i + 3) == Some(&b'}')
        {
            out.push(b[i] as char);
            out.push(b[i + 2] as char);
            i += 4;
            continue;
        }
        let c = s[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}
