//! The ROCK4 coefficient tables (Abdulle 2002), embedded at build time from
//! `data/rock4/rock4_coefficients.json` (a copy of the project's validated data file)
//! and parsed once.
//!
//! Indexing is kept in one place ([`Tables::degree`]): the source's 1-based degree index
//! `mz` and `recf` block start `mr` become 0-based row `mz - 1` and block start `mr - 1`.

use std::sync::OnceLock;

use serde::Deserialize;

const JSON: &str = include_str!("../../data/rock4/rock4_coefficients.json");

pub use ferrocuda_kernels::rock4::{DEGREES, MAX_STAGES};
/// Length of the recurrence-coefficient table `recf`.
pub const RECF_LEN: usize = 4382;

/// The tables as stored, 0-based: row `i` is the source's degree index `mz = i + 1`.
#[derive(Debug, Deserialize)]
pub struct Tables {
    /// Recurrence degrees `m` (1..20, 22, 24, ..., 148); the method has `m + 4` stages.
    pub ms: Vec<usize>,
    /// Finishing procedure, `(a21, a31, a32, a41, a42, a43)` per degree.
    pub fpa: Vec<[f64; 6]>,
    /// Finishing weights `(b1, b2, b3, b4)` per degree.
    pub fpb: Vec<[f64; 4]>,
    /// Embedded weights `(be1, .., be5)` per degree (`be5` weights `f(y_{n+1})`).
    pub fpbe: Vec<[f64; 5]>,
    /// Recurrence coefficients: degree `i` owns `2 ms[i] - 1` entries from
    /// [`Tables::block_start`]`(i)`: `a_1`, then `(a_j, c_j)` for `j = 2..m`.
    pub recf: Vec<f64>,
    #[serde(skip)]
    starts: Vec<usize>,
}

/// One degree of the method: what a step needs from the tables.
#[derive(Debug, Clone, Copy)]
pub struct Degree<'a> {
    /// 0-based degree index (the source's `mz - 1`).
    pub index: usize,
    /// Recurrence stages `m`.
    pub m: usize,
    /// The `2 m - 1` recurrence coefficients of this degree.
    pub recf: &'a [f64],
    /// `(a21, a31, a32, a41, a42, a43)`.
    pub fpa: &'a [f64; 6],
    /// `(b1, .., b4)`.
    pub fpb: &'a [f64; 4],
    /// `(be1, .., be5)`.
    pub fpbe: &'a [f64; 5],
}

impl Degree<'_> {
    /// Stages per step, `s = m + 4` (also the number of f evaluations per attempt).
    pub fn stages(&self) -> usize {
        self.m + 4
    }
    /// `a_1`.
    pub fn a1(&self) -> f64 {
        self.recf[0]
    }
    /// `(a_j, c_j)` for `j = 2..=m` (the coefficient on `g_{j-2}` is `-c_j`).
    pub fn ac(&self, j: usize) -> (f64, f64) {
        let o = 2 * (j - 2) + 1;
        (self.recf[o], self.recf[o + 1])
    }
}

impl Tables {
    /// 0-based start of degree `i`'s block in `recf` (`sum_{k<i} (2 ms[k] - 1)`).
    pub fn block_start(&self, i: usize) -> usize {
        self.starts[i]
    }

    /// Degree `i` (0-based), `i < DEGREES`.
    pub fn degree(&self, i: usize) -> Degree<'_> {
        let m = self.ms[i];
        let start = self.starts[i];
        Degree {
            index: i,
            m,
            recf: &self.recf[start..start + 2 * m - 1],
            fpa: &self.fpa[i],
            fpb: &self.fpb[i],
            fpbe: &self.fpbe[i],
        }
    }

    /// The degree for a step: the first tabulated `m >= m0` (`mdegre`), `m0 >= 1`;
    /// `m0 > 148` gives the largest degree.
    pub fn degree_for(&self, m0: usize) -> Degree<'_> {
        self.degree(ferrocuda_kernels::rock4::degree_index(m0, |i| self.ms[i]))
    }
}

/// The tables, parsed on first use. The embedded file is checked by the tests (shapes,
/// order conditions); a malformed copy is a build defect, hence the panic.
pub fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut t: Tables =
            serde_json::from_str(JSON).expect("embedded rock4_coefficients.json is valid");
        assert!(
            t.ms.len() == DEGREES
                && t.fpa.len() == DEGREES
                && t.fpb.len() == DEGREES
                && t.fpbe.len() == DEGREES
                && t.recf.len() == RECF_LEN,
            "embedded rock4_coefficients.json has the wrong shape"
        );
        let mut start = 0;
        t.starts =
            t.ms.iter()
                .map(|&m| {
                    let s = start;
                    start += 2 * m - 1;
                    s
                })
                .collect();
        assert_eq!(start, RECF_LEN, "sum(2 ms - 1) != len(recf)");
        t
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers of the JSON array `key`, as decimal text.
    fn decimals<'a>(key: &str) -> Vec<&'a str> {
        let at = JSON.find(&format!("\"{key}\"")).expect("key in the file");
        let open = at + JSON[at..].find('[').expect("array");
        let mut depth = 0;
        let mut end = open;
        for (i, ch) in JSON[open..].char_indices() {
            match ch {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        JSON[open..end]
            .split(|c: char| c == '[' || c == ']' || c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Every coefficient is the correctly rounded value of its decimal in the file (what
    /// `str::parse` gives), whatever serde_json features the rest of a build enables.
    #[test]
    fn coefficients_are_the_correctly_rounded_decimals() {
        let t = tables();
        for (key, parsed) in [
            ("fpa", t.fpa.concat()),
            ("fpb", t.fpb.concat()),
            ("fpbe", t.fpbe.concat()),
            ("recf", t.recf.clone()),
        ] {
            let text = decimals(key);
            assert_eq!(text.len(), parsed.len(), "{key}");
            for (i, (d, v)) in text.iter().zip(&parsed).enumerate() {
                let exact: f64 = d.parse().expect("a decimal number");
                assert_eq!(
                    exact.to_bits(),
                    v.to_bits(),
                    "{key}[{i}] = {d}: parsed {v:e}"
                );
            }
        }
    }
}
