//! Vendor libraries (cuSPARSE, cuRAND, cuBLAS, cuSOLVER) behind small safe types: the
//! baselines the library's benchmarks compare its own kernels against. Every raw call
//! lives here, so the rest of the workspace never touches cudarc's `sys` bindings.
//!
//! Each handle is bound to one stream of one [`Gpu`](crate::Gpu); its calls check the
//! lengths and devices of the buffers they are given, so the `unsafe` blocks inside
//! only rely on the vendor function's documented contract. Libraries are loaded at run
//! time; where one is missing, its constructor returns [`crate::Error::Vendor`].

pub mod curand;
pub mod cusparse;
pub mod dense;

use crate::error::{Error, Result};

/// `Ok` where `ok`, else [`Error::Vendor`] with the status as the library names it.
fn check(
    library: &'static str,
    call: &'static str,
    ok: bool,
    status: impl std::fmt::Debug,
) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::Vendor {
            library,
            call,
            status: format!("{status:?}"),
        })
    }
}

/// `Ok` where the library could be loaded (`present`: cudarc's `is_culib_present`,
/// asked first because cudarc panics at the first call into a missing library).
fn loaded(library: &'static str, file: &str, present: bool) -> Result<()> {
    if present {
        Ok(())
    } else {
        Err(Error::Vendor {
            library,
            call: "load",
            status: format!("{file} not found"),
        })
    }
}

/// `v` as a vendor library's 32-bit size or index, else [`Error::InvalidArgument`]
/// naming the value.
fn to_i32(op: &'static str, what: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::InvalidArgument {
        op,
        reason: format!("{what} = {v} exceeds the vendor library's 32-bit sizes"),
    })
}
