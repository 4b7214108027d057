//! Vendor libraries as baselines: the benchmarks run them on the same matrices and
//! vectors, in the same run, as ferrocuda's own kernels. They are loaded at run time;
//! where a library is missing, its constructor returns [`crate::Error::Vendor`].

pub mod curand;
pub mod cusparse;
pub mod dense;
