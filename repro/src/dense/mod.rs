//! Dense reproductions: the LU factorisations without pivoting of Mißbach (2013).

pub mod thesis;
