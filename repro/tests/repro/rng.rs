//! The "amd" scheme of Mißbach (2013) (`rng`): its quirks on the CPU against a plain
//! SFMT607 window, the GPU kernel against the CPU twin bit for bit, and bad input.

use crate::common::gpu_or_skip;
use ferrocuda::rng::{Mexp, Sfmt};
use ferrocuda_repro::rng::{amd_normals, amd_normals_cpu};

#[test]
fn amd_scheme_quirks() {
    // The seed's scheme: five seeded words, then SFMT607 steps from them.
    let seed = [0x1234u32, 0x5678, 0x9abc, 0xdef0];
    let mut out = vec![0f32; 32];
    amd_normals_cpu(&[seed], 8, &mut out).unwrap();
    // Recompute from a plain SFMT607 window built the scheme's way.
    let mut x = vec![seed];
    for j in 1..5u32 {
        let p = x[x.len() - 1];
        x.push(p.map(|s| 1_812_433_253u32.wrapping_mul(s ^ (s >> 30)).wrapping_add(j)));
    }
    let g = Sfmt::from_state(Mexp::M607, x.clone(), 0).unwrap();
    let mut w = g.clone();
    w.discard_words(5);
    let words: Vec<[u32; 4]> = w.state().to_vec();
    let mut w2 = g.clone();
    w2.discard_words(8);
    let words8: Vec<[u32; 4]> = (0..8)
        .map(|i| if i < 5 { words[i] } else { w2.state()[i - 3] })
        .collect();
    // Pair 0 takes its radius from word 0 and its angle from word 1; pair 1 reuses word 1.
    let u = |x: u32| x as f32 * (1.0 / 4_294_967_296.0);
    for i in 0..4 {
        for k in 0..4 {
            let r = libm::sqrtf(-2.0 * libm::logf(u(words8[i][k])));
            let (s, c) = libm::sincosf(2.0 * std::f32::consts::PI * u(words8[i + 1][k]));
            assert_eq!(
                out[8 * i + k].to_bits(),
                (r * c).to_bits(),
                "pair {i} lane {k}"
            );
            assert_eq!(out[8 * i + 4 + k].to_bits(), (r * s).to_bits());
        }
    }
    assert!(amd_normals_cpu(&[seed], 9, &mut [0.0; 36]).is_err());
    assert!(amd_normals_cpu(&[seed], 8, &mut [0.0; 31]).is_err());
}

#[test]
fn gpu_amd_scheme_matches_cpu_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("gpu_amd_scheme_matches_cpu_bit_for_bit") else {
        return;
    };
    let mut seeder = Sfmt::new(Mexp::M19937, 42);
    for (g, m) in [(1usize, 8usize), (1000, 8), (4097, 2), (300, 5)] {
        let mut raw = vec![0u32; 4 * g];
        seeder.fill_u32(&mut raw);
        let seeds: Vec<[u32; 4]> = raw
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect();
        let mut want = vec![f32::NAN; 4 * m * g];
        amd_normals_cpu(&seeds, m, &mut want).unwrap();
        let dseeds = gpu.upload(&raw).unwrap();
        let mut out = gpu.upload(&vec![f32::NAN; 4 * m * g]).unwrap();
        amd_normals(&dseeds, m, &mut out).unwrap();
        let got: Vec<u32> = out
            .download()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
        assert!(got == want, "{g} generators x {m}: GPU and CPU bits differ");
    }
}

#[test]
fn gpu_amd_bad_input_is_an_error() {
    let Some(gpu) = gpu_or_skip("gpu_amd_bad_input_is_an_error") else {
        return;
    };
    let seeds = gpu.upload(&[1u32, 2, 3]).unwrap();
    let mut z = gpu.upload(&[f32::NAN; 32]).unwrap();
    assert!(
        amd_normals(&seeds, 8, &mut z).is_err(),
        "seeds not whole words"
    );
    let seeds = gpu.upload(&[1u32, 2, 3, 4]).unwrap();
    assert!(amd_normals(&seeds, 9, &mut z).is_err(), "mul_factor 9");
    assert!(
        amd_normals(&seeds, 7, &mut z).is_err(),
        "out of the wrong length"
    );
    assert!(
        z.download().unwrap().iter().all(|v| v.is_nan()),
        "nothing written"
    );
}
