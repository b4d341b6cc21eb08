//! What jbench says about itself, for an installed binary without the repository at
//! hand: shell completions, man pages, and the experiments built into it.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::cli::args::{Cli, PresetCmd};
use crate::experiment::presets;

/// `jbench completions SHELL`: the script on standard output.
pub fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "jbench", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}

/// `jbench man DIR`: a page per command, from the definitions `--help` prints.
pub fn man(dir: &Path) -> Result<ExitCode> {
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot make {}; name a directory jbench may write in",
            dir.display()
        )
    })?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
    let mut pages: Vec<String> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("jbench") && n.ends_with(".1"))
        .collect();
    pages.sort();
    eprintln!(
        "jbench: {} man pages written to {} (read one with `man {}/jbench.1`)",
        pages.len(),
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `jbench preset list|show NAME`.
pub fn preset(cmd: PresetCmd) -> Result<ExitCode> {
    match cmd {
        PresetCmd::List => {
            let width = presets::names().iter().map(|n| n.len()).max().unwrap_or(0);
            for (name, text) in presets::PRESETS {
                outln!("{name:<width$}  {}", summary(text));
                let time = presets::measured_run_time(text).map_or_else(
                    || format!("not measured; `jbench plan --preset {name}` estimates it"),
                    |t| format!("ran {t}"),
                );
                outln!("{:<width$}  ({time})", "");
            }
        }
        PresetCmd::Show { name } => {
            let text = presets::lookup(&name).map_err(|e| anyhow::anyhow!(e))?;
            out!("{text}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The first sentence of a preset's opening comment, on one line.
fn summary(text: &str) -> String {
    let mut s = String::new();
    for line in text.lines() {
        let Some(c) = line.strip_prefix('#') else {
            break;
        };
        let c = c.trim();
        if c.is_empty() {
            if s.is_empty() {
                continue;
            }
            break;
        }
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(c);
        let stop = [". ", "? ", "! "].iter().filter_map(|p| s.find(p)).min();
        if let Some(end) = stop.or_else(|| s.ends_with(['.', '?']).then(|| s.len() - 1)) {
            s.truncate(end + 1);
            break;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_the_opening_comments_first_sentence() {
        assert_eq!(
            summary("# Where should the journal\n# live? More here. And more.\nname = \"x\"\n"),
            "Where should the journal live?"
        );
        assert_eq!(
            summary("# One line, no stop\n\nname = 1\n"),
            "One line, no stop"
        );
        assert_eq!(summary("name = 1\n"), "");
        for (name, text) in presets::PRESETS {
            assert!(!summary(text).is_empty(), "{name} has no opening comment");
        }
    }
}
