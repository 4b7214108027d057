//! The `ferrocuda` command line (see `ferrocuda --help`).

fn main() {
    // NVLink multicast (NVLS) can take a shared host's GPUs out of service; keep NCCL
    // off it unless the user decided otherwise.
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // SAFETY: first statement of main, before any other thread exists.
        unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    }
    std::process::exit(ferrocuda_cli::main());
}
