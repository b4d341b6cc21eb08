//! The exporters: CSV, Markdown, plain table, JSON, and the headers of every table.

use super::*;

#[test]
fn csv_header_and_rows() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "second-disk,256M", "small", &FAST);
    let csv = render(&recs, &opts(), Format::Csv);
    let rows = csv_rows(&csv);
    assert_eq!(rows[0], CSV_HEADER);
    assert_eq!(rows.len(), 1 + 2 * 4);
    assert!(rows.iter().all(|r| r.len() == CSV_HEADER.len()));
    assert!(csv.contains("\"second-disk,256M\""), "label quoted");

    let base = &rows[1];
    assert_eq!(&base[..5], ["small", "same-disk", "dir_create", "3", "0"]);
    assert_eq!(base[7], "dir creates/s");
    assert!((base[8].parse::<f64>().unwrap() - 1000.0).abs() < 1e-9);
    assert!((base[9].parse::<f64>().unwrap() - 10.0).abs() < 1e-9);
    assert_eq!(base[10], "", "no KiB/s for dir_create");
    assert_eq!(base[12], "false");
    assert_eq!(base[13], "", "baseline has no difference to itself");
    assert_eq!(base[17], "baseline");
    let create = &rows[2];
    assert_eq!(create[2], "file_create");
    assert!((create[10].parse::<f64>().unwrap() - 4000.0).abs() < 1e-9);

    let other = &rows[5];
    assert_eq!(&other[1..3], ["second-disk,256M", "dir_create"]);
    let secs: f64 = other[5].parse().unwrap();
    assert!((secs - (500.0 + 600000.0 / 1190.0 + 600000.0 / 1210.0) / 3.0).abs() < 1e-9);
    assert_eq!(other[12], "false");
    assert!((other[13].parse::<f64>().unwrap() - 20.0).abs() < 1e-9);
    // A secondary family of 3: its smallest p is decided at 1 - 0.05 / 3.
    let level = 1.0 - 0.05 / 3.0;
    let ci = ratio::fieller(&FAST, &BASE, level).unwrap();
    assert!((other[14].parse::<f64>().unwrap() - (ci.low - 1.0) * 100.0).abs() < 1e-9);
    let hi = (ci.high.unwrap() - 1.0) * 100.0;
    assert!((other[15].parse::<f64>().unwrap() - hi).abs() < 1e-9);
    let at = |name: &str| CSV_HEADER.iter().position(|h| *h == name).unwrap();
    assert!((other[at("vs_baseline_ci_level")].parse::<f64>().unwrap() - level).abs() < 1e-12);
    assert_eq!(other[at("vs_baseline_ci_unbounded")], "false");
    assert_eq!(other[at("family")], "secondary");
    assert_eq!(other[at("family_size")], "3");
    assert!((other[16].parse::<f64>().unwrap() - 1.6483088987181242e-05).abs() < 1e-9);
    assert_eq!(other[17], "20.0% faster [+16.5%, +23.6%] at 98.3%");
    assert_eq!(other[at("decision")], "different");
}

#[test]
fn csv_quotes_fields() {
    assert_eq!(csv_field("plain"), "plain");
    assert_eq!(csv_field("a,b"), "\"a,b\"");
    assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
}

#[test]
fn markdown_has_the_tables() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk|64M", "small", &FAST);
    let md = render(&recs, &opts(), Format::Markdown);
    assert!(md.starts_with("# jbench report\n"), "{md}");
    assert!(md.contains("## Workload `small` (fdtree)"), "{md}");
    for heading in [
        "### Times (s), mean ± sd",
        "### Rates, mean ± sd",
        "### Compared with same-disk: change of the mean rate [interval at the level it was decided at; 95% where no level is given], Welch p",
    ] {
        assert!(md.contains(heading), "missing {heading}:\n{md}");
    }
    assert!(md.contains(
            "| configuration | n | dir_create | file_create | file_remove | dir_remove |\n| --- | ---: | ---: | ---: | ---: | ---: |"
        ), "{md}");
    assert!(md.contains(
            "| configuration | n | dir creates/s | file creates/s | file_create KiB/s | file removals/s | dir removals/s |"
        ), "{md}");
    assert!(
        md.contains("| same-disk | 3 | 600.0 ± 6.0 | 600.0 ± 0.0 |"),
        "{md}"
    );
    // The pipe in the label is escaped.
    assert!(md.contains("| ramdisk\\|64M | 3 | 500.0 ± 4.2 |"), "{md}");
    assert!(
        md.contains("| ramdisk\\|64M | 3 | 1200 ± 10 | 1000 ± 0 | 4000 ± 0 |"),
        "{md}"
    );
    assert!(
        md.contains("| ramdisk\\|64M | +20.0% [+16.5%, +23.6%] at 98.3% different p<0.001 |"),
        "{md}"
    );
    assert!(md.contains(
            "Verdicts (rate vs `same-disk`, different when the whole interval lies outside ±2%, equivalent when it lies wholly inside, else undecided; each interval at the level its adjusted p is tested at (alpha 0.05); Holm within each family: primary = file_create (every pair of configurations: 1 test); secondary = dir_create, file_remove, dir_remove (against the baseline: 3 tests)):\n\n- `ramdisk|64M`: dir_create 20.0% faster [+16.5%, +23.6%] at 98.3% (p<0.001); equivalent within ±2% in file_create, file_remove, dir_remove\n"
        ), "{md}");
    assert!(
        !md.contains("### Warnings"),
        "no warnings for clean data:\n{md}"
    );
}

#[test]
fn plain_table_columns_line_up_with_long_labels() {
    let mut recs = Vec::new();
    let labels = [
        "same-disk,16M",
        "second-disk,256M",
        "ramdisk,1G",
        "zram,64M",
    ];
    for (k, label) in labels.iter().enumerate() {
        let rates: Vec<f64> = BASE.iter().map(|r| r * (1.0 + k as f64 / 10.0)).collect();
        series(&mut recs, 3 * k, label, "small", &rates);
    }
    let text = render(&recs, &opts(), Format::Table);
    for title in ["Times (s)", "Rates", "Compared with"] {
        let block: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with(title))
            .skip(1)
            .take_while(|l| !l.is_empty() && !l.starts_with('*'))
            .collect();
        let rows = if title == "Compared with" { 3 } else { 4 };
        assert_eq!(block.len(), 2 + rows, "{title}:\n{text}");
        let w = block[0].chars().count();
        assert!(
            block.iter().all(|l| l.chars().count() == w),
            "{title} not aligned:\n{}",
            block.join("\n")
        );
        // The label column is as wide as the longest label, then two spaces.
        let label_w = "second-disk,256M".len();
        for l in &block {
            let chars: Vec<char> = l.chars().collect();
            assert_eq!(chars[label_w..label_w + 2], [' ', ' '], "{title}: `{l}`");
        }
        assert!(block[1].starts_with(&"-".repeat(label_w)));
        if title == "Times (s)" {
            // Means and spreads line up on the "±".
            let at: Vec<Option<usize>> = block[2..]
                .iter()
                .map(|l| l.chars().position(|c| c == '±'))
                .collect();
            assert!(at.iter().all(|p| p.is_some() && *p == at[0]), "{at:?}");
        }
    }
    assert!(text.contains("second-disk,256M"));
}

#[test]
fn json_round_trips() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &FAST);
    let json = render(&recs, &opts(), Format::Json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["baseline"], "same-disk");
    assert_eq!(v["confidence"], 0.95);
    assert_eq!(v["suspect_below_secs"], 60.0);
    let w = &v["workloads"][0];
    assert_eq!(w["name"], "small");
    assert_eq!(w["kind"], "fdtree");
    assert_eq!(w["phases"][1]["rate_unit"], "file creates/s");
    assert_eq!(w["phases"][1]["has_bytes"], true);
    assert_eq!(w["configs"][0]["label"], "same-disk");
    assert_eq!(w["configs"][0]["config"]["placement"], "same-disk");
    assert_eq!(w["configs"][0]["phases"][0]["n"], 3);
    assert_eq!(w["configs"][0]["phases"][0]["rate"]["mean"], 1000.0);
    assert_eq!(
        w["configs"][0]["phases"][0]["kib_per_sec"],
        serde_json::Value::Null
    );
    assert_eq!(w["comparisons"][0]["config"], "ramdisk");
    assert_eq!(
        w["comparisons"][0]["phases"][0]["verdict"],
        "20.0% faster [+16.5%, +23.6%] at 98.3%"
    );
    // And back into the model. (serde_json's default float parser may differ from
    // the printed value in the last bit, so compare texts and a float with a
    // tolerance rather than the whole struct.)
    let back: Analysis = serde_json::from_str(&json).unwrap();
    let orig = analyse(&recs, &opts());
    assert_eq!(back.workloads[0].comparisons, orig.workloads[0].comparisons);
    assert_eq!(back.workloads[0].configs[1].label, "ramdisk");
    let mean = |a: &Analysis| a.workloads[0].configs[1].phases[0].rate.unwrap().mean;
    assert!((mean(&back) - mean(&orig)).abs() < 1e-9);
}

#[test]
fn formatting_helpers() {
    assert_eq!(p_expr(0.4123, true), "p = 0.41");
    assert_eq!(p_expr(0.0021, false), "p=0.002");
    assert_eq!(p_expr(1e-9, false), "p<0.001");
    assert_eq!(fmt_level(0.95), "95");
    assert_eq!(fmt_level(0.995), "99.5");
    assert_eq!(fmt_num(12345.6), "12346");
    assert_eq!(fmt_num(61.234), "61.23");
    assert_eq!(fmt_num(0.1234), "0.123");
    assert_eq!(verdict_text(0.04), "0.04% faster");
    assert_eq!(fmt_cv(0.2549), "25%");
    assert_eq!(fmt_cv(0.104), "10.4%");
    assert_eq!(fmt_cv(0.1051), "11%");
    assert_eq!(fmt_alpha(1.0 - 0.95), "0.05");
    assert_eq!(fmt_alpha(1.0 - 0.995), "0.005");
}

/// The JSON export is the model, field for field and in the model's order, plus the
/// verdict in words before each outcome and the summary's lines (`text`, last in the
/// summary): a field added to the model but not to the JSON view fails here.
#[test]
fn json_export_is_the_model_plus_verdicts() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &FAST);
    series(&mut recs, 6, "zram", "small", &[900.0]);
    let a = analyse(&recs, &opts());
    let json = render_json(&a);
    let lines: Vec<&str> = json.lines().collect();
    let mut verdicts = Vec::new();
    let mut rest: Vec<&str> = Vec::new();
    let mut in_text = false;
    let mut texts = 0;
    for (i, line) in lines.iter().enumerate() {
        if in_text {
            in_text = line.trim() != "]";
            continue;
        }
        if line.trim_start().starts_with("\"text\": [") {
            // The field before it loses the comma the text made it need.
            let before = rest.pop().unwrap();
            rest.push(before.trim_end_matches(','));
            (in_text, texts) = (true, texts + 1);
            continue;
        }
        match line.trim_start().strip_prefix("\"verdict\": ") {
            Some(v) => {
                assert!(
                    lines[i + 1].trim_start().starts_with("\"outcome\": "),
                    "{json}"
                );
                verdicts.push(v.trim_end_matches(','));
            }
            None => rest.push(*line),
        }
    }
    let model = serde_json::to_string_pretty(&a).unwrap();
    assert_eq!(rest.join("\n"), model);
    assert_eq!(texts, a.workloads.len());
    assert_eq!(verdicts.len(), 2 * PHASES.len());
    assert!(
        verdicts.contains(&"\"20.0% faster [+16.5%, +23.6%] at 98.3%\""),
        "{verdicts:?}"
    );
    assert!(verdicts.contains(&"\"too few trials\""), "{verdicts:?}");
}

/// A `durable` workload doubles every phase with a `+syncfs` companion: each table
/// column must still say which phase it holds, in every format.
#[test]
fn every_column_of_a_durable_workload_names_its_phase() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &FAST);
    for r in &mut recs {
        r.workload.durable = true;
        for p in &mut r.phases {
            p.durable_seconds = Some(p.seconds * 1.5);
        }
    }
    let a = analyse(&recs, &opts());
    let w = &a.workloads[0];
    // (phase, operation, moves bytes) as the records name them, then the durable
    // companions the analysis derives from them.
    let plain: Vec<(String, String, bool)> = recs[0]
        .phases
        .iter()
        .map(|p| (p.name.clone(), p.op_unit.clone(), p.bytes > 0))
        .collect();
    let durable = plain
        .iter()
        .map(|(n, u, b)| (format!("{n}{DURABLE_SUFFIX}"), u.clone(), *b));
    let all: Vec<(String, String, bool)> = plain.iter().cloned().chain(durable).collect();
    let tables = text::workload_tables(w, &a);
    assert_eq!(tables.len(), 3, "times, rates, comparison");
    for t in &tables {
        let distinct: std::collections::BTreeSet<&String> = t.headers.iter().collect();
        assert_eq!(
            distinct.len(),
            t.headers.len(),
            "{}: {:?}",
            t.title,
            t.headers
        );
    }
    let (times, rates, compared) = (&tables[0].headers, &tables[1].headers, &tables[2].headers);
    for (name, unit, bytes) in &all {
        assert!(times.contains(name), "times lack {name}: {times:?}");
        assert!(
            compared.contains(name),
            "comparison lacks {name}: {compared:?}"
        );
        // The rate column speaks the phase's operation and says whether it is timed
        // up to syncfs; exactly one column fits each phase.
        let is_durable = name.ends_with(DURABLE_SUFFIX);
        let fits: Vec<&String> = rates
            .iter()
            .filter(|h| h.starts_with(&format!("{unit}/s")))
            .filter(|h| h.contains(DURABLE_SUFFIX) == is_durable)
            .collect();
        assert_eq!(fits.len(), 1, "{name}: {fits:?} in {rates:?}");
        let kib = format!("{name} KiB/s");
        assert_eq!(rates.contains(&kib), *bytes, "{kib} in {rates:?}");
    }
    let payload = all.iter().filter(|p| p.2).count();
    assert_eq!(rates.len(), 2 + all.len() + payload, "{rates:?}");
    // Text and Markdown print the very headers the HTML page gets.
    let md = render(&recs, &opts(), Format::Markdown);
    let text = render(&recs, &opts(), Format::Table);
    for t in &tables {
        assert!(
            md.contains(&format!("| {} |", t.headers.join(" | "))),
            "{md}"
        );
        let line = text
            .lines()
            .skip_while(|l| !l.starts_with(t.title.as_str()))
            .nth(1)
            .unwrap_or_else(|| panic!("no {} in\n{text}", t.title));
        let words: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let want: Vec<&str> = t.headers.iter().map(String::as_str).collect();
        assert_eq!(words, want, "{text}");
    }
}
