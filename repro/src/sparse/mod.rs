//! Sparse reproductions: the SpMV variants of Kautz (2011).

pub mod gpu_thesis;
