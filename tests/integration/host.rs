//! Runtime tests: launch configurations, error messages, opening devices, memory,
//! kernels lookup, event timing, graph capture and streams.
//!
//! The first group runs everywhere; the GPU group is skipped without a device (and fails
//! with `FERROCUDA_REQUIRE_GPU=1`).

use crate::common;

use common::*;
use ferrocuda::blas1::gpu;
use ferrocuda::gpu::{DeviceBuffer, DeviceSlice, Gpu, LaunchConfig, ModuleSource};
use ferrocuda_host::{Error as HostError, MAX_BLOCK_THREADS, MAX_GRID_X, MAX_GRID_YZ};

fn invalid_launch_reason(cfg: LaunchConfig, kernel: &'static str) -> String {
    match cfg.validate(kernel) {
        Err(HostError::InvalidLaunch { kernel: k, reason }) => {
            assert_eq!(
                k, kernel,
                "InvalidLaunch for {cfg:?} names the wrong kernel"
            );
            reason
        }
        other => panic!("validate({cfg:?}) should be InvalidLaunch for {kernel}, got {other:?}"),
    }
}

#[test]
fn launch_config_validate_rejects_impossible_shapes() {
    let ok = LaunchConfig::blocks(1, 256);
    ok.validate("fine")
        .unwrap_or_else(|e| panic!("{ok:?} must be valid: {e}"));
    let max = LaunchConfig::blocks(MAX_GRID_X, MAX_BLOCK_THREADS).with_grid_y(MAX_GRID_YZ);
    max.validate("largest")
        .unwrap_or_else(|e| panic!("{max:?} (all limits exactly) must be valid: {e}"));

    let reason = invalid_launch_reason(LaunchConfig::blocks(0, 256), "empty_grid");
    assert!(reason.contains("grid"), "empty grid: reason {reason:?}");
    invalid_launch_reason(LaunchConfig::blocks(4, 256).with_grid_y(0), "empty_grid_y");
    let reason = invalid_launch_reason(LaunchConfig::blocks(4, 0), "empty_block");
    assert!(reason.contains("block"), "empty block: reason {reason:?}");
    let reason = invalid_launch_reason(LaunchConfig::blocks(4, MAX_BLOCK_THREADS + 1), "big_block");
    assert!(
        reason.contains("1024"),
        "block of 1025 threads: reason {reason:?}"
    );
    let cube = LaunchConfig {
        grid: (1, 1, 1),
        block: (32, 32, 2),
        shared_bytes: 0,
    };
    invalid_launch_reason(cube, "big_block_3d");
    let reason = invalid_launch_reason(
        LaunchConfig::blocks(4, 256).with_grid_y(MAX_GRID_YZ + 1),
        "tall_grid",
    );
    assert!(
        reason.contains("65535"),
        "grid y of 65536: reason {reason:?}"
    );
    let deep = LaunchConfig {
        grid: (1, 1, MAX_GRID_YZ + 1),
        block: (32, 1, 1),
        shared_bytes: 0,
    };
    invalid_launch_reason(deep, "deep_grid");
    invalid_launch_reason(LaunchConfig::blocks(MAX_GRID_X + 1, 32), "wide_grid");

    let e = LaunchConfig::blocks(0, 256)
        .validate("my_kernel")
        .expect_err("empty grid");
    let msg = e.to_string();
    assert!(
        msg.contains("my_kernel") && msg.contains("invalid launch"),
        "InvalidLaunch message: {msg:?}"
    );
}

#[test]
fn launch_config_for_elements_covers_every_element() {
    let cases = [
        (0, 256, 1),
        (1, 256, 1),
        (256, 256, 1),
        (257, 256, 2),
        (1_000_003, 256, 3907),
        (1 << 27, 256, 1 << 19),
    ];
    for (n, threads, blocks) in cases {
        let cfg = LaunchConfig::for_elements(n, threads);
        assert_eq!(
            cfg.grid,
            (blocks, 1, 1),
            "for_elements({n}, {threads}): grid"
        );
        assert_eq!(
            cfg.block,
            (threads, 1, 1),
            "for_elements({n}, {threads}): block"
        );
        assert_eq!(
            cfg.shared_bytes, 0,
            "for_elements({n}, {threads}): shared bytes"
        );
        cfg.validate("for_elements")
            .unwrap_or_else(|e| panic!("for_elements({n}, {threads}) invalid: {e}"));
    }
    // The grid is capped; the kernels' grid-stride loops cover the rest.
    let huge = LaunchConfig::for_elements(usize::MAX, 32);
    assert_eq!(
        huge.grid.0, MAX_GRID_X,
        "for_elements(usize::MAX, 32) is capped at MAX_GRID_X"
    );
    huge.validate("huge")
        .unwrap_or_else(|e| panic!("the capped grid must be valid: {e}"));
    let cfg = LaunchConfig::blocks(3, 64)
        .with_grid_y(5)
        .with_shared_bytes(1024);
    assert_eq!(
        (cfg.grid, cfg.block, cfg.shared_bytes),
        ((3, 5, 1), (64, 1, 1), 1024),
        "builder methods"
    );
}

#[test]
fn error_messages_are_sentences_with_the_values() {
    let cases: Vec<(ferrocuda_host::Error, Vec<&str>)> = vec![
        (
            HostError::OutOfMemory {
                ordinal: 3,
                requested: 1_125_899_906_842_624,
                free: 1234,
                total: 5678,
            },
            vec![
                "out of GPU memory",
                "device 3",
                "1125899906842624",
                "1234",
                "5678",
            ],
        ),
        (
            HostError::NoDevice {
                reason: "no driver today".into(),
            },
            vec!["no CUDA device", "no driver today"],
        ),
        (
            HostError::InvalidOrdinal {
                ordinal: 1000,
                count: 2,
            },
            vec!["1000", "2 device"],
        ),
        (
            HostError::OutOfRange {
                op: "view",
                start: 5,
                end: 3,
                len: 10,
            },
            vec!["view", "5..3", "10"],
        ),
        (
            HostError::DimensionMismatch {
                op: "copy_from_host",
                what: "host slice",
                expected: 7,
                found: 8,
            },
            vec!["copy_from_host", "host slice", "7", "8"],
        ),
        (
            HostError::WrongDevice {
                op: "axpy",
                what: "x",
                expected: 0,
                found: 1,
            },
            vec!["axpy", "x", "device 1", "device 0"],
        ),
        (
            HostError::InvalidLaunch {
                kernel: "axpy_f64",
                reason: "empty grid (0, 1, 1)".into(),
            },
            vec!["axpy_f64", "empty grid (0, 1, 1)"],
        ),
    ];
    for (e, needles) in cases {
        let msg = e.to_string();
        for needle in needles {
            assert!(
                msg.contains(needle),
                "{e:?} displays as {msg:?}, which lacks {needle:?}"
            );
        }
        assert!(
            msg.len() > 20 && !msg.ends_with(' '),
            "{e:?}: {msg:?} is no sentence"
        );
        // Wrapped in the toolkit's error, the message is the same (transparent).
        let wrapped = ferrocuda::Error::from(e);
        assert_eq!(
            wrapped.to_string(),
            msg,
            "ferrocuda::Error::Gpu must display transparently"
        );
    }

    let no_device = ferrocuda::Error::from(HostError::NoDevice { reason: "x".into() });
    assert!(no_device.is_no_device(), "Gpu(NoDevice) is 'no device'");
    let ordinal = ferrocuda::Error::from(HostError::InvalidOrdinal {
        ordinal: 9,
        count: 1,
    });
    assert!(!ordinal.is_no_device(), "InvalidOrdinal is not 'no device'");

    let toolkit: Vec<(ferrocuda::Error, Vec<&str>)> = vec![
        (
            ferrocuda::Error::DimensionMismatch {
                op: "axpy",
                what: "x",
                expected: 11,
                found: 10,
            },
            vec!["axpy", "x", "11", "10"],
        ),
        (
            ferrocuda::Error::Empty {
                op: "multi_dot",
                what: "out",
            },
            vec!["multi_dot", "out", "must not be empty"],
        ),
        (
            ferrocuda::Error::WrongDevice {
                op: "dot",
                what: "y",
                expected: 0,
                found: 2,
            },
            vec!["dot", "y", "device 2", "device 0"],
        ),
        (
            ferrocuda::Error::InvalidArgument {
                op: "multi_dot",
                reason: "524281 vectors exceed".into(),
            },
            vec!["multi_dot", "524281 vectors exceed"],
        ),
    ];
    for (e, needles) in toolkit {
        let msg = e.to_string();
        for needle in needles {
            assert!(
                msg.contains(needle),
                "{e:?} displays as {msg:?}, which lacks {needle:?}"
            );
        }
        assert!(!e.is_no_device(), "{e:?} is not 'no device'");
    }
}

#[test]
fn without_a_driver_open_reports_no_device() {
    if ferrocuda::gpu::driver_present() {
        eprintln!(
            "SKIPPED without_a_driver_open_reports_no_device: a CUDA driver is installed here"
        );
        return;
    }
    let e = ferrocuda::gpu::open(0).expect_err("open(0) without a driver must fail");
    assert!(
        e.is_no_device(),
        "open(0) without a driver: {e:?} is not NoDevice"
    );
    assert!(
        e.to_string().contains("no CUDA device"),
        "the NoDevice message: {e}"
    );
    let e = ferrocuda::gpu::open(5).expect_err("open(5) without a driver must fail");
    assert!(
        e.is_no_device(),
        "open(5) without a driver: {e:?} is not NoDevice"
    );
    assert_eq!(ferrocuda::gpu::count(), 0, "count() without a driver");
    let e = ferrocuda::gpu::device_count().expect_err("device_count() without a driver must fail");
    assert!(
        matches!(e, HostError::NoDevice { .. }),
        "device_count(): {e:?}"
    );
    let e = ferrocuda::gpu::driver_cuda_version()
        .expect_err("driver_cuda_version() without a driver must fail");
    assert!(
        matches!(e, HostError::NoDevice { .. }),
        "driver_cuda_version(): {e:?}"
    );
}

// ------------------------------------------------------------------------------------
// With a GPU.

#[test]
fn device_info_is_sane() {
    let Some(gpu) = gpu_or_skip("device_info_is_sane") else {
        return;
    };
    assert!(
        ferrocuda::gpu::driver_present(),
        "a GPU opened, so the driver is present"
    );
    assert!(ferrocuda::gpu::count() >= 1, "count() with an open GPU");
    let info = gpu.info().unwrap_or_else(|e| panic!("gpu.info(): {e}"));
    eprintln!("device 0: {info:?}");
    assert_eq!(info.ordinal, 0, "ordinal");
    assert_eq!(gpu.ordinal(), 0, "gpu.ordinal()");
    assert!(!info.name.trim().is_empty(), "device name is empty");
    assert_eq!(
        gpu.name().unwrap_or_else(|e| panic!("gpu.name(): {e}")),
        info.name,
        "name() vs info().name"
    );
    assert!(
        info.multiprocessors > 0,
        "multiprocessors: {}",
        info.multiprocessors
    );
    assert!(
        info.compute_capability >= (8, 0),
        "compute capability {:?} < 8.0",
        info.compute_capability
    );
    assert!(
        info.total_memory_bytes > 0,
        "total memory: {}",
        info.total_memory_bytes
    );
    assert_eq!(info.warp_size, 32, "warp size");
    assert!(
        info.max_threads_per_block >= 1024,
        "max threads per block: {}",
        info.max_threads_per_block
    );
    assert!(
        info.shared_memory_per_block >= 48 * 1024,
        "shared memory per block: {}",
        info.shared_memory_per_block
    );
    assert!(
        info.driver_cuda_version >= 12000,
        "driver CUDA version {}",
        info.driver_cuda_version
    );
    assert!(
        info.theoretical_dram_bandwidth().is_none_or(|b| b > 0.0),
        "theoretical bandwidth"
    );
    let (free, total) = gpu
        .memory_info()
        .unwrap_or_else(|e| panic!("gpu.memory_info(): {e}"));
    assert!(
        total > 0 && free <= total,
        "memory_info: {free} free of {total}"
    );
    assert!(
        ferrocuda::gpu::device_count().is_ok_and(|c| c >= 1),
        "device_count() with an open GPU"
    );
}

#[test]
fn unknown_kernel_is_kernel_not_found_and_every_known_kernel_loads() {
    let Some(gpu) = gpu_or_skip("unknown_kernel_is_kernel_not_found_and_every_known_kernel_loads")
    else {
        return;
    };
    let missing = ferrocuda_kernels::abi::KernelInfo {
        name: "no_such_kernel",
        module: "ferrocuda_kernels::blas1",
        params: &[],
    };
    match gpu.load_declared(&missing) {
        Err(
            e @ HostError::KernelNotFound {
                kernel: "no_such_kernel",
                ..
            },
        ) => {
            assert!(
                e.to_string().contains("no_such_kernel"),
                "KernelNotFound message: {e}"
            );
        }
        Err(e) => panic!("load_declared(no_such_kernel): expected KernelNotFound, got {e:?}"),
        Ok(()) => panic!("load_declared(no_such_kernel) found a kernel"),
    }
    register_all_modules();
    for k in ferrocuda_kernels::abi::KERNELS.iter() {
        if let Err(e) = gpu.load_declared(k) {
            panic!(
                "declared kernel {} ({}) does not load: {e}",
                k.name, k.module
            );
        }
    }
    // With SASS for this device's architecture embedded, the modules came from the
    // machine code (no JIT); otherwise from the PTX.
    let (major, minor) = gpu.compute_capability().expect("compute capability");
    let has_sass = |archs: Vec<&str>| {
        archs.iter().any(|a| {
            a.strip_prefix("sm_")
                .and_then(|n| n.parse::<i32>().ok())
                .is_some_and(|n| n / 10 == major && n % 10 <= minor)
        })
    };
    let forced = std::env::var("FERROCUDA_LOAD_PTX").is_ok_and(|v| v == "1");
    for m in ferrocuda::kernels::MODULES {
        if m.domain == "hopper" && major < 9 {
            continue;
        }
        gpu.preload_module(m.prefix).expect("the module loads");
        let expected = if has_sass(m.cubin_archs.to_vec()) && !forced {
            ModuleSource::MachineCode
        } else {
            ModuleSource::Ptx
        };
        assert_eq!(
            gpu.module_source(m.prefix),
            Some(expected),
            "{} on sm_{major}{minor}",
            m.domain
        );
    }
    let loaded = gpu.loaded_modules();
    for m in ferrocuda::kernels::MODULES {
        if m.domain == "hopper" && major < 9 {
            continue;
        }
        assert!(
            loaded
                .iter()
                .any(|l| l.prefix == m.prefix && l.seconds >= 0.0),
            "{} is not listed as loaded: {loaded:?}",
            m.domain
        );
    }
}

/// Modules load by domain: a kernel of one domain loads that domain's module only.
/// Run first in its own process to see it from a fresh device:
/// `cargo test --release --test integration host::a_launch_loads_only_its_domain`.
#[test]
fn a_launch_loads_only_its_domain() {
    let Some(gpu) = gpu_or_skip("a_launch_loads_only_its_domain") else {
        return;
    };
    // Other tests of this process may have loaded modules on this device already; the
    // check holds for whatever this test adds.
    let before = gpu.loaded_modules();
    let mut x = gpu.upload(&[1.0f64, 2.0, 3.0]).expect("upload");
    ferrocuda::blas1::gpu::scal(2.0, &mut x).expect("scal");
    let after = gpu.loaded_modules();
    let added: Vec<&str> = after
        .iter()
        .filter(|l| !before.iter().any(|b| b.prefix == l.prefix))
        .map(|l| l.prefix)
        .collect();
    assert!(
        added.iter().all(|p| *p == "ferrocuda_kernels::blas1"),
        "a blas1 launch loaded {added:?}"
    );
    assert!(
        gpu.module_source("ferrocuda_kernels::blas1").is_some(),
        "blas1 is loaded"
    );
}

#[test]
fn ordinal_past_the_device_count_is_invalid_ordinal() {
    let Some(_gpu) = gpu_or_skip("ordinal_past_the_device_count_is_invalid_ordinal") else {
        return;
    };
    let count = ferrocuda::gpu::count();
    match ferrocuda::gpu::open(1000) {
        Err(ferrocuda::Error::Gpu(HostError::InvalidOrdinal {
            ordinal: 1000,
            count: c,
        })) => {
            assert_eq!(c, count, "InvalidOrdinal reports the device count")
        }
        Err(e) => panic!("open(1000): expected InvalidOrdinal, got {e:?}"),
        Ok(_) => panic!("open(1000) succeeded on a machine with {count} device(s)"),
    }
    match ferrocuda::gpu::open(count) {
        Err(ferrocuda::Error::Gpu(HostError::InvalidOrdinal { .. })) => {}
        Err(e) => panic!("open({count}) (= device count): expected InvalidOrdinal, got {e:?}"),
        Ok(_) => panic!("open({count}) succeeded, but there are only {count} device(s)"),
    }
}

#[test]
fn absurd_allocation_is_out_of_memory() {
    let Some(gpu) = gpu_or_skip("absurd_allocation_is_out_of_memory") else {
        return;
    };
    let bytes = 1usize << 50;
    match gpu.alloc::<u8>(bytes) {
        Err(HostError::OutOfMemory {
            ordinal,
            requested,
            total,
            ..
        }) => {
            assert_eq!(requested, bytes, "OutOfMemory.requested");
            assert_eq!(ordinal, 0, "OutOfMemory.ordinal");
            assert!(
                total > 0,
                "OutOfMemory.total should be the device memory, got {total}"
            );
        }
        Err(e) => panic!("alloc of 2^50 bytes: expected OutOfMemory, got {e:?}"),
        Ok(_) => panic!("alloc of 2^50 bytes succeeded"),
    }
    // A length whose byte count overflows usize.
    match gpu.alloc::<f64>(usize::MAX / 4) {
        Err(HostError::OutOfMemory { requested, .. }) => {
            assert_eq!(
                requested,
                usize::MAX,
                "overflowing byte count is reported as usize::MAX"
            )
        }
        Err(e) => panic!("alloc of usize::MAX / 4 f64: expected OutOfMemory, got {e:?}"),
        Ok(_) => panic!("alloc of usize::MAX / 4 f64 succeeded"),
    }
    // The failure is not sticky: the device still works.
    let mut buf = gpu
        .alloc::<f64>(1000)
        .unwrap_or_else(|e| panic!("alloc after OOM: {e}"));
    gpu::fill(&mut buf, 2.5).unwrap_or_else(|e| panic!("fill after OOM: {e}"));
    let got = buf
        .download()
        .unwrap_or_else(|e| panic!("download after OOM: {e}"));
    assert!(
        got.iter().all(|&v| v == 2.5),
        "fill after an OOM did not land"
    );
}

fn round_trip_case<T: ferrocuda::blas1::Element>(gpu: &Gpu, n: usize) {
    let ctx = format!("round trip {} n={n}", tname::<T>());
    let data = random_vec::<T>(n, seed_for::<T>(n, 100));
    let buf: DeviceBuffer<T> = gpu
        .upload(&data)
        .unwrap_or_else(|e| panic!("{ctx}: upload: {e}"));
    assert_eq!(buf.len(), n, "{ctx}: buffer length");
    assert_eq!(buf.is_empty(), n == 0, "{ctx}: is_empty");
    let back = buf
        .download()
        .unwrap_or_else(|e| panic!("{ctx}: download: {e}"));
    assert_bits_eq(&ctx, &back, &data);

    let mut out = poison::<T>(n);
    buf.copy_to_host(&mut out)
        .unwrap_or_else(|e| panic!("{ctx}: copy_to_host: {e}"));
    assert_bits_eq(&format!("{ctx}: copy_to_host"), &out, &data);

    let mut other = gpu
        .upload(&poison::<T>(n))
        .unwrap_or_else(|e| panic!("{ctx}: upload: {e}"));
    other
        .copy_from_device(&buf)
        .unwrap_or_else(|e| panic!("{ctx}: copy_from_device: {e}"));
    assert_bits_eq(
        &format!("{ctx}: copy_from_device"),
        &other.download().expect("download"),
        &data,
    );

    let zeroed = gpu
        .alloc_zeroed::<T>(n)
        .unwrap_or_else(|e| panic!("{ctx}: alloc_zeroed: {e}"));
    let zeros = zeroed
        .download()
        .unwrap_or_else(|e| panic!("{ctx}: download: {e}"));
    assert!(
        bytemuck::cast_slice::<T, u8>(&zeros)
            .iter()
            .all(|&b| b == 0),
        "{ctx}: alloc_zeroed is not zero"
    );

    // memset_zero on a view clears exactly its elements.
    if n >= 3 {
        let mut buf = gpu.upload(&data).expect("upload");
        let (lo, hi) = (1, n - 1);
        Gpu::memset_zero(&mut buf.view_mut(lo..hi).expect("view"))
            .unwrap_or_else(|e| panic!("{ctx}: memset_zero: {e}"));
        let got = buf.download().expect("download");
        let mut want = data.clone();
        want[lo..hi].fill(bytemuck::Zeroable::zeroed());
        assert_bits_eq(&format!("{ctx}: memset_zero of {lo}..{hi}"), &got, &want);
    }
}

#[test]
fn upload_download_round_trip() {
    let Some(gpu) = gpu_or_skip("upload_download_round_trip") else {
        return;
    };
    for n in [0, 1, 1_000_003] {
        round_trip_case::<f32>(&gpu, n);
        round_trip_case::<f64>(&gpu, n);
        round_trip_case::<ferrocuda::Complex<f32>>(&gpu, n);
        round_trip_case::<ferrocuda::Complex<f64>>(&gpu, n);
    }
}

#[test]
fn copies_with_wrong_lengths_are_dimension_mismatch() {
    let Some(gpu) = gpu_or_skip("copies_with_wrong_lengths_are_dimension_mismatch") else {
        return;
    };
    let data = vec![1.0f64, 2.0, 3.0];
    let mut buf = gpu.upload(&data).unwrap_or_else(|e| panic!("upload: {e}"));
    match buf.copy_from_host(&[1.0, 2.0]) {
        Err(HostError::DimensionMismatch {
            op: "copy_from_host",
            expected: 3,
            found: 2,
            ..
        }) => {}
        other => panic!("copy_from_host of 2 into 3: expected DimensionMismatch, got {other:?}"),
    }
    let mut out = vec![0.0f64; 4];
    match buf.copy_to_host(&mut out) {
        Err(HostError::DimensionMismatch {
            op: "copy_to_host",
            expected: 3,
            found: 4,
            ..
        }) => {}
        other => panic!("copy_to_host of 3 into 4: expected DimensionMismatch, got {other:?}"),
    }
    assert_eq!(
        out, [0.0; 4],
        "copy_to_host wrote into a slice of the wrong length"
    );
    let small = gpu
        .upload(&[9.0f64; 2])
        .unwrap_or_else(|e| panic!("upload: {e}"));
    match buf.copy_from_device(&small) {
        Err(HostError::DimensionMismatch {
            op: "copy_device",
            expected: 3,
            found: 2,
            ..
        }) => {}
        other => panic!("copy_from_device of 2 into 3: expected DimensionMismatch, got {other:?}"),
    }
    assert_eq!(
        buf.download().unwrap_or_else(|e| panic!("download: {e}")),
        data,
        "buffer after failed copies"
    );
    // Copy engine between views.
    let src = gpu
        .upload(&[7.0f64, 8.0, 9.0, 10.0])
        .unwrap_or_else(|e| panic!("upload: {e}"));
    {
        let sv = src.view(2..4).unwrap_or_else(|e| panic!("view: {e}"));
        let mut dv = buf
            .view_mut(0..2)
            .unwrap_or_else(|e| panic!("view_mut: {e}"));
        ferrocuda::gpu::copy_device(&sv, &mut dv)
            .unwrap_or_else(|e| panic!("copy_device on views: {e}"));
    }
    assert_eq!(
        buf.download().unwrap_or_else(|e| panic!("download: {e}")),
        [9.0, 10.0, 3.0],
        "copy_device on views"
    );
}

#[test]
fn event_timer_measures_a_fill() {
    let Some(gpu) = gpu_or_skip("event_timer_measures_a_fill") else {
        return;
    };
    let n = 1 << 24;
    let mut buf = gpu.alloc::<f64>(n).unwrap_or_else(|e| panic!("alloc: {e}"));
    gpu::fill(&mut buf, 0.0).unwrap_or_else(|e| panic!("warm-up fill: {e}"));
    let timer = gpu.timer().unwrap_or_else(|e| panic!("gpu.timer(): {e}"));
    timer
        .start()
        .unwrap_or_else(|e| panic!("timer.start(): {e}"));
    gpu::fill(&mut buf, 1.25).unwrap_or_else(|e| panic!("timed fill: {e}"));
    timer.stop().unwrap_or_else(|e| panic!("timer.stop(): {e}"));
    let ms = timer
        .elapsed_ms()
        .unwrap_or_else(|e| panic!("timer.elapsed_ms(): {e}"));
    eprintln!(
        "fill of 2^24 f64: {ms:.4} ms ({:.0} GB/s)",
        (n * 8) as f64 / ms / 1e6
    );
    assert!(ms > 0.0 && ms < 1000.0, "a fill of 2^24 f64 took {ms} ms");
    let got = buf.download().unwrap_or_else(|e| panic!("download: {e}"));
    assert!(
        got.iter().all(|&v| v == 1.25),
        "the timed fill did not land"
    );

    // time() around a copy-engine copy returns its result and a duration.
    let mut dst = gpu.alloc::<f64>(n).unwrap_or_else(|e| panic!("alloc: {e}"));
    let ((), ms) = timer
        .time(|| ferrocuda::gpu::copy_device(&buf, &mut dst))
        .unwrap_or_else(|e| panic!("timer.time(copy_device): {e}"));
    assert!(ms > 0.0 && ms < 1000.0, "a copy of 2^24 f64 took {ms} ms");
    let got = dst.download().unwrap_or_else(|e| panic!("download: {e}"));
    assert!(
        got.iter().all(|&v| v == 1.25),
        "the timed copy did not land"
    );
}

#[test]
fn graph_capture_replays_the_sequence() {
    let Some(main) = gpu_or_skip("graph_capture_replays_the_sequence") else {
        return;
    };
    // A capture needs its stream to itself: the other tests share the main stream.
    let gpu = main.new_stream().expect("new stream");
    let n = 1_000_003;
    let mut x = gpu
        .upload(&vec![f64::NAN; n])
        .unwrap_or_else(|e| panic!("upload: {e}"));
    let mut y = gpu
        .upload(&vec![0.0f64; n])
        .unwrap_or_else(|e| panic!("upload: {e}"));
    let mut out = gpu
        .upload(&[f64::NAN])
        .unwrap_or_else(|e| panic!("upload: {e}"));

    // x <- 1.5; x <- 2 x; y <- 0.5 x + y; out <- dot(x, y).
    let step =
        |x: &mut DeviceBuffer<f64>, y: &mut DeviceBuffer<f64>, out: &mut DeviceBuffer<f64>| {
            gpu::fill(x, 1.5)?;
            gpu::scal(2.0, x)?;
            gpu::axpy(0.5, x, y)?;
            gpu::dot_into(x, y, out)
        };
    // Once un-captured, so the reduction scratch is sized and the kernels are loaded.
    step(&mut x, &mut y, &mut out).unwrap_or_else(|e| panic!("un-captured run: {e}"));
    assert!(
        y.download().expect("download y").iter().all(|&v| v == 1.5),
        "un-captured run: y != 1.5"
    );
    let d = out.download().expect("download out")[0];
    assert_eq!(d, 3.0 * 1.5 * n as f64, "un-captured run: dot");

    // Reset, capture, and check that capturing ran nothing.
    x.copy_from_host(&vec![f64::NAN; n])
        .unwrap_or_else(|e| panic!("reset x: {e}"));
    y.copy_from_host(&vec![0.0; n])
        .unwrap_or_else(|e| panic!("reset y: {e}"));
    out.copy_from_host(&[f64::NAN])
        .unwrap_or_else(|e| panic!("reset out: {e}"));
    // SAFETY: x, y and out outlive the graph and are used on this stream only.
    let graph = unsafe { gpu.capture(|_| step(&mut x, &mut y, &mut out)) }
        .unwrap_or_else(|e| panic!("capture: {e}"));
    assert!(
        graph.gpu().same_device(&gpu),
        "graph.gpu() is another device"
    );
    assert!(
        y.download().expect("download y").iter().all(|&v| v == 0.0),
        "capturing ran the axpy"
    );
    assert!(
        x.download().expect("download x").iter().all(|v| v.is_nan()),
        "capturing ran the fill"
    );

    for replay in 1..=3 {
        graph
            .launch()
            .unwrap_or_else(|e| panic!("graph.launch() #{replay}: {e}"));
        let ys = y
            .download()
            .unwrap_or_else(|e| panic!("download y after replay {replay}: {e}"));
        let want = 1.5 * replay as f64;
        if let Some(i) = ys.iter().position(|&v| v != want) {
            panic!("after replay {replay}: y[{i}] = {}, want {want}", ys[i]);
        }
        assert!(
            x.download().expect("download x").iter().all(|&v| v == 3.0),
            "after replay {replay}: x != 3"
        );
        let d = out.download().expect("download out")[0];
        assert_eq!(d, 3.0 * want * n as f64, "after replay {replay}: dot");
    }
}

#[test]
fn second_stream_orders_with_wait_for() {
    let Some(gpu) = gpu_or_skip("second_stream_orders_with_wait_for") else {
        return;
    };
    let other = gpu
        .new_stream()
        .unwrap_or_else(|e| panic!("new_stream: {e}"));
    assert!(
        other.same_device(&gpu),
        "new_stream() is on the same device"
    );
    assert_eq!(other.ordinal(), gpu.ordinal(), "new_stream() ordinal");

    let n = 1 << 26;
    for round in 0..3 {
        let value = 2.5 + round as f64;
        let mut y = gpu
            .upload(&vec![f64::NAN; n])
            .unwrap_or_else(|e| panic!("upload: {e}"));
        // Work on the other stream: fill, then a few passes so it takes a while.
        let mut x = other
            .alloc::<f64>(n)
            .unwrap_or_else(|e| panic!("alloc on the other stream: {e}"));
        gpu::fill(&mut x, 0.0).unwrap_or_else(|e| panic!("fill on the other stream: {e}"));
        for _ in 0..8 {
            gpu::scal(3.0, &mut x).unwrap_or_else(|e| panic!("scal on the other stream: {e}"));
        }
        gpu::fill(&mut x, value).unwrap_or_else(|e| panic!("fill on the other stream: {e}"));
        assert!(
            x.gpu().same_device(&other),
            "x belongs to the other stream's device"
        );

        // The first stream waits, then copies with a kernel launched on its own stream.
        gpu.wait_for(&other)
            .unwrap_or_else(|e| panic!("wait_for: {e}"));
        gpu::copy(&x, &mut y).unwrap_or_else(|e| panic!("copy across streams: {e}"));
        let got = y.download().unwrap_or_else(|e| panic!("download: {e}"));
        if let Some(i) = got.iter().position(|&v| v != value) {
            panic!(
                "round {round}: y[{i}] = {} after wait_for, want {value}",
                got[i]
            );
        }
        // x is freed on its own stream after the first stream's copy finished (download
        // above waited for it).
        other
            .synchronize()
            .unwrap_or_else(|e| panic!("synchronize: {e}"));
    }
}

#[test]
fn two_opens_of_one_device_share_it() {
    let Some(a) = gpu_or_skip("two_opens_of_one_device_share_it") else {
        return;
    };
    let b = ferrocuda::gpu::open(0).unwrap_or_else(|e| panic!("second open: {e}"));
    assert!(
        a.same_device(&b),
        "two opens of device 0 are different devices"
    );
    assert!(
        a.same_stream(&b),
        "two opens of device 0 use different streams"
    );
    let x = a.upload(&[1.0f64, 2.0, 3.0]).expect("upload x");
    let mut y = b.upload(&[1.0f64; 3]).expect("upload y");
    gpu::axpy(2.0, &x, &mut y).unwrap_or_else(|e| panic!("axpy across handles: {e}"));
    assert_eq!(y.download().expect("download"), [3.0, 5.0, 7.0]);
    let other = a.new_stream().expect("new stream");
    assert!(other.same_device(&a) && !other.same_stream(&a));
}

#[test]
fn capture_refuses_to_grow_the_scratch_and_graphs_keep_theirs() {
    let Some(main) = gpu_or_skip("capture_refuses_to_grow_the_scratch_and_graphs_keep_theirs")
    else {
        return;
    };
    // A fresh stream has no scratch yet: capturing a reduction first is refused, and
    // the stream works normally afterwards.
    let s = main.new_stream().expect("new stream");
    let n = 100_003;
    let x = s.upload(&vec![1.0f64; n]).expect("upload");
    let mut out = s.upload(&[f64::NAN]).expect("upload");
    // SAFETY: x and out outlive the (never built) graph.
    let refused = unsafe { s.capture(|_| gpu::dot_into(&x, &x, &mut out)) };
    match refused {
        Err(ferrocuda::Error::Gpu(HostError::Capture { reason })) => {
            assert!(reason.contains("run the same work once"), "{reason}")
        }
        Err(e) => panic!("expected a capture error, got {e}"),
        Ok(_) => panic!("capture grew the scratch inside a graph"),
    }
    assert!(
        !s.is_capturing().expect("capture status"),
        "stream left capturing"
    );
    assert_eq!(
        gpu::dot(&x, &x).expect("dot after refused capture"),
        n as f64
    );

    // Capture with the scratch sized, grow the scratch afterwards with a much larger
    // multi-dot, and replay: the graph still writes a scratch that is alive.
    gpu::dot_into(&x, &x, &mut out).expect("sizing run");
    // SAFETY: x and out outlive the graph.
    let graph = unsafe { s.capture(|_| gpu::dot_into(&x, &x, &mut out)) }.expect("capture");
    let k = 64;
    let ys = s.upload(&vec![2.0f64; k * n]).expect("upload ys");
    let mut outs = s.alloc::<f64>(k).expect("alloc");
    gpu::multi_dot(&x, &ys, &mut outs).expect("multi_dot grows the scratch");
    out.copy_from_host(&[f64::NAN]).expect("poison");
    graph.launch().expect("replay");
    assert_eq!(
        out.download().expect("download")[0],
        n as f64,
        "replayed dot"
    );
    assert!(
        outs.download()
            .expect("download")
            .iter()
            .all(|&v| v == 2.0 * n as f64)
    );
}

/// Staged uploads from a reused pageable buffer land in order: each one is seen by the
/// copy queued after it, although the call does not wait.
#[test]
fn staged_uploads_from_a_reused_vec_arrive_in_order() {
    let Some(gpu) = gpu_or_skip("staged_uploads_from_a_reused_vec_arrive_in_order") else {
        return;
    };
    let n = 1 << 16;
    let mut host = vec![0.0f64; n];
    let mut staged = gpu.alloc::<f64>(n).expect("alloc");
    let mut copies = Vec::new();
    for round in 0..8 {
        host.iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = (round * n + i) as f64);
        // SAFETY: `host` is a Vec (pageable memory).
        unsafe { staged.copy_from_host_staged(&host) }.expect("staged upload");
        let mut copy = gpu.alloc::<f64>(n).expect("alloc");
        copy.copy_from_device(&staged).expect("device copy");
        copies.push(copy);
    }
    for (round, copy) in copies.iter().enumerate() {
        let got = copy.download().expect("download");
        assert!(
            got.iter()
                .enumerate()
                .all(|(i, &v)| v == (round * n + i) as f64),
            "round {round}: first value {}",
            got[0]
        );
    }
    // SAFETY: as above.
    match unsafe { staged.copy_from_host_staged(&host[..3]) } {
        Err(HostError::DimensionMismatch {
            op: "copy_from_host_staged",
            expected,
            found: 3,
            ..
        }) if expected == n => {}
        other => panic!("expected DimensionMismatch, got {other:?}"),
    }
}

/// Freed buffers stay in the device's memory pool for reuse (counted as available, not
/// as driver-free), and `trim_memory_pool` gives them back. Other tests share the pool
/// meanwhile, so each observation gets a few attempts.
#[test]
fn freed_memory_stays_in_the_pool_until_trimmed() {
    let Some(gpu) = gpu_or_skip("freed_memory_stays_in_the_pool_until_trimmed") else {
        return;
    };
    let bytes = 256usize << 20;
    let kept = (0..5).any(|_| {
        let buf = gpu.alloc::<u8>(bytes).expect("alloc");
        drop(buf);
        gpu.synchronize().expect("sync");
        let idle = gpu.pool_idle_bytes().expect("idle");
        let (available, total) = gpu.available_memory().expect("available");
        assert!(available <= total, "available {available} of {total}");
        idle >= bytes
    });
    assert!(kept, "the pool never kept a freed {bytes}-byte buffer");
    let trimmed = (0..5).any(|_| {
        gpu.synchronize().expect("sync");
        gpu.trim_memory_pool().expect("trim");
        gpu.pool_idle_bytes().expect("idle") < bytes
    });
    assert!(trimmed, "trim_memory_pool left the pool's memory in it");
}

/// Page-locked buffers given back to the device's cache come back for a request they
/// hold (the same memory; a size no other test asks for, as tests share the cache), and
/// a copy through a cached buffer moves the values.
#[test]
fn pinned_buffers_are_reused_from_the_device_cache() {
    let Some(gpu) = gpu_or_skip("pinned_buffers_are_reused_from_the_device_cache") else {
        return;
    };
    const BYTES: usize = 777_776;
    let a = gpu.take_pinned::<u8>(BYTES).expect("take");
    assert_eq!(a.len(), BYTES);
    let at = a.as_slice().as_ptr() as usize;
    gpu.give_pinned(a);
    let mut b = gpu.take_pinned::<u32>(BYTES / 4).expect("take again");
    assert_eq!(b.len(), BYTES / 4);
    assert_eq!(
        b.as_slice().as_ptr() as usize,
        at,
        "the cached buffer comes back"
    );
    b.as_mut_slice()
        .iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = 3 * i as u32);
    let mut d = gpu.alloc::<u32>(BYTES / 4).expect("alloc");
    // SAFETY: b is not touched until the download below has synchronised.
    unsafe { d.copy_from_host_async(b.as_slice()).expect("upload") };
    let back = d.download().expect("download");
    assert!(back.iter().enumerate().all(|(i, &v)| v == 3 * i as u32));
    gpu.give_pinned(b);
    assert_eq!(gpu.take_pinned::<f64>(0).expect("empty").len(), 0);
}
