//! CPU-side BLAS-1 (rayon, all cores): `cargo bench --bench blas1_cpu`. The GPU
//! comparison is `ferrocuda bench blas1`, which times the GPU with device events.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferrocuda::Complex;
use ferrocuda::blas1::cpu;
use ferrocuda::rng::random_vector;

fn blas1(c: &mut Criterion) {
    let n = 1 << 22;
    let x = random_vector::<f64>(n, 1);
    let mut y = random_vector::<f64>(n, 2);
    let mut group = c.benchmark_group("blas1_cpu_f64");
    group.throughput(Throughput::Bytes((3 * n * 8) as u64));
    group.bench_function("axpy", |b| b.iter(|| cpu::axpy(0.5, &x, &mut y)));
    group.throughput(Throughput::Bytes((2 * n * 8) as u64));
    group.bench_function("dot", |b| b.iter(|| cpu::dot(&x, &y)));
    group.finish();

    let xc = random_vector::<Complex<f64>>(n, 3);
    let yc = random_vector::<Complex<f64>>(n, 4);
    let mut group = c.benchmark_group("blas1_cpu_c64");
    group.throughput(Throughput::Bytes((2 * n * 16) as u64));
    group.bench_function("dot", |b| b.iter(|| cpu::dot(&xc, &yc)));
    group.finish();
}

criterion_group!(benches, blas1);
criterion_main!(benches);
