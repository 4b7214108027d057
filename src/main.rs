//! The `ferrocuda` command line (see `ferrocuda --help`).

fn main() {
    std::process::exit(ferrocuda::cli::main());
}
