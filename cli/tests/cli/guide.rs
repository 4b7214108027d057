//! docs/guide.md, run as written (embedded at build time, so the test needs no source
//! tree).

use crate::common;
use common::cli::ferrocuda;

/// docs/guide.md as a new user follows it: every `sh` block, in order, in one scratch
/// folder, with the binary under test as `ferrocuda` on `PATH`, exits 0; and the first
/// solve's `x.mtx` does solve the guide's system.
#[test]
fn the_guides_shell_blocks_run_as_written() {
    const GUIDE: &str = include_str!("../../../docs/guide.md");
    let mut blocks: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in GUIDE.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(
        current.is_none(),
        "docs/guide.md: an sh block is not closed"
    );
    assert!(
        blocks.len() >= 2,
        "docs/guide.md has {} sh blocks",
        blocks.len()
    );

    let dir = common::cli::scratch("guide");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(ferrocuda().get_program(), bin.join("ferrocuda")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (i, block) in blocks.iter().enumerate() {
        let out = std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", block])
            .current_dir(&dir)
            .env("PATH", &path)
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "docs/guide.md sh block {i} failed ({}):\n{block}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The guide's system: 4 on the diagonal, -1 above, -1.5 below; b = (1, 2, 3, 4).
    let text = std::fs::read_to_string(dir.join("x.mtx")).expect("the guide's solve wrote x.mtx");
    let x: Vec<f64> = text
        .lines()
        .filter(|l| !l.starts_with('%'))
        .skip(1)
        .map(|l| l.trim().parse().expect("a number"))
        .collect();
    assert_eq!(x.len(), 4, "{text}");
    for i in 0..4 {
        let mut ax = 4.0 * x[i];
        if i > 0 {
            ax -= 1.5 * x[i - 1];
        }
        if i < 3 {
            ax -= x[i + 1];
        }
        let b = (i + 1) as f64;
        assert!((ax - b).abs() < 1e-6, "row {i}: (A x)_i = {ax}, b_i = {b}");
    }
}

/// The guide's `console` blocks (what needs a clean clone, a GPU machine or MPI) are not
/// run here but by CI, as written: every command line of them is a step of
/// `.github/workflows/ci.yml` or of `.ci/run` (which its CPU job runs), except the clone
/// (CI's checkout). Editing either without the other fails here.
#[test]
fn the_guides_console_blocks_are_ci_steps() {
    const GUIDE: &str = include_str!("../../../docs/guide.md");
    const WORKFLOW: &str = include_str!("../../../.github/workflows/ci.yml");
    const CI_RUN: &str = include_str!("../../../.ci/run");
    let ci_lines: Vec<&str> = WORKFLOW
        .lines()
        .chain(CI_RUN.lines())
        .map(|l| l.trim().trim_start_matches("run: ").trim())
        .collect();
    let mut in_console = false;
    let mut commands = 0;
    for (number, line) in GUIDE.lines().enumerate() {
        match (in_console, line.trim_end()) {
            (false, "```console") => in_console = true,
            (true, "```") => in_console = false,
            (true, l) => {
                // A trailing `# ...` is the guide's comment, not part of the command.
                let command = l.split("  #").next().unwrap_or("").trim();
                if command.is_empty() || command.starts_with('#') {
                    continue;
                }
                if command.starts_with("git clone ") {
                    continue;
                }
                // `cd ferrocuda` after the clone is the checkout's folder too.
                let command = command.trim_end_matches(" && cd ferrocuda");
                commands += 1;
                assert!(
                    ci_lines.contains(&command),
                    "docs/guide.md line {}: `{command}` is not a step of .github/workflows/ci.yml \
                     or .ci/run, so nothing runs it",
                    number + 1
                );
            }
            (false, _) => {}
        }
    }
    assert!(!in_console, "docs/guide.md: a console block is not closed");
    assert!(
        commands >= 8,
        "docs/guide.md: only {commands} console commands found (the parser lost them?)"
    );
}
