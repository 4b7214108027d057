//! `ferrocuda rng sfmt` as users call it: the reference files reproduced on the CPU (and
//! the GPU where there is one), 64-bit output, init_by_array, `| head` ending quietly,
//! JSON, and bad input.

use crate::common;

use common::cli::{ferrocuda, gpu_present};
use std::io::Read;
use std::process::Stdio;

fn stdout_of(args: &[&str]) -> String {
    let out = common::cli::run_ok(&["rng", "sfmt"], args);
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn fails(args: &[&str], needle: &str) {
    let err = common::cli::run_fails(&["rng", "sfmt"], args);
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
}

const REF_19937: &str =
    include_str!("../../../data/sfmt/sfmt19937_init_gen_rand_1234_first1000.txt");
const REF_607: &str = include_str!("../../../data/sfmt/sfmt607_init_gen_rand_1234_first1000.txt");
const REF_19937_64: &str =
    include_str!("../../../data/sfmt/sfmt19937_init_gen_rand_4321_first1000_u64.txt");
const REF_607_64: &str =
    include_str!("../../../data/sfmt/sfmt607_init_gen_rand_4321_first1000_u64.txt");

#[test]
fn cpu_reproduces_the_reference_files() {
    assert_eq!(
        stdout_of(&["--mexp", "19937", "--seed", "1234", "--count", "1000"]),
        REF_19937
    );
    assert_eq!(
        stdout_of(&["--mexp", "607", "--seed", "1234", "--count", "1000"]),
        REF_607
    );
    let a = ["--seed", "4321", "--count", "1000", "--bits", "64"];
    assert_eq!(
        stdout_of(&[&["--mexp", "19937"][..], &a].concat()),
        REF_19937_64
    );
    assert_eq!(
        stdout_of(&[&["--mexp", "607"][..], &a].concat()),
        REF_607_64
    );
    // A prefix is a prefix; hex seeds are the same numbers.
    let head: String = REF_19937
        .lines()
        .take(7)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(stdout_of(&["--seed", "0x4d2", "--count", "7"]), head);
}

#[test]
fn seed_array_matches_the_library() {
    use ferrocuda::rng::{Mexp, Sfmt};
    let mut g = Sfmt::from_key(Mexp::M607, &[0x1234, 0x5678, 0x9abc, 0xdef0]);
    let want: String = (0..50).map(|_| format!("{}\n", g.next_u64())).collect();
    let got = stdout_of(&[
        "--mexp",
        "607",
        "--seed-array",
        "0x1234,0x5678,0x9abc,0xdef0",
        "--count",
        "50",
        "--bits",
        "64",
    ]);
    assert_eq!(got, want);
}

#[test]
fn json_holds_the_numbers() {
    let out = stdout_of(&["--seed", "1234", "--count", "5", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let want: Vec<u64> = REF_19937
        .lines()
        .take(5)
        .map(|l| l.parse().unwrap())
        .collect();
    let got: Vec<u64> = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(got, want);
    assert_eq!(v["mexp"], 19937);
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let mut child = ferrocuda()
        .args(["rng", "sfmt", "--seed", "1", "--count", "100000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = [0u8; 64];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .expect("some output");
    drop(child.stdout.take());
    let t = std::time::Instant::now();
    let status = child.wait().expect("wait");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "exit status {status:?}, stderr {err:?}");
    assert!(err.is_empty(), "stderr: {err:?}");
    assert!(
        t.elapsed().as_secs() < 20,
        "kept generating after the pipe closed"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    fails(
        &["--mexp", "1279", "--seed", "1", "--count", "3"],
        "MEXP 1279",
    );
    fails(
        &["--seed", "1", "--count", "3", "--bits", "16"],
        "--bits 16",
    );
    fails(&["--seed", "-1", "--count", "3"], "");
    fails(&["--seed", "0x1g", "--count", "3"], "0x1g");
    fails(
        &["--seed", "1", "--seed-array", "1,2", "--count", "3"],
        "cannot be used with",
    );
    fails(&["--count", "3"], "--seed");
    fails(
        &[
            "--mexp", "607", "--seed", "1", "--count", "3", "--device", "gpu",
        ],
        "607",
    );
}

#[test]
fn gpu_reproduces_the_reference_files() {
    if !gpu_present("gpu_reproduces_the_reference_files") {
        return;
    }
    let d = ["--device", "gpu"];
    assert_eq!(
        stdout_of(&[&["--seed", "1234", "--count", "1000"][..], &d].concat()),
        REF_19937
    );
    assert_eq!(
        stdout_of(
            &[
                &["--seed", "4321", "--count", "1000", "--bits", "64"][..],
                &d
            ]
            .concat()
        ),
        REF_19937_64
    );
    // Across the GPU's chunks (1024 blocks = 638976 values per call), as the CPU.
    let n = "1300000";
    let cpu = stdout_of(&["--seed", "7", "--count", n]);
    let gpu = stdout_of(&["--seed", "7", "--count", n, "--device", "gpu"]);
    assert!(cpu == gpu, "GPU and CPU differ over {n} values");
}
