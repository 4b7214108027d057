//! The option parser under random argument vectors (a bounded property test, in-process,
//! no GPU): parsing and checking the options never panics or aborts, whatever the words.

use proptest::prelude::*;

/// Words a command line is made of: subcommands, options, values good and bad.
const WORDS: &[&str] = &[
    "tour",
    "info",
    "probe",
    "mg",
    "lu",
    "spmv",
    "solve",
    "rock4",
    "mpc",
    "rng",
    "sfmt",
    "bench",
    "blas1",
    "gmres",
    "scaling",
    "spmv-thesis",
    "--json",
    "--quiet",
    "--device",
    "--matrix",
    "--x",
    "--rhs",
    "--out",
    "--x0",
    "--restart",
    "--tol",
    "--atol",
    "--max-iter",
    "--block-size",
    "--block",
    "--format",
    "--precond",
    "--orth",
    "--n",
    "--base",
    "--cycles",
    "--nu1",
    "--nu2",
    "--inner",
    "--omega",
    "--objects",
    "--horizon",
    "--steps",
    "--margin",
    "--frame-every",
    "--frames",
    "--seed",
    "--seed-array",
    "--count",
    "--bits",
    "--mexp",
    "--sizes",
    "--reps",
    "--case",
    "--cases",
    "--problem",
    "--t-end",
    "--rtol",
    "--nu",
    "--max-steps",
    "--large-log2",
    "--gpus",
    "--results-dir",
    "--thesis",
    "--quick",
    "--precision",
    "--pivoting",
    "--help",
    "-h",
    "--version",
    "0",
    "1",
    "-1",
    "5",
    "1e11",
    "1e400",
    "-1e3",
    "nan",
    "inf",
    "-inf",
    "18446744073709551615",
    "18446744073709551616",
    "1.5",
    "0x10",
    "cpu",
    "gpu",
    "gpu:3",
    "heat",
    "jahn",
    "csr",
    "bcsr",
    "sbell",
    "f32",
    "f64",
    "v",
    "w",
    "fmg",
    "abl",
    "jacobi",
    "block-jacobi",
    "300x300x300x1",
    "2x4x2x1",
    "4096,0",
    ",",
    "",
    "=",
    "--tol=-1",
    "--n=1e3",
    "\u{0}",
    "é",
    "A.mtx",
];

fn argv() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(WORDS).prop_map(str::to_string),
            1 => "\\PC{0,12}",
        ],
        0..10,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_command_lines_never_panic(words in argv()) {
        let args = std::iter::once("ferrocuda".to_string()).chain(words);
        if let Ok(cli) = ferrocuda_cli::parse(args) {
            let _ = cli.validate();
        }
    }
}

/// The command definition passes clap's own consistency checks.
#[test]
fn the_command_definition_is_consistent() {
    use clap::CommandFactory;
    ferrocuda_cli::Cli::command().debug_assert();
}
