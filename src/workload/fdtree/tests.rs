//! Tests of the fdtree engine: the script's order and counts, real runs on tmpfs,
//! full disks, interruptions and the reports.

use super::*;
use crate::workload::testutil::{snapshot, stop_at, SmallFs};
use nix::errno::Errno;
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;

fn t(dirs: u32, files: u32, blocks: u32, levels: u32) -> Fdtree {
    Fdtree::new(dirs, files, blocks, levels)
}

#[test]
fn study_scenario_counts() {
    let cases = [
        (t(20, 40, 1, 3), 8_421, 336_840, 1_347_360),
        (t(3, 4, 1, 10), 88_573, 354_292, 1_417_168),
        (t(17, 10, 1000, 2), 307, 3_070, 12_280_000),
        (t(2, 2, 1000, 10), 2_047, 4_094, 16_376_000),
    ];
    for (tree, dirs, files, kib) in cases {
        assert_eq!(tree.dir_count(), dirs, "{tree}");
        assert_eq!(tree.file_count(), files, "{tree}");
        assert_eq!(tree.data_kib(), kib, "{tree}");
        assert_eq!(tree.data_bytes(), kib * 1024, "{tree}");
        assert_eq!(tree.peak_inodes(), dirs + files, "{tree}");
        assert_eq!(tree.peak_data_bytes(), kib * 1024, "{tree}");
        tree.validate().unwrap();
    }
    // The script's own sample header.
    assert_eq!(t(5, 3, 10, 4).dir_count(), 781);
    assert_eq!(t(5, 3, 10, 4).data_kib(), 93_720);
}

#[test]
fn degenerate_trees_count_like_the_script() {
    assert_eq!(t(0, 3, 1, 7).dir_count(), 1);
    assert_eq!(t(1, 3, 1, 7).dir_count(), 8);
    assert_eq!(t(4, 0, 9, 2).file_count(), 0);
    assert_eq!(t(4, 2, 0, 2).data_bytes(), 0);
    assert_eq!(t(9, 9, 9, 0).dir_count(), 1);
}

#[test]
fn absurd_trees_are_rejected() {
    let overflow = t(u32::MAX, 10, 10, 10);
    assert_eq!(overflow.dir_count_checked(), None);
    assert_eq!(overflow.dir_count(), u64::MAX);
    assert!(overflow
        .validate()
        .unwrap_err()
        .to_string()
        .contains("too large"));
    // Counts fit but bytes do not.
    let bytes = t(2, u32::MAX, u32::MAX, 40);
    assert!(bytes.dir_count_checked().is_some());
    assert!(bytes.validate().is_err());
    // Paths longer than PATH_MAX.
    let deep = t(1, 1, 1, 2000);
    assert_eq!(deep.dir_count(), 2001);
    assert!(deep
        .validate()
        .unwrap_err()
        .to_string()
        .contains("PATH_MAX"));
    // Huge `levels` must not loop for ages.
    assert_eq!(t(2, 1, 1, u32::MAX).dir_count_checked(), None);
    assert_eq!(t(0, 1, 1, u32::MAX).dir_count(), 1);
    assert!(t(1, 1, 1, u32::MAX).validate().is_err());
}

#[test]
fn deepest_path_length_is_exact() {
    let tree = t(12, 345, 1, 2);
    let root = "LEVEL0.h.1";
    let deepest = "LEVEL0.h.1/L2D12/L1D12/L0F345";
    assert_eq!(tree.deepest_relative_path_len(root), deepest.len());
    let longest = Phase::ALL
        .iter()
        .flat_map(|&p| plan_ops(&tree, p, root).unwrap())
        .map(|(_, path)| path.len())
        .max()
        .unwrap();
    assert_eq!(longest, deepest.len());
}

#[test]
fn names_and_order_of_a_small_tree() {
    use Op::*;
    let tree = t(2, 2, 1, 2);
    let plan = |phase| plan_ops(&tree, phase, "R").unwrap();
    let own = |v: &[(Op, &str)]| -> Vec<(Op, String)> {
        v.iter().map(|&(o, p)| (o, p.to_string())).collect()
    };
    assert_eq!(
        plan(Phase::DirCreate),
        own(&[
            (Mkdir, "R"),
            (Mkdir, "R/L2D2"),
            (Mkdir, "R/L2D1"),
            (Mkdir, "R/L2D2/L1D2"),
            (Mkdir, "R/L2D2/L1D1"),
            (Mkdir, "R/L2D1/L1D2"),
            (Mkdir, "R/L2D1/L1D1"),
        ])
    );
    let files = [
        "R/L2F2",
        "R/L2F1",
        "R/L2D2/L1F2",
        "R/L2D2/L1F1",
        "R/L2D2/L1D2/L0F2",
        "R/L2D2/L1D2/L0F1",
        "R/L2D2/L1D1/L0F2",
        "R/L2D2/L1D1/L0F1",
        "R/L2D1/L1F2",
        "R/L2D1/L1F1",
        "R/L2D1/L1D2/L0F2",
        "R/L2D1/L1D2/L0F1",
        "R/L2D1/L1D1/L0F2",
        "R/L2D1/L1D1/L0F1",
    ];
    let with = |op, names: &[&'static str]| -> Vec<(Op, &'static str)> {
        names.iter().map(|&n| (op, n)).collect()
    };
    assert_eq!(plan(Phase::FileCreate), own(&with(Create, &files)));
    assert_eq!(plan(Phase::FileRemove), own(&with(Unlink, &files)));
    assert_eq!(
        plan(Phase::DirRemove),
        own(&[
            (Rmdir, "R/L2D2/L1D2"),
            (Rmdir, "R/L2D2/L1D1"),
            (Rmdir, "R/L2D1/L1D2"),
            (Rmdir, "R/L2D1/L1D1"),
            (Rmdir, "R/L2D2"),
            (Rmdir, "R/L2D1"),
            (Rmdir, "R"),
        ])
    );
}

#[test]
fn deeper_removal_goes_grandchildren_first() {
    let removed: Vec<String> = plan_ops(&t(1, 0, 1, 3), Phase::DirRemove, "R")
        .unwrap()
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    assert_eq!(
        removed,
        ["R/L3D1/L2D1/L1D1", "R/L3D1/L2D1", "R/L3D1", "R"].map(String::from)
    );
}

#[test]
fn walk_visits_exactly_the_counted_operations() {
    for tree in [
        t(2, 2, 1, 2),
        t(3, 4, 1, 4),
        t(0, 5, 1, 3),
        t(1, 0, 1, 6),
        t(11, 1, 1, 1),
    ] {
        for phase in Phase::ALL {
            let ops = plan_ops(&tree, phase, "R").unwrap();
            let expected = tree.phase_result(phase, 1.0).ops;
            assert_eq!(ops.len() as u64, expected, "{tree} {}", phase.name());
            let distinct: BTreeSet<_> = ops.iter().map(|(_, p)| p).collect();
            assert_eq!(distinct.len(), ops.len(), "{tree}: a path visited twice");
        }
    }
}

#[test]
fn component_encoding() {
    let mut buf = [0xffu8; COMPONENT_MAX];
    let n = encode_component(&mut buf, 10, b'D', 4_294_967_295);
    assert_eq!(&buf[..=n], b"/L10D4294967295\0");
    let n = encode_component(&mut buf, 0, b'F', 7);
    assert_eq!(&buf[..=n], b"/L0F7\0");
}

#[test]
fn tree_path_pushes_pops_and_grows_past_path_max() {
    let mut path = TreePath::new(Path::new("R")).unwrap();
    let mark = path.push(3, b'D', 12);
    assert_eq!(path.as_bytes(), b"R/L3D12");
    path.pop(mark);
    assert_eq!(path.as_bytes(), b"R");
    // Only plan_ops on a tree validate() refuses goes this deep.
    let deep = t(1, 1, 1, 2000);
    let files = plan_ops(&deep, Phase::FileCreate, "R").unwrap();
    let deepest = &files.last().unwrap().1;
    assert!(deepest.len() > PATH_MAX);
    assert!(deepest.starts_with("R/L2000D1/L1999D1/"));
    assert!(deepest.ends_with("/L1D1/L0F1"));
}

/// Every path below `dir`, relative to it, directories marked with a trailing '/'.
fn list_tree(dir: &Path) -> BTreeSet<String> {
    fn visit(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.insert(rel + "/");
                visit(base, &path, out);
            } else {
                out.insert(rel);
            }
        }
    }
    let mut out = BTreeSet::new();
    visit(dir, dir, &mut out);
    out
}

fn planned_tree(tree: &Fdtree) -> BTreeSet<String> {
    let root = root_name();
    let dirs = plan_ops(tree, Phase::DirCreate, &root).unwrap();
    let files = plan_ops(tree, Phase::FileCreate, &root).unwrap();
    dirs.into_iter()
        .map(|(_, p)| p + "/")
        .chain(files.into_iter().map(|(_, p)| p))
        .collect()
}

#[test]
fn full_run_in_a_tempdir() {
    let dir = tempfile::tempdir().unwrap();
    let tree = t(2, 3, 2, 3);
    let results = tree.run(dir.path(), &RunControl::new()).unwrap();
    let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, tree.phase_names());
    let summary: Vec<(u64, u64, &str)> = results
        .iter()
        .map(|r| (r.ops, r.bytes, r.op_unit.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (15, 0, "dir creates"),
            (45, 45 * 2 * 4096, "file creates"),
            (45, 0, "file removals"),
            (15, 0, "dir removals"),
        ]
    );
    assert!(results.iter().all(|r| r.seconds > 0.0));
    assert!(list_tree(dir.path()).is_empty());
}

#[test]
fn create_phases_leave_the_planned_tree_with_full_files() {
    let dir = tempfile::tempdir().unwrap();
    let tree = t(2, 3, 2, 3);
    let ctl = RunControl::new();
    tree.run_phases(dir.path(), &[Phase::DirCreate, Phase::FileCreate], &ctl)
        .unwrap();
    assert_eq!(list_tree(dir.path()), planned_tree(&tree));
    for (_, rel) in plan_ops(&tree, Phase::FileCreate, &root_name()).unwrap() {
        let path = dir.path().join(&rel);
        assert_eq!(std::fs::metadata(&path).unwrap().size(), 2 * 4096, "{rel}");
        assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0));
    }
    tree.run_phases(dir.path(), &[Phase::FileRemove, Phase::DirRemove], &ctl)
        .unwrap();
    assert!(list_tree(dir.path()).is_empty());
}

#[test]
fn stop_request_interrupts_and_leaves_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let tree = t(2, 2, 1, 2);
    let ctl = RunControl::new();
    ctl.request_stop();
    let err = tree.run(dir.path(), &ctl).unwrap_err();
    assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
    assert!(
        list_tree(dir.path()).is_empty(),
        "nothing made after the stop"
    );

    let ctl = RunControl::new();
    tree.run_phases(dir.path(), &[Phase::DirCreate, Phase::FileCreate], &ctl)
        .unwrap();
    ctl.request_stop();
    let err = tree
        .run_phases(dir.path(), &[Phase::FileRemove, Phase::DirRemove], &ctl)
        .unwrap_err();
    assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
    assert_eq!(
        list_tree(dir.path()),
        planned_tree(&tree),
        "partial tree kept"
    );
}

#[test]
fn full_disk_removes_the_partial_tree() {
    let Some(fs) = SmallFs::new("fdtree full_disk_removes_the_partial_tree", "1m") else {
        return;
    };
    std::fs::write(fs.path().join("keep"), b"mine").unwrap();
    let before = snapshot(fs.path());
    // 45 files of 64 KiB: 2.8 MiB on a 1 MiB file system.
    let err = t(2, 3, 16, 3)
        .run(fs.path(), &RunControl::new())
        .unwrap_err();
    let os = err.downcast_ref::<FsOpError>().expect("an FsOpError");
    assert_eq!(os.errno, Errno::ENOSPC, "{err:#}");
    assert!(format!("{err:#}").contains("was removed"), "{err:#}");
    assert_eq!(snapshot(fs.path()), before);
}

#[test]
fn interrupt_removes_the_partial_tree() {
    for phase in ["file_create", "file_remove", "dir_remove"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("LEVEL0.other.1")).unwrap();
        let before = snapshot(dir.path());
        let err = t(2, 2, 1, 2).run(dir.path(), &stop_at(phase)).unwrap_err();
        assert!(
            err.downcast_ref::<Interrupted>().is_some(),
            "{phase}: {err:#}"
        );
        assert!(format!("{err:#}").contains("was removed"), "{err:#}");
        assert_eq!(snapshot(dir.path()), before, "{phase}");
    }
}

#[test]
fn an_existing_root_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(root_name());
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("L1F1"), b"not the run's").unwrap();
    let before = snapshot(dir.path());
    let err = t(1, 1, 1, 1)
        .run(dir.path(), &RunControl::new())
        .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err:#}");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn command_line_refuses_overflow_with_the_allowed_levels() {
    let dir = tempfile::tempdir().unwrap();
    let err = t(10, 10, 10, 30).preflight_cli(dir.path()).unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("too large to count"), "{text}");
    // 10^16 directories would pass 2^64 bytes with 10 files of 40 KiB each.
    let max = t(10, 10, 10, 0).max_levels().unwrap();
    assert!(text.contains(&format!("-l must be 0 to {max}")), "{text}");
    t(10, 10, 10, max).validate().unwrap();
    assert!(t(10, 10, 10, max + 1).validate().is_err());
    // Deep but narrow: PATH_MAX bounds -l.
    let text = format!(
        "{:#}",
        t(1, 1, 1, 5000).preflight_cli(dir.path()).unwrap_err()
    );
    assert!(
        text.contains("PATH_MAX") && text.contains("-l must be 0 to "),
        "{text}"
    );
    // Files alone too large: no -l helps.
    let text = format!(
        "{:#}",
        t(0, u32::MAX, u32::MAX, 0)
            .preflight_cli(dir.path())
            .unwrap_err()
    );
    assert!(text.contains("lower -f or -s"), "{text}");
    let missing = dir.path().join("missing");
    let text = format!("{:#}", t(1, 1, 1, 1).preflight_cli(&missing).unwrap_err());
    assert!(
        text.contains("is not a directory; create it first"),
        "{text}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    t(2, 2, 1, 2).preflight_cli(dir.path()).unwrap();
}

#[test]
fn size_note_gives_counts_and_warns_when_large() {
    let dir = tempfile::tempdir().unwrap();
    let small = t(5, 3, 10, 4).size_note(dir.path());
    assert!(
        small.starts_with("fdtree -d 5 -f 3 -s 10 -l 4: 781 directories"),
        "{small}"
    );
    assert!(small.contains("2343 files"), "{small}");
    let big = t(10, 10, 10, 8).size_note(dir.path());
    assert!(big.starts_with("warning: "), "{big}");
    assert!(big.contains("111111111 directories"), "{big}");
}

#[test]
fn errors_name_the_call_path_and_errno() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = t(1, 1, 1, 1).run(&missing, &RunControl::new()).unwrap_err();
    let fs = err.downcast_ref::<FsOpError>().expect("an FsOpError");
    assert_eq!(fs.errno, Errno::ENOENT);
    let expected = format!(
        "mkdir {}/{}: No such file or directory",
        missing.display(),
        root_name()
    );
    assert_eq!(fs.to_string(), expected);
    assert!(format!("{err:#}").contains(&expected));
    assert!(format!("{err:#}").contains("dir_create"));
}

#[test]
fn workload_metadata() {
    let tree = t(3, 4, 5, 6);
    assert_eq!(tree.kind(), "fdtree");
    assert_eq!(
        tree.params(),
        serde_json::json!({"dirs": 3, "files": 4, "blocks": 5, "levels": 6})
    );
    let back: Fdtree = serde_json::from_value(tree.params()).unwrap();
    assert_eq!(back, tree);
    assert_eq!(
        tree.phase_names(),
        ["dir_create", "file_create", "file_remove", "dir_remove"]
    );
}

#[test]
fn root_name_has_short_host_and_pid() {
    let name = root_name();
    let rest = name.strip_prefix("LEVEL0.").unwrap();
    let (host, pid) = rest.rsplit_once('.').unwrap();
    assert!(!host.contains('.'));
    assert_eq!(pid, std::process::id().to_string());
}

fn synthetic(seconds: [f64; 4], tree: &Fdtree) -> Vec<PhaseResult> {
    Phase::ALL
        .iter()
        .zip(seconds)
        .map(|(&p, s)| tree.phase_result(p, s))
        .collect()
}

#[test]
fn compat_block_matches_the_original_layout() {
    let tree = t(5, 3, 10, 4);
    let phases = synthetic([29.5, 134.0, 27.0, 18.0], &tree);
    let expected = "fdtree-1.0.2: starting at ./LEVEL0.host.1234/\n\
            \tcreating/deleting 4 directory levels with 5 directories at each level\n\
            \tfor a total of 781 directories\n\
            \twith 3 files of size 40KiB per directory\n\
            \tfor a total of 2343 files and 93720KiB\n\
            DIRECTORY CREATE TIME IN, OUT, TOTAL = 0, 29, 29\n\
            \tDirectory creates per second =  26\n\
            FILE CREATE TIME IN, OUT, TOTAL      = 29, 163, 134\n\
            \tFile creates per second      =  17\n\
            \tKiB per second               =  699\n\
            FILE REMOVE TIME IN, OUT, TOTAL      = 163, 190, 27\n\
            \tFile removals per second     =  86\n\
            DIRECTORY REMOVE TIME IN, OUT, TOTAL = 190, 208, 18\n\
            \tDirectory removals per second =  43\n";
    assert_eq!(
        render_compat(&tree, "./LEVEL0.host.1234/", &phases),
        expected
    );
    let real = compat_report(&tree, Path::new("."), &phases);
    assert!(real.starts_with(&format!("fdtree-1.0.2: starting at ./{}/\n", root_name())));
}

#[test]
fn compat_times_are_bash_seconds_and_zero_total_gives_zero_rate() {
    let tree = t(5, 3, 10, 4);
    let phases = synthetic([0.4, 0.4, 0.4, 0.4], &tree);
    let report = render_compat(&tree, "x/", &phases);
    // Cumulative 0.4, 0.8, 1.2, 1.6: only the third phase crosses a second.
    assert!(report.contains("DIRECTORY CREATE TIME IN, OUT, TOTAL = 0, 0, 0\n"));
    assert!(report.contains("\tDirectory creates per second =  0\n"));
    assert!(report.contains("FILE CREATE TIME IN, OUT, TOTAL      = 0, 0, 0\n"));
    assert!(report.contains("\tKiB per second               =  0\n"));
    assert!(report.contains("FILE REMOVE TIME IN, OUT, TOTAL      = 0, 1, 1\n"));
    assert!(report.contains("\tFile removals per second     =  2343\n"));
    assert!(report.contains("DIRECTORY REMOVE TIME IN, OUT, TOTAL = 1, 1, 0\n"));
    assert!(report.contains("\tDirectory removals per second =  0\n"));
}

#[test]
fn precise_report_rates_in_fdtree_units() {
    let tree = t(5, 3, 10, 4);
    let phases = synthetic([2.0, 3.0, 1.0, 0.5], &tree);
    let report = precise_report(&tree, &phases);
    let line = |name: &str| {
        report
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap()
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        line("dir_create"),
        ["dir_create", "2.000", "781", "390.5", "dirs/s"]
    );
    assert_eq!(
        line("file_create"),
        [
            "file_create",
            "3.000",
            "2343",
            "781.0",
            "files/s",
            "31240.0"
        ]
    );
    assert_eq!(line("file_remove")[3..], ["2343.0", "removals/s"]);
    assert_eq!(line("dir_remove")[3..], ["1562.0", "removals/s"]);
}
