//! The shape of the source tree: each folder of `src/` imports only folders below it
//! (the README's "Development" section lists them from the ground up), so no two
//! folders lean on each other. Read from the code's own `crate::` paths; test code
//! (`#[cfg(test)]` and below, `tests/` folders, `tests*.rs`) may reach anywhere.

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

/// The top-level modules a piece of code names as `crate::NAME` or inside
/// `crate::{...}`, outside comments.
fn named_modules(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or_default();
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
        let code = text.split("#[cfg(test)]").next().unwrap();
        for m in named_modules(code, &modules) {
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
