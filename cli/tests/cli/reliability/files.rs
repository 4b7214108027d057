//! Files: nothing the user has is replaced, destroyed or half-written; every input is
//! read once; a failed write is an error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::cli::{
    assert_error, ferrocuda, heat, read_values, run, scratch, small_system, small_system_in,
    spmv_args, stderr, system_args,
};

/// `y = A x` of [`small_system`].
const Y: [f64; 3] = [1.0, 4.0, 9.0];

fn spmv(a: &Path, x: &Path, out: &Path) -> Output {
    let text = |p: &Path| p.to_str().unwrap().to_string();
    run(&spmv_args(&text(a), &text(x), &text(out), &[]))
}

/// Names in `dir` (to see that no temporary file is left behind).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[cfg(unix)]
#[test]
fn devices_fifos_and_links_are_never_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let d = scratch("files-kinds");
    let (a, x) = small_system(&d);
    // A character device is written through, never replaced.
    let r = spmv(&a, &x, Path::new("/dev/null"));
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    // A FIFO is written through: its reader gets y, the FIFO stays.
    let fifo = d.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let r = spmv(&a, &x, &fifo);
    assert!(r.status.success(), "{}", stderr(&r));
    let text = reader.join().unwrap();
    let (_, _, got) = ferrocuda::sparse::mm::read_dense::<f64, _>(text.as_bytes()).unwrap();
    assert_eq!(got, Y);
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    // A link to a file stays a link; the file it names gets y.
    let target = d.join("target.mtx");
    std::fs::write(&target, "old").unwrap();
    let link = d.join("link.mtx");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let r = spmv(&a, &x, &link);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read_values(&target), Y);
    // A link to nothing and a folder are refused, untouched.
    let dangling = d.join("dangling.mtx");
    std::os::unix::fs::symlink(d.join("nothing"), &dangling).unwrap();
    assert_error(
        &spmv(&a, &x, &dangling),
        1,
        &["dangling.mtx", "link to nothing"],
        "dangling",
    );
    assert!(
        std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_error(&spmv(&a, &x, &d), 1, &["a folder"], "folder");
    let _ = std::fs::remove_dir_all(d);
}

/// Several runs writing one `--out` at once: each renames its own complete temporary
/// file, so the result is one whole answer and nothing is left behind.
#[test]
fn concurrent_runs_never_share_a_temporary_file() {
    let (d, a, x, out) = small_system_in("files-concurrent");
    let children: Vec<_> = (0..8)
        .map(|_| {
            ferrocuda()
                .args(["spmv", "--matrix"])
                .arg(&a)
                .arg("--x")
                .arg(&x)
                .arg("--out")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(read_values(&out), Y);
    assert_eq!(names(&d), ["A.mtx", "x.mtx", "y.mtx"]);
    let _ = std::fs::remove_dir_all(d);
}

/// The old fixed temporary names (`OUT.partial`, `OUT.mtx.partial`) belong to the user.
#[test]
fn a_user_file_named_like_a_temporary_file_is_never_touched() {
    let (d, a, x, out) = small_system_in("files-partial");
    for name in ["y.mtx.partial", "y.partial"] {
        std::fs::write(d.join(name), "mine").unwrap();
    }
    let r = spmv(&a, &x, &out);
    assert!(r.status.success(), "{}", stderr(&r));
    let r = run(&heat(
        "3",
        &["--t-end", "0.01", "--out", out.to_str().unwrap()],
    ));
    assert!(r.status.success(), "{}", stderr(&r));
    for name in ["y.mtx.partial", "y.partial"] {
        assert_eq!(
            std::fs::read_to_string(d.join(name)).unwrap(),
            "mine",
            "{name}"
        );
    }
    // A matrix named like the old temporary file of its own output survives.
    let r_partial = d.join("R.mtx.partial");
    std::fs::copy(&a, &r_partial).unwrap();
    let r = spmv(&r_partial, &x, &d.join("R.mtx"));
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(
        std::fs::read(&r_partial).unwrap(),
        std::fs::read(&a).unwrap()
    );
    assert_eq!(read_values(&d.join("R.mtx")), Y);
    let _ = std::fs::remove_dir_all(d);
}

/// `--out` equal to an input, under any name, is refused naming both; the input is
/// unchanged.
#[test]
fn out_equal_to_an_input_is_refused_naming_both() {
    let d = scratch("files-same");
    let (a, x) = small_system(&d);
    let b = x.clone();
    let before = (std::fs::read(&a).unwrap(), std::fs::read(&x).unwrap());
    let hard = d.join("hard.mtx");
    std::fs::hard_link(&a, &hard).unwrap();
    let mut spellings: Vec<PathBuf> = vec![a.clone(), d.join(".").join("A.mtx"), hard];
    #[cfg(unix)]
    {
        let link = d.join("link.mtx");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        spellings.push(link);
    }
    for out in &spellings {
        let r = spmv(&a, &x, out);
        assert_error(
            &r,
            1,
            &["--out", "same file as --matrix"],
            &format!("{out:?}"),
        );
    }
    let r = spmv(&a, &x, &x);
    assert_error(&r, 1, &["same file as --x"], "spmv --x");
    let x0_path = d.join("x0.mtx");
    let s = |out: &Path, x0: bool| {
        let mut args = [&["solve"][..], &system_args(&a, &b, out)].concat();
        if x0 {
            args.extend(["--x0", x0_path.to_str().unwrap()]);
        }
        run(&args)
    };
    assert_error(&s(&b, false), 1, &["same file as --rhs"], "solve --rhs");
    std::fs::copy(&x, d.join("x0.mtx")).unwrap();
    assert_error(
        &s(&d.join("x0.mtx"), true),
        1,
        &["same file as --x0"],
        "solve --x0",
    );
    let r = run(&[
        "lu",
        "--matrix",
        a.to_str().unwrap(),
        "--rhs",
        b.to_str().unwrap(),
        "--out",
        b.to_str().unwrap(),
    ]);
    assert_error(&r, 1, &["same file as --rhs"], "lu --rhs");
    assert_eq!(
        (std::fs::read(&a).unwrap(), std::fs::read(&x).unwrap()),
        before
    );
    let _ = std::fs::remove_dir_all(d);
}

/// Every input is read once: pipes, `/dev/stdin` and process substitution work.
#[cfg(unix)]
#[test]
fn pipes_and_process_substitution_work() {
    use std::io::Write;
    let (d, a, x, out) = small_system_in("files-pipes");
    for cmd in ["spmv", "lu"] {
        let mut args: Vec<String> = vec![cmd.into(), "--matrix".into(), "/dev/stdin".into()];
        if cmd == "spmv" {
            args.extend(["--x".into(), x.display().to_string()]);
            args.extend(["--out".into(), out.display().to_string()]);
        }
        let mut child = ferrocuda()
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&std::fs::read(&a).unwrap())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
    }
    assert_eq!(read_values(&out), Y);
    // Process substitution, where bash is installed.
    if Command::new("bash")
        .arg("-c")
        .arg("true")
        .status()
        .is_ok_and(|s| s.success())
    {
        let _ = std::fs::remove_file(&out);
        let bin = ferrocuda().get_program().to_os_string();
        let o = Command::new("bash")
            .arg("-c")
            .arg("\"$0\" solve --matrix <(cat \"$1\") --rhs <(cat \"$2\") --out \"$3\" --quiet")
            .arg(bin)
            .args([&a, &x, &out])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let x = read_values(&out);
        assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-12), "{x:?}");
    }
    let _ = std::fs::remove_dir_all(d);
}

/// A full disk is an error (exit 1), and the old output stays.
#[cfg(target_os = "linux")]
#[test]
fn output_to_a_full_disk_exits_non_zero() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        return;
    }
    let d = scratch("files-full");
    let (a, x) = small_system(&d);
    let (sa, sx) = (a.to_str().unwrap(), x.to_str().unwrap());
    let o = ferrocuda()
        .args(["info", "--json"])
        .stdout(std::fs::File::create(full).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "info: {}", stderr(&o));
    assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
    for args in [
        vec!["spmv", "--matrix", sa, "--x", sx, "--out", "/dev/full"],
        vec!["solve", "--matrix", sa, "--rhs", sx, "--out", "/dev/full"],
        vec!["lu", "--matrix", sa, "--rhs", sx, "--out", "/dev/full"],
        heat("3", &["--t-end", "0.01", "--out", "/dev/full"]),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--out /dev/full") && stderr(&o).contains("No space left"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

/// Errors name the path the user gave, never a temporary file's; a failed run leaves
/// nothing behind.
#[test]
fn errors_name_the_path_the_user_gave() {
    let d = scratch("files-paths");
    let (a, x) = small_system(&d);
    let r = spmv(&a, &x, &d.join("nope").join("y.mtx"));
    assert_error(&r, 1, &["--out", "nope/y.mtx"], "missing folder");
    let err = stderr(&r);
    assert!(!err.contains(".tmp") && !err.contains("partial"), "{err}");
    assert_eq!(names(&d), ["A.mtx", "x.mtx"]);
    let _ = std::fs::remove_dir_all(d);
}
