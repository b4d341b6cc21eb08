//! The shape of the source tree: each folder of `src/` imports only folders below it
//! (the README's "Development" section lists them from the ground up), so no two
//! folders lean on each other. Read from the code's own `crate::` paths in whole files;
//! test code (items under `#[cfg(test)]`, `tests/` folders, `tests*.rs`) may reach
//! anywhere, and comments and string literals are not code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module of `src/` -> module -> the files that make the first use the second.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "tests") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs")
            && !p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("tests")
        {
            out.push(p);
        }
    }
}

/// `text`'s characters with comments and the insides of string and character
/// literals turned to spaces (their quotes and every newline kept), so braces and
/// paths in them are not code, and each character stays where it was.
fn blank_literals(text: &str) -> Vec<char> {
    let c: Vec<char> = text.chars().collect();
    let mut out = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in out.iter_mut().take(to.min(c.len())).skip(from) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if c[i] == '/' && at(1) == '/' {
            let start = i;
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            blank(&mut out, start, i);
        } else if c[i] == '/' && at(1) == '*' {
            let start = i;
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            blank(&mut out, start, i);
        } else if (c[i] == 'r' || (c[i] == 'b' && at(1) == 'r'))
            && !c
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
            && {
                let s = if c[i] == 'b' { 2 } else { 1 };
                let hashes = (s..).take_while(|&k| at(k) == '#').count();
                at(s + hashes) == '"'
            }
        {
            // A raw string: r"..." or r#"..."# (no escapes; ends at the same hashes).
            let s = if c[i] == 'b' { 2 } else { 1 };
            let hashes = (s..).take_while(|&k| at(k) == '#').count();
            i += s + hashes + 1;
            let start = i;
            while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')))
            {
                i += 1;
            }
            blank(&mut out, start, i);
            i += 1 + hashes;
        } else if c[i] == '"' {
            i += 1;
            let start = i;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, start, i);
            i += 1;
        } else if c[i] == '\'' && (at(1) == '\\' || (at(1) != '\'' && at(2) == '\'')) {
            // A character literal ('x', '\n', '{'); a lifetime ('a) has no closing quote.
            i += 1;
            let start = i;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, start, i);
            i += 1;
        } else {
            i += 1;
        }
    }
    out
}

/// Which characters of `text` are not test code: each `#[cfg(test)]` and the item it
/// annotates (further attributes, then up to its `;` or `,`, or through the block of
/// a `mod`, `fn`, `impl` or type) are not; the code after it is.
fn outside_tests(code: &[char]) -> Vec<bool> {
    let mark: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut keep = vec![true; code.len()];
    let c = code;
    let mut i = 0;
    while i < c.len() {
        if !c[i..].starts_with(&mark) {
            i += 1;
            continue;
        }
        let start = i;
        i += mark.len();
        // Further attributes of the same item.
        loop {
            while i < c.len() && c[i].is_whitespace() {
                i += 1;
            }
            if c.get(i) == Some(&'#') && c.get(i + 1) == Some(&'[') {
                let mut depth = 0;
                while i < c.len() {
                    match c[i] {
                        '[' => depth += 1,
                        ']' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            } else {
                break;
            }
        }
        let head: String = c[i..].iter().take(200).collect();
        let words: Vec<&str> = head
            .split(|ch: char| ch.is_whitespace() || ch == '!')
            .filter(|w| !w.is_empty())
            .skip_while(|w| w.starts_with("pub") || *w == "unsafe" || *w == "async")
            .take(1)
            .collect();
        // A block item ends with its block (or a `;`: `mod x;`), a declaration at its
        // `;`, anything else (a field, an arm) at its `,` too.
        let (block, decl) = match words.first().copied() {
            Some("fn" | "mod" | "impl" | "struct" | "enum" | "trait" | "union" | "macro_rules") => {
                (true, false)
            }
            Some("use" | "const" | "static" | "let" | "type" | "extern") => (false, true),
            _ => (false, false),
        };
        let mut depth = 0i32;
        while i < c.len() {
            match c[i] {
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => {
                    depth -= 1;
                    if depth < 0 {
                        // The end of the enclosing block: the item ended before it.
                        break;
                    }
                    if depth == 0 && c[i] == '}' && block {
                        i += 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    i += 1;
                    break;
                }
                ',' if depth == 0 && !block && !decl => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        for k in keep.iter_mut().take(i).skip(start) {
            *k = false;
        }
    }
    keep
}

/// The code of a whole file without its test items, comments and literals' insides.
fn without_test_items(text: &str) -> String {
    let code = blank_literals(text);
    let keep = outside_tests(&code);
    code.iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| *c)
        .collect()
}

/// The error messages of a file's code (test items left out): the text of every
/// `bail!(`, `anyhow!(`, `.context(` and `.with_context(` call, literals included.
fn error_calls(text: &str) -> Vec<String> {
    let orig: Vec<char> = text.chars().collect();
    let code = blank_literals(text);
    let keep = outside_tests(&code);
    let blanked: String = code.iter().collect();
    let mut out = Vec::new();
    for call in ["bail!(", "anyhow!(", ".context(", ".with_context("] {
        for (byte, _) in blanked.match_indices(call) {
            let start = blanked[..byte].chars().count();
            if !keep[start] {
                continue;
            }
            let mut depth = 0;
            let mut end = start;
            for (k, ch) in code.iter().enumerate().skip(start) {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.push(orig[start..=end.max(start)].iter().collect());
        }
    }
    out
}

/// The top-level modules a piece of code names as `crate::NAME` or inside
/// `crate::{...}` (comments and literals already out).
fn named_modules(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in code.lines() {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let words: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                group
                    .split(['}', ','])
                    .map(|w| w.trim().split("::").next().unwrap_or_default())
                    .collect()
            } else {
                vec![rest
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next()
                    .unwrap()]
            };
            out.extend(
                words
                    .into_iter()
                    .filter(|w| modules.contains(*w))
                    .map(str::to_string),
            );
        }
    }
    out
}

fn graph(src: &Path) -> Graph {
    let modules: BTreeSet<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.trim_end_matches(".rs").to_string()
        })
        .collect();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g = Graph::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap().to_string_lossy().into_owned();
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        let code = without_test_items(&text);
        for m in named_modules(&code, &modules) {
            if m != top {
                g.entry(top.clone())
                    .or_default()
                    .entry(m)
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    g
}

/// Every circle of folders, each as the path that closes it.
fn circles(g: &Graph) -> Vec<Vec<String>> {
    fn walk(
        g: &Graph,
        at: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut c = path[i..].to_vec();
            c.push(at.to_string());
            out.push(c);
            return;
        }
        if done.contains(at) {
            return;
        }
        path.push(at.to_string());
        for next in g.get(at).into_iter().flat_map(|m| m.keys()) {
            walk(g, next, path, done, out);
        }
        path.pop();
        done.insert(at.to_string());
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for start in g.keys() {
        walk(g, start, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

#[test]
fn no_folder_of_src_imports_one_that_imports_it_back() {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    // The reader sees the arrows that hold the tree together.
    for (from, to) in [("run", "rig"), ("rig", "emu"), ("report", "analysis")] {
        assert!(
            g.get(from).is_some_and(|m| m.contains_key(to)),
            "{from} -> {to} not seen: {g:?}"
        );
    }
    let found = circles(&g);
    let say: Vec<String> = found
        .iter()
        .map(|c| {
            let steps: Vec<String> = c
                .windows(2)
                .map(|w| format!("{} -> {} ({:?})", w[0], w[1], g[&w[0]][&w[1]]))
                .collect();
            steps.join("; ")
        })
        .collect();
    assert!(found.is_empty(), "folders in a circle:\n{}", say.join("\n"));
}

#[test]
fn a_circle_of_folders_is_found_and_named() {
    // The control: the same reader over a tree with one folder leaning back.
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path();
    std::fs::create_dir_all(src.join("low")).unwrap();
    std::fs::create_dir_all(src.join("high")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod low;\npub mod high;\n").unwrap();
    std::fs::write(src.join("high/mod.rs"), "use crate::low::Thing;\n").unwrap();
    std::fs::write(
        src.join("low/mod.rs"),
        "// crate::high in a comment is no import\nuse crate::{units, high::Other};\n#[cfg(test)]\nmod tests { use crate::high::X; }\n",
    )
    .unwrap();
    let g = graph(src);
    assert_eq!(
        circles(&g),
        vec![vec![
            "high".to_string(),
            "low".to_string(),
            "high".to_string()
        ]]
    );
    assert_eq!(
        g["low"]["high"],
        BTreeSet::from(["low/mod.rs".to_string()]),
        "{g:?}"
    );
}

#[test]
fn the_reader_sees_code_after_test_items_and_not_in_comments_or_strings() {
    let modules: BTreeSet<String> = ["a", "b", "c", "d", "e", "z"]
        .into_iter()
        .map(String::from)
        .collect();
    let text = r##"
#[cfg(test)]
mod tests;
use crate::a::One;
#[cfg(test)]
#[allow(dead_code)]
mod more { use crate::z::T; fn f() { let c = '{'; } }
const URL: &str = "http://x.org"; use crate::b::Two;
/* crate::z::InComment */ const S: &str = "crate::z::InString";
const R: &str = r#"crate::z::Raw "}" "#;
fn g<'a>(x: &'a str) -> &'a str { crate::c::f(x) }
struct S2 {
    #[cfg(test)]
    probe: crate::z::Probe,
    kept: crate::d::Kept,
}
#[cfg(test)]
use crate::z::{A, B};
fn h() { crate::e::go() }
"##;
    let seen = named_modules(&without_test_items(text), &modules);
    let want: BTreeSet<String> = ["a", "b", "c", "d", "e"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(seen, want, "{}", without_test_items(text));
}

/// A person reads errors: none formats a value with Rust's `{:?}` (quotes and escapes
/// of a debug dump) instead of naming it. The control: the reader finds one.
#[test]
fn no_error_message_shows_a_debug_dump() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let debug = |call: &str| call.contains(":?}") || call.contains(":#?}");
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for call in error_calls(&text) {
            if debug(&call) {
                found.push(format!("{}: {}", f.display(), call.replace('\n', " ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "errors with {{:?}}:\n{}",
        found.join("\n")
    );
    let control = "fn f() -> anyhow::Result<()> {\n    anyhow::bail!(\n        \"bad {x:?}\"\n    )\n}\n#[cfg(test)]\nmod t { fn g() { bail!(\"{y:?}\") } }\n";
    let calls: Vec<String> = error_calls(control)
        .into_iter()
        .filter(|c| debug(c))
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].contains("x:?"));
}

/// The print macros a piece of code (test items, comments and literals already out)
/// calls.
fn prints(code: &str) -> usize {
    ["println!(", "eprintln!(", "print!(", "eprint!("]
        .iter()
        .map(|m| {
            code.match_indices(m)
                .filter(|(i, _)| {
                    // `eprintln!(` also holds `println!(`; count a macro at a word start.
                    code[..*i]
                        .chars()
                        .last()
                        .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
                })
                .count()
        })
        .sum()
}

#[test]
fn only_the_command_line_prints() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // The library says what it does as typed events (events.rs, which writes to
    // standard error only when no reporter is installed); cli/ prints them, and each
    // engine's `jbench workload <engine>` front-end prints its own results.
    let may_print = |rel: &str| {
        rel.starts_with("cli/")
            || rel == "main.rs"
            || rel == "events.rs"
            || (rel.starts_with("workload/") && rel.ends_with("/cli.rs"))
    };
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if may_print(&rel) {
            continue;
        }
        let n = prints(&without_test_items(&std::fs::read_to_string(f).unwrap()));
        if n > 0 {
            found.push(format!("{rel}: {n}"));
        }
    }
    assert!(
        found.is_empty(),
        "library code that prints instead of emitting an event:\n{}",
        found.join("\n")
    );
    let control = "fn f() { eprintln!(\"x\"); println!(\"{}\", 1); my_print!(\"no\"); }\n#[cfg(test)]\nmod t { fn g() { println!(\"y\") } }\n";
    assert_eq!(prints(&without_test_items(control)), 2);
}
