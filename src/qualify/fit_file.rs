//! `--fit-to FILE`: the fitted `[models.NAME]` entry written into an experiment file,
//! replacing an entry of that name and keeping everything else (comments included),
//! so that a study of one's own hardware is "copy the preset, qualify into it, run".

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use toml_edit::{DocumentMut, Item, Table};

use super::Fit;

/// What writing the entry did to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Created,
    Added,
    Replaced,
}

/// Writes `fit` as `[models.<fit.name>]` into `path` (created when missing), headed by
/// comments saying where it was measured (`source`) and where each figure came from.
pub fn write_fit(path: &Path, fit: &Fit, source: &str) -> Result<Written> {
    let (mut doc, existed) = match std::fs::read_to_string(path) {
        Ok(text) => (
            text.parse::<DocumentMut>().with_context(|| {
                format!(
                    "{} is not valid TOML, so the fitted [models.{}] entry cannot be written into it; fix the file or name another with --fit-to",
                    path.display(),
                    fit.name
                )
            })?,
            true,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (DocumentMut::new(), false),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let models = doc
        .entry("models")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .with_context(|| {
            format!(
                "{}: `models` is not a table; the fitted entry goes in [models.{}]",
                path.display(),
                fit.name
            )
        })?;
    let replaced = models.contains_key(&fit.name);
    let mut entry = Table::new();
    entry.insert("model", toml_edit::value(fit.model.clone()));
    for (k, v) in &fit.params {
        let v = match v {
            toml::Value::Float(f) => toml_edit::value(*f),
            toml::Value::Integer(i) => toml_edit::value(*i),
            toml::Value::Boolean(b) => toml_edit::value(*b),
            other => toml_edit::value(other.to_string()),
        };
        entry.insert(k, v);
    }
    let mut head =
        format!("\n# fitted by jbench device qualify --fit from {source}; each figure from:\n");
    for (k, why) in &fit.basis {
        head.push_str(&format!("#   {k}: {why}\n"));
    }
    entry.decor_mut().set_prefix(head);
    models.insert(&fit.name, Item::Table(entry));

    // Written beside the file and renamed over it: a failure leaves the old one whole.
    let name = path
        .file_name()
        .with_context(|| format!("{}: name a file", path.display()))?;
    let tmp = path.with_file_name(format!(
        ".{}.jbench-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(doc.to_string().as_bytes())?;
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(match (existed, replaced) {
        (false, _) => Written::Created,
        (true, false) => Written::Added,
        (true, true) => Written::Replaced,
    })
}

/// Refuses a `--fit` name that `[models]` cannot hold or that shadows a built-in.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        bail!("--fit `{name}`: give a name of letters, digits, '-' and '_' (it becomes [models.NAME])");
    }
    if crate::emu::MODEL_NAMES.contains(&name) {
        bail!("--fit {name}: that is a built-in model's name; give the fitted model a name of its own");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(name: &str, lat: f64) -> Fit {
        let mut params = toml::Table::new();
        params.insert("read_latency_us".into(), lat.into());
        params.insert("capacity_bytes".into(), 1024i64.into());
        Fit {
            name: name.into(),
            model: "ssd-sata".into(),
            params,
            basis: vec![("read_latency_us".into(), "random reads".into())],
        }
    }

    #[test]
    fn an_entry_is_created_added_and_replaced_keeping_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("study.toml");
        assert_eq!(
            write_fit(&path, &fit("disk", 100.0), "/data").unwrap(),
            Written::Created
        );
        let original =
            "# my study\nname = \"mine\" # the name\n\n[models.log]\nmodel = \"nvram\"\n";
        std::fs::write(&path, original).unwrap();
        assert_eq!(
            write_fit(&path, &fit("disk", 100.0), "/data").unwrap(),
            Written::Added
        );
        assert_eq!(
            write_fit(&path, &fit("disk", 250.0), "/data").unwrap(),
            Written::Replaced
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# my study\nname = \"mine\" # the name\n"),
            "{text}"
        );
        assert!(text.contains("[models.log]\nmodel = \"nvram\""), "{text}");
        assert!(
            text.contains("# fitted by jbench device qualify --fit from /data"),
            "{text}"
        );
        let v: toml::Table = text.parse().unwrap();
        let disk = &v["models"]["disk"];
        assert_eq!(disk["read_latency_us"].as_float(), Some(250.0));
        assert_eq!(disk["capacity_bytes"].as_integer(), Some(1024));
        assert_eq!(disk["model"].as_str(), Some("ssd-sata"));
        assert_eq!(text.matches("[models.disk]").count(), 1, "{text}");
    }

    #[test]
    fn a_file_that_is_not_toml_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.toml");
        std::fs::write(&path, "name = \n").unwrap();
        let e = write_fit(&path, &fit("disk", 1.0), "/data").unwrap_err();
        assert!(format!("{e:#}").contains("not valid TOML"), "{e:#}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "name = \n");
        std::fs::write(&path, "models = 3\n").unwrap();
        let e = write_fit(&path, &fit("disk", 1.0), "/data").unwrap_err();
        assert!(format!("{e:#}").contains("not a table"), "{e:#}");
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("my-disk_2").is_ok());
        assert!(check_name("a b").is_err());
        assert!(check_name("").is_err());
        assert!(check_name("nvme")
            .unwrap_err()
            .to_string()
            .contains("built-in"));
    }
}
