//! Experiments built into the binary, so `jbench run` works from anywhere with no file.

/// (name, experiment file text). The first is the default of `jbench run`.
pub const PRESETS: [(&str, &str); 3] = [
    ("quick", include_str!("../presets/quick.toml")),
    (
        "study1-journal-device",
        include_str!("../presets/study1-journal-device.toml"),
    ),
    (
        "study2-journal-size",
        include_str!("../presets/study2-journal-size.toml"),
    ),
];

pub fn find(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_a_valid_experiment() {
        for (name, text) in PRESETS {
            let spec = crate::spec::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spec.name, name, "a preset's name matches its file");
        }
    }

    #[test]
    fn study1_has_the_published_parameters() {
        let s = crate::spec::parse(find("study1-journal-device").unwrap(), "s1").unwrap();
        assert_eq!(s.repetitions, 10);
        let labels: Vec<&str> = s.configs.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["same-disk", "second-disk", "ramdisk"]);
        assert!(s.configs.iter().all(|c| c.journal_size == 16 << 20));
        assert!(s
            .configs
            .iter()
            .all(|c| c.mode == crate::config::DataMode::Ordered));
        let trees: Vec<(u64, u64)> = s
            .workloads
            .iter()
            .map(|w| (w.engine.peak_inodes(), w.engine.peak_data_bytes() / 1024))
            .collect();
        assert_eq!(
            trees,
            [
                (8_421 + 336_840, 1_347_360),
                (88_573 + 354_292, 1_417_168),
                (307 + 3_070, 12_280_000),
                (2_047 + 4_094, 16_376_000)
            ]
        );
        assert_eq!(s.suspect_below.as_secs(), 60);
    }
}
