//! The `ferrocuda` binary as users call it: `info` and `spmv` on files.

use crate::common;

use common::cli::ferrocuda;
use std::path::PathBuf;

#[test]
fn info_exits_zero_and_prints_json_with_or_without_a_gpu() {
    let out = ferrocuda().arg("info").output().expect("run info");
    assert!(
        out.status.success(),
        "info failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // What the build embedded: machine code and PTX, or PTX only.
    assert!(
        text.contains("kernels: ")
            && (text.contains("as machine code for") || text.contains("as PTX for")),
        "{text}"
    );
    if ferrocuda::gpu::count() == 0 {
        assert!(text.contains("no CUDA device found"), "{text}");
    }
    let json = ferrocuda()
        .args(["info", "--json"])
        .output()
        .expect("run info --json");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("info --json is JSON");
    assert!(v["devices"].is_array());
    // What the build embedded: the PTX's architecture, and the machine code's (sm_80 and
    // sm_90 at least, unless the build was PTX-only).
    assert_eq!(v["ptx_arch"], ferrocuda::kernels::PTX_ARCH);
    let archs: Vec<&str> = v["cubin_archs"]
        .as_array()
        .expect("cubin_archs is a list")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(archs, ferrocuda::kernels::cubin_archs());
    if !ferrocuda::kernels::CUBIN_TOOL.is_empty()
        && std::env::var_os("FERROCUDA_CUBIN_ARCHS").is_none()
    {
        assert!(
            archs.contains(&"sm_80") && archs.contains(&"sm_90"),
            "{archs:?}"
        );
    }
    // One entry per domain module, with its size and machine code.
    let modules = v["modules"].as_array().expect("modules is a list");
    assert_eq!(modules.len(), ferrocuda::kernels::MODULES.len());
    for (m, lib) in modules.iter().zip(ferrocuda::kernels::MODULES) {
        assert_eq!(m["domain"], lib.domain);
        assert_eq!(m["ptx_bytes"], lib.ptx.len());
        assert_eq!(m["fatbin_bytes"], lib.fatbin.len());
        assert_eq!(m["kernels"], lib.entries().len());
        assert!(m["cubin_archs"].is_array());
    }
    let text = ferrocuda().arg("info").output().expect("run info");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("kernel modules") && text.contains("dense ("),
        "{text}"
    );
}

/// y = A x for a rectangular matrix with an empty row, every format, CPU (and GPU for
/// the formats with kernels, where a GPU is present).
#[test]
fn spmv_writes_a_times_x_in_every_format() {
    let dir = common::cli::scratch("spmv");
    let (a, x, y) = (dir.join("A.mtx"), dir.join("x.mtx"), dir.join("y.mtx"));
    std::fs::write(
        &a,
        "%%MatrixMarket matrix coordinate real general\n3 4 4\n1 1 2.0\n1 4 1.0\n3 2 -1.5\n3 3 4\n",
    )
    .unwrap();
    std::fs::write(
        &x,
        "%%MatrixMarket matrix array real general\n4 1\n1\n2\n3\n4\n",
    )
    .unwrap();
    let mut runs: Vec<(&str, &str)> = ["csr", "bcsr", "ell", "bell", "bdia", "sbell"]
        .iter()
        .map(|f| (*f, "cpu"))
        .collect();
    if common::gpu_or_skip("spmv_writes_a_times_x_in_every_format (GPU part)").is_some() {
        runs.extend([
            ("csr", "gpu"),
            ("bcsr", "gpu"),
            ("bell", "gpu"),
            ("ell", "gpu"),
            ("bdia", "gpu"),
            ("sbell", "gpu"),
        ]);
    }
    for (format, device) in runs {
        let _ = std::fs::remove_file(&y);
        let out = ferrocuda()
            .args(["spmv", "--matrix"])
            .arg(&a)
            .arg("--x")
            .arg(&x)
            .arg("--out")
            .arg(&y)
            .args(["--format", format, "--block-size", "2", "--device", device])
            .output()
            .expect("run spmv");
        assert!(
            out.status.success(),
            "{format} on {device}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = std::fs::File::open(&y).expect("y written");
        let (n, m, v) = ferrocuda::sparse::mm::read_dense::<f64, _>(std::io::BufReader::new(file))
            .expect("y parses");
        assert_eq!(
            (n, m, v),
            (3, 1, vec![6.0, 0.0, 9.0]),
            "{format} on {device}"
        );
    }
}

#[test]
fn spmv_bad_input_names_the_line_and_keeps_the_old_output() {
    let dir = common::cli::scratch("spmv-bad");
    let (a, x, y) = (dir.join("A.mtx"), dir.join("x.mtx"), dir.join("y.mtx"));
    std::fs::write(
        &a,
        "%%MatrixMarket matrix coordinate real general\n3 4 2\n1 1 2.0\n1 x 1.0\n",
    )
    .unwrap();
    std::fs::write(
        &x,
        "%%MatrixMarket matrix array real general\n4 1\n1\n2\n3\n4\n",
    )
    .unwrap();
    std::fs::write(&y, "previous result\n").unwrap();
    let run = |x: &PathBuf| {
        ferrocuda()
            .args(["spmv", "--matrix"])
            .arg(&a)
            .arg("--x")
            .arg(x)
            .arg("--out")
            .arg(&y)
            .output()
            .expect("run")
    };
    let out = run(&x);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 4") && err.contains("A.mtx"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&y).unwrap(),
        "previous result\n",
        "output clobbered"
    );

    // A vector of the wrong length is a dimension mismatch naming both lengths.
    std::fs::write(
        &a,
        "%%MatrixMarket matrix coordinate real general\n3 4 1\n1 1 2.0\n",
    )
    .unwrap();
    let short = dir.join("short.mtx");
    std::fs::write(
        &short,
        "%%MatrixMarket matrix array real general\n3 1\n1\n2\n3\n",
    )
    .unwrap();
    let out = run(&short);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("expected 4") && err.contains("length 3"),
        "{err}"
    );
}
