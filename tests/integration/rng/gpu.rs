//! SFMT19937 streams on the GPU against the CPU twin, bit for bit: the reference outputs
//! through a single GPU stream, many jump-ahead streams (stream `i` on the GPU = stream
//! `i` on the CPU), consecutive launches continuing each stream, the normals, the seed's
//! "amd" kernel, and bad input. Outputs are poisoned before each run so that unwritten
//! elements show. Each test skips visibly without a GPU (`FERROCUDA_REQUIRE_GPU=1` turns
//! that into a failure).

use crate::common;

use common::gpu_or_skip;
use ferrocuda::gpu::DeviceSlice;
use ferrocuda::rng::gpu::{SfmtStreams, max_threads};
use ferrocuda::rng::{Mexp, Sfmt, cpu, jump};

const POISON_U32: u32 = 0xDEAD_BEEF;

fn parse<T: std::str::FromStr>(text: &str) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse().expect("decimal"))
        .collect()
}

fn first_mismatch<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T]) -> Option<String> {
    assert_eq!(got.len(), want.len(), "lengths");
    got.iter().zip(want).position(|(a, b)| a != b).map(|i| {
        format!(
            "index {i} of {}: got {:?}, want {:?}",
            got.len(),
            got[i],
            want[i]
        )
    })
}

#[test]
fn gpu_single_stream_reproduces_the_reference_outputs() {
    let Some(gpu) = gpu_or_skip("gpu_single_stream_reproduces_the_reference_outputs") else {
        return;
    };
    let want: Vec<u32> = parse(include_str!(
        "../../../data/sfmt/sfmt19937_init_gen_rand_1234_first1000.txt"
    ));
    let mut dev = SfmtStreams::new(&gpu, &[Sfmt::new(Mexp::M19937, 1234)]).unwrap();
    let mut out = gpu.upload(&vec![POISON_U32; dev.len_u32(2)]).unwrap();
    dev.fill_u32(2, &mut out).unwrap();
    let got = out.download().unwrap();
    assert_eq!(first_mismatch(&got[..1000], &want), None, "u32, seed 1234");

    let want64: Vec<u64> = parse(include_str!(
        "../../../data/sfmt/sfmt19937_init_gen_rand_4321_first1000_u64.txt"
    ));
    let mut dev = SfmtStreams::new(&gpu, &[Sfmt::new(Mexp::M19937, 4321)]).unwrap();
    let mut out = gpu.upload(&vec![POISON_U32; dev.len_u32(4)]).unwrap();
    dev.fill_u32(4, &mut out).unwrap();
    let got = out.download().unwrap();
    let got64: Vec<u64> = got
        .chunks_exact(2)
        .take(1000)
        .map(|p| p[0] as u64 | (p[1] as u64) << 32)
        .collect();
    assert_eq!(first_mismatch(&got64, &want64), None, "u64 view, seed 4321");
}

#[test]
fn gpu_streams_match_cpu_streams_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("gpu_streams_match_cpu_streams_bit_for_bit") else {
        return;
    };
    let base = Sfmt::from_key(Mexp::M19937, &[0x1234, 0x5678, 0x9abc, 0xdef0]);
    for (count, threads, blocks) in [
        (1usize, 64u32, 3usize),
        (3, 64, 1),
        (33, 32, 2),
        (65, 64, 2),
        (200, 88, 1),
        (300, max_threads(&gpu).unwrap(), 1),
        (257, 64, 3),
    ] {
        let streams = jump::streams(&base, count, 50).unwrap();
        let mut dev = SfmtStreams::new(&gpu, &streams)
            .unwrap()
            .with_threads(threads)
            .unwrap();
        let mut out = gpu.upload(&vec![POISON_U32; dev.len_u32(blocks)]).unwrap();
        dev.fill_u32(blocks, &mut out).unwrap();
        let got = out.download().unwrap();
        let mut host = streams.clone();
        let mut want = vec![0u32; got.len()];
        cpu::fill_u32(&mut host, blocks, &mut want).unwrap();
        assert_eq!(
            first_mismatch(&got, &want),
            None,
            "{count} streams, {threads} threads, {blocks} blocks"
        );
        // Stream i on the GPU is stream i's own serial sequence.
        for i in [0, count / 2, count - 1] {
            let mut g = streams[i].clone();
            let serial: Vec<u32> = (0..blocks * 624).map(|_| g.next_u32()).collect();
            assert_eq!(
                cpu::stream_of(&got, count, 4, i),
                serial,
                "stream {i} of {count}"
            );
        }
        // The device state continues: a second launch gives the next blocks.
        assert_eq!(dev.to_host().unwrap(), host, "state after the launch");
        let mut out2 = gpu.upload(&vec![POISON_U32; dev.len_u32(1)]).unwrap();
        dev.fill_u32(1, &mut out2).unwrap();
        let mut want2 = vec![0u32; out2.len()];
        cpu::fill_u32(&mut host, 1, &mut want2).unwrap();
        assert_eq!(
            first_mismatch(&out2.download().unwrap(), &want2),
            None,
            "second launch, {count} streams"
        );
    }
}

#[test]
fn gpu_normals_match_cpu_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("gpu_normals_match_cpu_bit_for_bit") else {
        return;
    };
    let streams = jump::streams(&Sfmt::new(Mexp::M19937, 5489), 130, 64).unwrap();
    let blocks = 2;
    let mut dev = SfmtStreams::new(&gpu, &streams).unwrap();
    let n = dev.len_u32(blocks);
    let mut z = gpu.upload(&vec![f32::NAN; n]).unwrap();
    dev.fill_normal_f32(blocks, &mut z).unwrap();
    let got: Vec<u32> = z.download().unwrap().iter().map(|v| v.to_bits()).collect();
    let mut want = vec![0f32; n];
    cpu::fill_normal_f32(&mut streams.clone(), blocks, &mut want).unwrap();
    let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
    assert_eq!(first_mismatch(&got, &want), None, "f32 normals");

    let mut dev = SfmtStreams::new(&gpu, &streams).unwrap();
    let mut z = gpu.upload(&vec![f64::NAN; n / 2]).unwrap();
    dev.fill_normal_f64(blocks, &mut z).unwrap();
    let got: Vec<u64> = z.download().unwrap().iter().map(|v| v.to_bits()).collect();
    let mut want = vec![0f64; n / 2];
    cpu::fill_normal_f64(&mut streams.clone(), blocks, &mut want).unwrap();
    let want: Vec<u64> = want.iter().map(|v| v.to_bits()).collect();
    assert_eq!(first_mismatch(&got, &want), None, "f64 normals");
}

#[test]
fn gpu_bad_input_is_an_error() {
    let Some(gpu) = gpu_or_skip("gpu_bad_input_is_an_error") else {
        return;
    };
    let s = Sfmt::new(Mexp::M19937, 1);
    let mut dev = SfmtStreams::new(&gpu, std::slice::from_ref(&s)).unwrap();
    let mut out = gpu.upload(&vec![POISON_U32; 623]).unwrap();
    assert!(dev.fill_u32(1, &mut out).is_err(), "short output");
    assert!(
        out.download().unwrap().iter().all(|&v| v == POISON_U32),
        "nothing written"
    );
    let mut inside = s.clone();
    inside.next_u32();
    assert!(SfmtStreams::new(&gpu, &[inside]).is_err(), "inside a block");
    assert!(
        SfmtStreams::new(&gpu, &[Sfmt::new(Mexp::M607, 1)]).is_err(),
        "SFMT607"
    );
    assert!(SfmtStreams::new(&gpu, &[]).is_err(), "no streams");
    assert!(
        SfmtStreams::new(&gpu, std::slice::from_ref(&s))
            .unwrap()
            .with_threads(0)
            .is_err()
    );
    assert!(
        SfmtStreams::new(&gpu, std::slice::from_ref(&s))
            .unwrap()
            .with_threads(max_threads(&gpu).unwrap() + 1)
            .is_err()
    );
}

/// A block count beyond any device: `len_u32` saturates instead of wrapping, so the
/// allocation of that length is an error, and `fill_u32` refuses a shorter buffer.
#[test]
fn gpu_oversized_block_counts_are_errors() {
    let Some(gpu) = gpu_or_skip("gpu_oversized_block_counts_are_errors") else {
        return;
    };
    let mut dev = SfmtStreams::new(&gpu, &[Sfmt::new(Mexp::M19937, 1)]).unwrap();
    let huge = usize::MAX / 100;
    assert_eq!(dev.len_u32(huge), usize::MAX);
    assert!(gpu.alloc::<u32>(dev.len_u32(huge)).is_err());
    let mut out = gpu.alloc::<u32>(dev.len_u32(1)).unwrap();
    assert!(dev.fill_u32(huge, &mut out).is_err());
}
