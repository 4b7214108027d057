//! Compiles `gpu-kernels/` to PTX with rustc's own nvptx64 backend three times: every
//! product kernel (`$OUT_DIR/kernels.ptx`), the Hopper-only ones (`kernels_sm90.ptx`)
//! and the reproduction ones (`kernels_repro.ptx`). Each is cut into one PTX per domain
//! (`$OUT_DIR/modules/kernels-<domain>.ptx`: blas1, dense, multigrid, ...; see
//! build/domains.rs), assembled into a fatbin of machine code where `ptxas` can be had,
//! and listed in `$OUT_DIR/modules.rs` / `repro_modules.rs`, which `src/kernels.rs`
//! includes: a program loads only the domains it launches kernels of.
//!
//! The recipe (../shared/TOOLCHAIN.md): a pinned nightly with `rust-src`,
//! `-Zbuild-std=core`, fat LTO and `--emit=asm`; the link step is skipped with a no-op
//! linker because `llvm-bitcode-linker` cannot be installed here. Nothing needs CUDA.

#[path = "build/domains.rs"]
mod domains;
#[path = "build/machine_code.rs"]
mod machine_code;
#[path = "build/ptx_split.rs"]
mod ptx_split;

use domains::{Compiled, Domain};

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The nightly that builds the kernels. Bumping it is a deliberate, tested change.
const KERNEL_TOOLCHAIN: &str = "nightly-2026-05-20";
/// Oldest architecture the PTX targets; the driver JIT-compiles it for newer GPUs.
const DEFAULT_PTX_ARCH: &str = "sm_80";
/// Architecture of the second, Hopper-only PTX module.
const HOPPER_PTX_ARCH: &str = "sm_90";
/// The `--cfg` that reduces the kernel crate to its Hopper-only kernels.
const HOPPER_CFG: &str = "ferrocuda_sm90";
/// The `--cfg` that reduces the kernel crate to the reproduction kernels
/// (`ferrocuda_kernels::repro`, registered by the `ferrocuda-repro` crate).
const REPRO_CFG: &str = "ferrocuda_repro";
const KERNEL_CRATE_DIR: &str = "gpu-kernels";
const KERNEL_LIB_NAME: &str = "ferrocuda_kernels";

/// Variables the outer cargo sets that would make the inner build use the stable
/// compiler, the outer target directory (deadlock on its lock) or the outer flags.
const INHERITED_VARS_TO_DROP: &[&str] = &[
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTUP_TOOLCHAIN",
    "CARGO_TARGET_DIR",
    "CARGO_MAKEFLAGS",
    "CARGO_PRIMARY_PACKAGE",
    "RUSTDOC",
];

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let kernel_dir = kernel_source(&manifest_dir, &out_dir);

    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-env-changed=FERROCUDA_PTX_ARCH");

    let arch = env::var("FERROCUDA_PTX_ARCH").unwrap_or_else(|_| DEFAULT_PTX_ARCH.to_string());
    if !is_valid_arch(&arch) {
        fail(&format!(
            "FERROCUDA_PTX_ARCH={arch:?} is not a PTX architecture; use the form sm_80, sm_90, ..."
        ));
    }
    println!("cargo:rustc-env=FERROCUDA_PTX_ARCH={arch}");

    ensure_kernel_toolchain();

    let ptx_target_dir = out_dir.join("ptx-build");
    // The three compiled modules; each is then cut into its domains (build/domains.rs).
    // The Hopper module: only the kernels that need sm_90 instructions (the f64
    // m16n8k4 tensor-core GEMM), compiled with `--cfg ferrocuda_sm90`, which leaves every
    // other kernel out; loaded on devices of compute capability 9.0 or newer. The
    // reproduction module: only `ferrocuda_kernels::repro` (the kernel variants that
    // reproduce the theses' experiments) and what it uses, for the same architecture as
    // the default module, which no longer contains them.
    let compiled = [
        (
            Compiled {
                file: "kernels",
                prefix: KERNEL_LIB_NAME,
                split: true,
            },
            arch.as_str(),
            None,
        ),
        (
            Compiled {
                file: "kernels_sm90",
                prefix: "ferrocuda_kernels::hopper",
                split: false,
            },
            HOPPER_PTX_ARCH,
            Some(HOPPER_CFG),
        ),
        (
            Compiled {
                file: "kernels_repro",
                prefix: "ferrocuda_kernels::repro",
                split: true,
            },
            arch.as_str(),
            Some(REPRO_CFG),
        ),
    ];
    let all: Vec<Compiled> = compiled.iter().map(|(c, _, _)| *c).collect();
    let declared: Vec<(&str, &str)> = ferrocuda_kernels::abi::KERNELS
        .iter()
        .map(|k| (k.name, k.module))
        .collect();
    if declared.is_empty() {
        fail("the kernel crate linked into build.rs declares no kernel (abi::KERNELS is empty)");
    }
    let modules_dir = out_dir.join("modules");
    std::fs::create_dir_all(&modules_dir)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", modules_dir.display())));
    let mut library = Vec::new();
    let mut repro = Vec::new();
    for (c, ptx_arch, cfg) in &compiled {
        let ptx = build_ptx(&kernel_dir, &ptx_target_dir, ptx_arch, *cfg);
        // The whole module, for scripts/ptx-check and people; not embedded.
        std::fs::write(out_dir.join(format!("{}.ptx", c.file)), &ptx)
            .unwrap_or_else(|e| fail(&format!("cannot write {}.ptx: {e}", c.file)));
        let domains = domains::split(&ptx, c, &all, &declared)
            .unwrap_or_else(|e| fail(&format!("splitting {}.ptx into domains: {e}", c.file)));
        for d in domains {
            let path = modules_dir.join(format!("{}.ptx", d.stem()));
            std::fs::write(&path, &d.ptx)
                .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
            let target = if c.file == "kernels_repro" {
                &mut repro
            } else {
                &mut library
            };
            target.push((d, ptx_arch.to_string()));
        }
    }

    let tool = build_machine_code(&out_dir, &mut library, &mut repro);
    println!("cargo:rustc-env=FERROCUDA_CUBIN_TOOL={tool}");
    write_module_table(&out_dir.join("modules.rs"), &modules_dir, &library);
    write_module_table(&out_dir.join("repro_modules.rs"), &modules_dir, &repro);
}

/// Assembles every domain's PTX into `modules/<stem>.fatbin` (an empty file when no
/// machine code could be built) and returns the `ptxas` release that did (empty if none).
fn build_machine_code(
    out_dir: &Path,
    library: &mut [(Domain, String)],
    repro: &mut [(Domain, String)],
) -> String {
    let archs = machine_code::requested_archs();
    let tools = if archs.is_empty() {
        Err("FERROCUDA_CUBIN_ARCHS=none".to_string())
    } else {
        machine_code::find_tools(out_dir)
    };
    if let Err(why) = &tools {
        println!(
            "cargo:warning=GPU kernels built as PTX only ({why}); the driver will JIT-compile each domain module on first use"
        );
    }
    let modules_dir = out_dir.join("modules");
    let cache = machine_code::target_dir(out_dir).join("cubin-cache");
    for (d, ptx_arch) in library.iter_mut().chain(repro.iter_mut()) {
        let fatbin = modules_dir.join(format!("{}.fatbin", d.stem()));
        let built = match &tools {
            Ok(tools) => machine_code::build_fatbin(
                tools,
                &modules_dir.join(format!("{}.ptx", d.stem())),
                ptx_arch,
                &archs,
                &fatbin,
                &cache,
            )
            .unwrap_or_else(|why| {
                println!(
                    "cargo:warning=GPU kernels of {} built as PTX only ({why}); the driver will JIT-compile them on first use",
                    d.prefix
                );
                Vec::new()
            }),
            Err(_) => Vec::new(),
        };
        if built.is_empty() {
            std::fs::write(&fatbin, b"")
                .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", fatbin.display())));
        }
        d.cubin_archs = built;
    }
    tools.map(|t| t.version).unwrap_or_default()
}

/// Writes `path`: a Rust array expression of `ferrocuda::kernels::Module`s, one per
/// domain, embedding its PTX and fatbin (`src/kernels.rs` includes it).
fn write_module_table(path: &Path, modules_dir: &Path, domains: &[(Domain, String)]) {
    let mut out = String::from("[\n");
    for (d, ptx_arch) in domains {
        let file = |ext: &str| modules_dir.join(format!("{}.{ext}", d.stem()));
        out.push_str(&format!(
            "    Module {{\n        domain: {:?},\n        prefix: {:?},\n        ptx_arch: {:?},\n        ptx: include_str!({:?}),\n        fatbin: include_bytes!({:?}),\n        cubin_archs: &{:?},\n    }},\n",
            d.name(),
            d.prefix,
            ptx_arch,
            file("ptx").display().to_string(),
            file("fatbin").display().to_string(),
            d.cubin_archs,
        ));
    }
    out.push_str("]\n");
    std::fs::write(path, out)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
}

/// Runs the inner nightly build of the kernel crate for `arch` (with `--cfg cfg` when
/// given) and returns the PTX.
fn build_ptx(kernel_dir: &Path, target_dir: &Path, arch: &str, cfg: Option<&str>) -> String {
    let mut cmd = Command::new("rustup");
    cmd.current_dir(kernel_dir)
        .args(["run", KERNEL_TOOLCHAIN, "cargo", "rustc"])
        .args(["--release", "--lib", "--crate-type", "cdylib"])
        .args(["--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .args(["--config", "profile.release.panic=\"abort\""])
        .args(["--config", "profile.release.lto=\"fat\""])
        .args(["--config", "profile.release.codegen-units=1"])
        .args(["--config", "profile.release.debug=false"])
        .args(["--config", "profile.release.opt-level=3"])
        .arg("--target-dir")
        .arg(target_dir)
        .args([
            "--",
            "--emit=asm",
            "-C",
            &format!("target-cpu={arch}"),
            "-C",
            "linker=true",
        ]);
    if let Some(cfg) = cfg {
        cmd.args(["--cfg", cfg]);
    }
    for var in INHERITED_VARS_TO_DROP {
        cmd.env_remove(var);
    }
    for (key, _) in env::vars() {
        if key.starts_with("CARGO_BUILD_") || key.starts_with("CARGO_PROFILE_") {
            cmd.env_remove(key);
        }
    }
    let output = cmd.output().unwrap_or_else(|e| {
        fail(&format!(
            "could not start `rustup run {KERNEL_TOOLCHAIN} cargo`: {e}"
        ))
    });
    if !output.status.success() {
        fail(&format!(
            "building the GPU kernels (gpu-kernels/ -> PTX, {arch}) failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }

    let asm = target_dir
        .join("nvptx64-nvidia-cuda/release/deps")
        .join(format!("{KERNEL_LIB_NAME}.s"));
    let ptx = std::fs::read_to_string(&asm).unwrap_or_else(|e| {
        fail(&format!(
            "the kernel build ran but {} is missing: {e}",
            asm.display()
        ))
    });
    if !ptx.contains(".entry") {
        fail(&format!("{} holds no kernel entry point", asm.display()));
    }
    ptx
}

/// The source folder of the kernel crate: `gpu-kernels/` beside this manifest in the
/// workspace; in a packaged `ferrocuda` (crates.io, `cargo publish`), which has no such
/// folder, a copy of the `ferrocuda-kernels` and `ferrocuda-kernel-macros` dependencies'
/// sources (their build scripts report where they are: `links` metadata) in a workspace of
/// their own under `OUT_DIR`, with this package's `Cargo.lock` where it has one.
fn kernel_source(manifest_dir: &Path, out_dir: &Path) -> PathBuf {
    let local = manifest_dir.join(KERNEL_CRATE_DIR);
    if local.join("Cargo.toml").is_file() {
        println!("cargo:rerun-if-changed={KERNEL_CRATE_DIR}");
        return local;
    }
    let dep = |var: &str| {
        env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
            fail(&format!(
                "{KERNEL_CRATE_DIR}/ is missing and {var} is not set: the kernel sources come from the ferrocuda-kernels dependency"
            ))
        })
    };
    let kernels = dep("DEP_FERROCUDA_KERNELS_DIR");
    let macros = dep("DEP_FERROCUDA_KERNELS_MACROS_DIR");
    let root = out_dir.join("kernel-src");
    let _ = std::fs::remove_dir_all(&root);
    let io = |what: &str, e: std::io::Error| -> ! { fail(&format!("{what}: {e}")) };
    copy_tree(&kernels, &root.join("ferrocuda-kernels"))
        .unwrap_or_else(|e| io("copying the ferrocuda-kernels sources", e));
    copy_tree(&macros, &root.join("ferrocuda-kernel-macros"))
        .unwrap_or_else(|e| io("copying the ferrocuda-kernel-macros sources", e));
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"ferrocuda-kernels\", \"ferrocuda-kernel-macros\"]\nresolver = \"3\"\n\n\
         [patch.crates-io]\nferrocuda-kernel-macros = { path = \"ferrocuda-kernel-macros\" }\n",
    )
    .unwrap_or_else(|e| io("writing the kernel workspace", e));
    let lock = manifest_dir.join("Cargo.lock");
    if lock.is_file() {
        std::fs::copy(&lock, root.join("Cargo.lock"))
            .unwrap_or_else(|e| io("copying Cargo.lock", e));
    }
    root.join("ferrocuda-kernels")
}

/// Copies the folder `from` to `to` (files and folders; no `target/`).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            if entry.file_name() != "target" {
                copy_tree(&path, &dest)?;
            }
        } else {
            std::fs::copy(&path, &dest)?;
        }
    }
    Ok(())
}

fn is_valid_arch(arch: &str) -> bool {
    arch.strip_prefix("sm_")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// Installs the pinned nightly and `rust-src` when missing (RUSTUP_AUTO_INSTALL may be
/// off), and otherwise stops with the exact command a person has to run.
fn ensure_kernel_toolchain() {
    let install = format!(
        "rustup toolchain install {KERNEL_TOOLCHAIN} --profile minimal --component rust-src"
    );
    let sysroot = || -> Option<PathBuf> {
        let out = Command::new("rustup")
            .args(["run", KERNEL_TOOLCHAIN, "rustc", "--print", "sysroot"])
            .env_remove("RUSTUP_TOOLCHAIN")
            .env("RUSTUP_AUTO_INSTALL", "0")
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    let has_rust_src = |root: &Path| root.join("lib/rustlib/src/rust/library/core").is_dir();

    let root = match sysroot() {
        Some(root) => root,
        None => {
            println!("cargo:warning=installing the kernel toolchain: {install}");
            run_rustup(&install);
            sysroot().unwrap_or_else(|| {
                fail(&format!(
                    "the kernel toolchain is still missing after `{install}`"
                ))
            })
        }
    };
    if !has_rust_src(&root) {
        let add = format!("rustup component add rust-src --toolchain {KERNEL_TOOLCHAIN}");
        println!("cargo:warning=installing rust-src for the kernel toolchain: {add}");
        run_rustup(&add);
        if !has_rust_src(&root) {
            fail(&format!("rust-src is still missing after `{add}`"));
        }
    }
}

fn run_rustup(command_line: &str) {
    let mut parts = command_line.split_whitespace();
    let program = parts.next().unwrap_or("rustup");
    let status = Command::new(program)
        .args(parts)
        .env_remove("RUSTUP_TOOLCHAIN")
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!(
            "`{command_line}` exited with {s}. The GPU kernels need the {KERNEL_TOOLCHAIN} toolchain with rust-src; run that command by hand and build again"
        )),
        Err(e) => fail(&format!(
            "rustup could not be started ({e}). The GPU kernels need the {KERNEL_TOOLCHAIN} toolchain with rust-src: install rustup (https://rustup.rs), then run `{command_line}`"
        )),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    panic!("ferrocuda build failed: {message}");
}
