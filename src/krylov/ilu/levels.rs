//! Level schedules of ILU(0): which (block) rows of the factorisation and of the two
//! triangular solves may be computed at the same time, for the device version.
//!
//! Row `i` of the factorisation reads the final rows `k < i` that it stores (`(i, k)` in
//! the pattern); row `i` of the forward solve reads the same rows. So with
//! `level(i) = 1 + max level(k)` over stored `k < i` (0 where there is none), the rows of
//! one level depend only on rows of earlier levels: one launch per level computes them in
//! any order and, since each row's arithmetic is the shared per-row function of
//! `ferrocuda_kernels::precond::ilu`, the factors and solves equal the sequential CPU
//! ones bit for bit. The back solve reads the stored `j > i` instead: its levels count
//! from the last row, `level(i) = 1 + max level(j)` over stored `j > i`.
//!
//! Why levels and not Chow-Patel's fixed-point sweeps: levels give the exact ILU(0), so
//! the device's factors equal the CPU oracle's bitwise (tests compare with `==`), GMRES
//! takes the same steps on both, and a breakdown names the same row (the first row that
//! breaks down depends only on earlier rows, which are identical). Chow-Patel sweeps
//! converge to the factors only approximately and their result depends on the sweep
//! count. The price is the number of launches: one per level, from 1 (diagonal) to `n`
//! (a chain such as a tridiagonal matrix); a 5-point `m x m` grid in natural order has
//! `2 m - 1`.

use crate::error::{Error, Result};
use crate::sparse::Index;

/// The rows of a triangular dependency graph grouped into levels: level `l` is
/// `rows()[level_ptr()[l]..level_ptr()[l + 1]]`, rows increasing within a level; every
/// row appears once, each after all the rows it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelSchedule {
    rows: Vec<u32>,
    level_ptr: Vec<usize>,
}

impl LevelSchedule {
    /// Levels of the factorisation and of the forward solve: row `i` depends on the
    /// columns `col_idx[row_ptr[i]..diag[i]]` (its strictly lower part). `diag[i]` is the
    /// slot of row `i`'s diagonal, `row_ptr` has `n + 1` offsets; columns of the strictly
    /// lower part must be `< i` (checked).
    pub fn lower(row_ptr: &[usize], col_idx: &[Index], diag: &[usize]) -> Result<Self> {
        let n = Self::check(row_ptr, col_idx, diag)?;
        let mut level = vec![0u32; n];
        for i in 0..n {
            let mut l = 0u32;
            for &k in &col_idx[row_ptr[i]..diag[i]] {
                let k = k as usize;
                if k >= i {
                    return Err(Self::bad(format!(
                        "row {i}: column {k} stored before the diagonal slot {}",
                        diag[i]
                    )));
                }
                l = l.max(level[k] + 1);
            }
            level[i] = l;
        }
        Ok(Self::group(&level))
    }

    /// Levels of the back solve: row `i` depends on the columns
    /// `col_idx[diag[i] + 1..row_ptr[i + 1]]` (its strictly upper part), which must be
    /// `> i` (checked); level 0 holds the rows that depend on none.
    pub fn upper(row_ptr: &[usize], col_idx: &[Index], diag: &[usize]) -> Result<Self> {
        let n = Self::check(row_ptr, col_idx, diag)?;
        let mut level = vec![0u32; n];
        for i in (0..n).rev() {
            let mut l = 0u32;
            for &j in &col_idx[diag[i] + 1..row_ptr[i + 1]] {
                let j = j as usize;
                if j <= i || j >= n {
                    return Err(Self::bad(format!(
                        "row {i}: column {j} stored after the diagonal slot {}",
                        diag[i]
                    )));
                }
                l = l.max(level[j] + 1);
            }
            level[i] = l;
        }
        Ok(Self::group(&level))
    }

    /// The rows, level after level.
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }

    /// Offsets of the levels in [`Self::rows`] (`n_levels + 1` of them).
    pub fn level_ptr(&self) -> &[usize] {
        &self.level_ptr
    }

    /// Number of levels (launches per pass on the device); 0 for no rows.
    pub fn n_levels(&self) -> usize {
        self.level_ptr.len() - 1
    }

    /// The rows of level `l`.
    pub fn level(&self, l: usize) -> &[u32] {
        &self.rows[self.level_ptr[l]..self.level_ptr[l + 1]]
    }

    /// The number of rows of the largest level (the widest launch).
    pub fn max_width(&self) -> usize {
        self.level_ptr
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    fn bad(reason: String) -> Error {
        Error::InvalidArgument {
            op: "LevelSchedule",
            reason,
        }
    }

    /// `n` after checking the shapes (a schedule is built from the factors' own pattern,
    /// so these only guard against misuse).
    fn check(row_ptr: &[usize], col_idx: &[Index], diag: &[usize]) -> Result<usize> {
        let n = diag.len();
        if row_ptr.len() != n + 1 || row_ptr[n] > col_idx.len() || n > u32::MAX as usize {
            return Err(Self::bad(format!(
                "{} row offsets and {} diagonal slots for {} columns",
                row_ptr.len(),
                n,
                col_idx.len()
            )));
        }
        for i in 0..n {
            if row_ptr[i] > row_ptr[i + 1] || diag[i] < row_ptr[i] || diag[i] >= row_ptr[i + 1] {
                return Err(Self::bad(format!(
                    "row {i}: diagonal slot {} outside {}..{}",
                    diag[i],
                    row_ptr[i],
                    row_ptr[i + 1]
                )));
            }
        }
        Ok(n)
    }

    /// A counting sort of the rows by level (stable: rows increasing within a level).
    fn group(level: &[u32]) -> Self {
        let n_levels = level.iter().map(|&l| l as usize + 1).max().unwrap_or(0);
        let mut level_ptr = vec![0usize; n_levels + 1];
        for &l in level {
            level_ptr[l as usize + 1] += 1;
        }
        for l in 0..n_levels {
            level_ptr[l + 1] += level_ptr[l];
        }
        let mut next = level_ptr.clone();
        let mut rows = vec![0u32; level.len()];
        for (i, &l) in level.iter().enumerate() {
            rows[next[l as usize]] = i as u32;
            next[l as usize] += 1;
        }
        Self { rows, level_ptr }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pattern of an `n x n` matrix given per row (columns increasing, diagonal included).
    fn pattern(rows: &[Vec<usize>]) -> (Vec<usize>, Vec<Index>, Vec<usize>) {
        let (mut ptr, mut col, mut diag) = (vec![0], vec![], vec![]);
        for (i, r) in rows.iter().enumerate() {
            for &c in r {
                if c == i {
                    diag.push(col.len());
                }
                col.push(c as Index);
            }
            ptr.push(col.len());
        }
        (ptr, col, diag)
    }

    /// Every dependency sits in an earlier level, every row once.
    fn assert_valid(s: &LevelSchedule, p: &(Vec<usize>, Vec<Index>, Vec<usize>), lower: bool) {
        let (ptr, col, diag) = p;
        let n = diag.len();
        let mut level_of = vec![usize::MAX; n];
        for l in 0..s.n_levels() {
            assert!(!s.level(l).is_empty(), "level {l} empty");
            assert!(s.level(l).windows(2).all(|w| w[0] < w[1]));
            for &i in s.level(l) {
                assert_eq!(level_of[i as usize], usize::MAX, "row {i} twice");
                level_of[i as usize] = l;
            }
        }
        for i in 0..n {
            let deps = if lower {
                &col[ptr[i]..diag[i]]
            } else {
                &col[diag[i] + 1..ptr[i + 1]]
            };
            for &k in deps {
                assert!(level_of[k as usize] < level_of[i], "row {i} on {k}");
            }
        }
    }

    #[test]
    fn diagonal_chain_and_grid() {
        let diag: Vec<Vec<usize>> = (0..5).map(|i| vec![i]).collect();
        let p = pattern(&diag);
        let s = LevelSchedule::lower(&p.0, &p.1, &p.2).unwrap();
        assert_eq!((s.n_levels(), s.max_width()), (1, 5));
        assert_eq!(
            LevelSchedule::upper(&p.0, &p.1, &p.2).unwrap().n_levels(),
            1
        );

        let tri: Vec<Vec<usize>> = (0..6)
            .map(|i: usize| (i.saturating_sub(1)..(i + 2).min(6)).collect())
            .collect();
        let p = pattern(&tri);
        let lo = LevelSchedule::lower(&p.0, &p.1, &p.2).unwrap();
        assert_eq!(lo.rows(), &[0, 1, 2, 3, 4, 5]);
        assert_eq!(lo.n_levels(), 6);
        let up = LevelSchedule::upper(&p.0, &p.1, &p.2).unwrap();
        assert_eq!(up.rows(), &[5, 4, 3, 2, 1, 0]);
        assert_valid(&up, &p, false);

        // A 5-point m x m grid: anti-diagonals, 2 m - 1 levels both ways.
        let m = 7;
        let grid: Vec<Vec<usize>> = (0..m * m)
            .map(|i| {
                let (x, y) = (i % m, i / m);
                let mut r = vec![i];
                if y > 0 {
                    r.push(i - m);
                }
                if x > 0 {
                    r.push(i - 1);
                }
                if x + 1 < m {
                    r.push(i + 1);
                }
                if y + 1 < m {
                    r.push(i + m);
                }
                r.sort();
                r
            })
            .collect();
        let p = pattern(&grid);
        let lo = LevelSchedule::lower(&p.0, &p.1, &p.2).unwrap();
        assert_eq!((lo.n_levels(), lo.max_width()), (2 * m - 1, m));
        assert_valid(&lo, &p, true);
        let up = LevelSchedule::upper(&p.0, &p.1, &p.2).unwrap();
        assert_eq!(up.n_levels(), 2 * m - 1);
        assert_valid(&up, &p, false);
    }

    #[test]
    fn random_patterns_are_valid() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(3);
        for &n in &[1usize, 2, 3, 31, 32, 33, 257] {
            let rows: Vec<Vec<usize>> = (0..n)
                .map(|i| {
                    let mut r: Vec<usize> = (0..n)
                        .filter(|&j| j == i || rng.random_bool((3.0 / n as f64).min(1.0)))
                        .collect();
                    r.dedup();
                    r
                })
                .collect();
            let p = pattern(&rows);
            assert_valid(&LevelSchedule::lower(&p.0, &p.1, &p.2).unwrap(), &p, true);
            assert_valid(&LevelSchedule::upper(&p.0, &p.1, &p.2).unwrap(), &p, false);
        }
        let empty = LevelSchedule::lower(&[0], &[], &[]).unwrap();
        assert_eq!((empty.n_levels(), empty.max_width()), (0, 0));
    }

    #[test]
    fn bad_patterns_are_errors() {
        // Row 1 stores column 2 before its diagonal slot.
        let (ptr, col, diag) = (vec![0, 1, 3, 4], vec![0, 2, 1, 2], vec![0, 2, 3]);
        let e = LevelSchedule::lower(&ptr, &col, &diag).unwrap_err();
        assert!(e.to_string().contains("row 1"), "{e}");
        let e = LevelSchedule::lower(&[0, 1], &[0], &[1]).unwrap_err();
        assert!(e.to_string().contains("row 0"), "{e}");
        assert!(LevelSchedule::upper(&[0, 2], &[0], &[0]).is_err());
    }
}
