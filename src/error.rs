//! The error type of the toolkit's public API.

/// Everything a ferrocuda call can report. The GPU runtime's errors come wrapped in
/// [`Error::Gpu`]; the others name the operation and the offending value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure in the GPU runtime (no device, driver call, launch, memory).
    #[error(transparent)]
    Gpu(ferrocuda_host::Error),
    /// A sparse-matrix failure: invalid arrays, a Matrix Market parse error, a matrix
    /// that is not a block stencil, ... (its out-of-memory case converts into
    /// [`Error::OutOfHostMemory`]).
    #[error(transparent)]
    Sparse(crate::sparse::SparseError),
    /// Operand lengths that do not fit together.
    #[error("{op}: {what} has length {found}, expected {expected}")]
    DimensionMismatch {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: &'static str,
        /// Length required.
        expected: usize,
        /// Length given.
        found: usize,
    },
    /// An operand that must not be empty.
    #[error("{op}: {what} must not be empty")]
    Empty {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: &'static str,
    },
    /// Operands on different devices.
    #[error("{op}: {what} lives on device {found}, but the operation runs on device {expected}")]
    WrongDevice {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: &'static str,
        /// Device of the first operand.
        expected: usize,
        /// Device of this operand.
        found: usize,
    },
    /// A vendor library (cuSPARSE, cuRAND, ...) is missing or a call into it failed.
    #[error("{library}: {call}: {status}")]
    Vendor {
        /// The library.
        library: &'static str,
        /// The call, or "load" when the library is missing.
        call: &'static str,
        /// What it returned.
        status: String,
    },
    /// A matrix with an exactly zero pivot: `column` (0-based) of the factorisation.
    #[error("{op}: the matrix is singular: the pivot of column {column} (0-based) is exactly zero")]
    Singular {
        /// The operation.
        op: &'static str,
        /// The first column whose pivot was zero.
        column: usize,
    },
    /// A matrix that must be square.
    #[error("{op}: the matrix is {rows} x {cols}, not square")]
    NotSquare {
        /// The operation.
        op: &'static str,
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// A host allocation larger than this process may make (a size from a user or a
    /// file); see [`crate::alloc`].
    #[error("{what} needs {requested} bytes ({}), {}", gib(*requested), match limit {
        Some(l) => format!("more than the {l} bytes ({}) of host memory this process may still allocate ({bound})", gib(*l as u128)),
        None => format!("more than {bound}"),
    })]
    OutOfHostMemory {
        /// What was to be allocated, with its dimensions.
        what: String,
        /// Bytes requested (exact, also beyond `usize`).
        requested: u128,
        /// Bytes the binding limit allows, where known.
        limit: Option<u64>,
        /// Which limit binds.
        bound: &'static str,
    },
    /// A device allocation larger than the device's free memory (a size from a user or a
    /// file), refused before allocating; see [`crate::alloc::check_device_bytes`].
    #[error(
        "{what} needs {requested} bytes ({}) of GPU memory, more than the {free} bytes ({}) free on device {ordinal} ({total} bytes in all)",
        gib(*requested),
        gib(*free as u128)
    )]
    OutOfDeviceMemory {
        /// What was to be allocated, with its dimensions.
        what: String,
        /// Bytes requested (exact, also beyond `usize`).
        requested: u128,
        /// Bytes free on the device when asked.
        free: usize,
        /// Bytes of the device.
        total: usize,
        /// Device ordinal.
        ordinal: usize,
    },
    /// A NaN or infinity where only finite values are allowed, or a value that does not
    /// fit the working precision; the entry is named (0-based).
    #[error("{op}: {what}[{row}, {col}] = {value:e} (0-based row, column): {reason}")]
    NonFinite {
        /// The operation.
        op: &'static str,
        /// Which operand ("A", "B", ...).
        what: &'static str,
        /// Row of the entry.
        row: usize,
        /// Column of the entry.
        col: usize,
        /// The value as given (in `f64`).
        value: f64,
        /// Why it is refused.
        reason: String,
    },
    /// An exactly zero pivot of a factorisation without row interchanges. Unlike
    /// [`Error::Singular`] this says nothing about the matrix: a nonsingular matrix with
    /// a zero on its diagonal fails this way, and partial pivoting factors it.
    #[error(
        "{op}: zero pivot without pivoting in column {column} (0-based): the factorisation without row interchanges breaks down there, which does not mean that the matrix is singular; partial pivoting avoids it"
    )]
    ZeroPivot {
        /// The operation.
        op: &'static str,
        /// The first column whose pivot was zero.
        column: usize,
    },
    /// A matrix singular to working precision: its estimated reciprocal condition
    /// number (1-norm, LAPACK `gecon`) is below the machine epsilon of the working
    /// precision, so a computed solution may have no correct digit.
    #[error(
        "{op}: the matrix is singular to working precision: its estimated reciprocal condition number rcond = {rcond:.3e} (1-norm) is below the {precision} machine epsilon {eps:.3e}, so a solution may have no correct digit"
    )]
    SingularToWorkingPrecision {
        /// The operation.
        op: &'static str,
        /// The estimate of `1 / (||A||_1 ||A^{-1}||_1)`.
        rcond: f64,
        /// Machine epsilon of the working precision.
        eps: f64,
        /// `"f32"` or `"f64"`.
        precision: &'static str,
    },
    /// An ODE integration that stopped before its end for a reason other than the
    /// caller's step budget (e.g. the step size fell below the smallest allowed); the
    /// report of what was done comes with it.
    #[error("{op}: {reason}")]
    IntegrationFailed {
        /// The operation.
        op: &'static str,
        /// What happened, with the time, step size and spectral radius.
        reason: String,
        /// The steps taken up to the failure.
        report: Box<crate::rock4::Rock4Report>,
    },
    /// Another rank of a distributed run failed (returned an error, panicked, or timed
    /// out waiting for its peers), so this rank's communication cannot complete: it ends
    /// with this error instead of waiting forever. `reason` is the failed rank's own
    /// error.
    #[error("{op}: rank {rank} failed: {reason}")]
    RankFailed {
        /// The operation that could not complete.
        op: &'static str,
        /// The rank that failed first.
        rank: usize,
        /// Its error.
        reason: String,
    },
    /// An argument outside its valid range.
    #[error("{op}: {reason}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong, with the value.
        reason: String,
    },
}

/// The runtime's errors, except that a vendor library's failure, an invalid argument,
/// mismatched lengths and a buffer on another device keep the library's own variants
/// (one variant per kind of failure, whichever crate checked it).
impl From<ferrocuda_host::Error> for Error {
    fn from(e: ferrocuda_host::Error) -> Self {
        match e {
            ferrocuda_host::Error::Vendor {
                library,
                call,
                status,
            } => Error::Vendor {
                library,
                call,
                status,
            },
            ferrocuda_host::Error::InvalidArgument { op, reason } => {
                Error::InvalidArgument { op, reason }
            }
            ferrocuda_host::Error::DimensionMismatch {
                op,
                what,
                expected,
                found,
            } => Error::DimensionMismatch {
                op,
                what,
                expected,
                found,
            },
            ferrocuda_host::Error::WrongDevice {
                op,
                what,
                expected,
                found,
            } => Error::WrongDevice {
                op,
                what,
                expected,
                found,
            },
            e => Error::Gpu(e),
        }
    }
}

impl From<crate::sparse::SparseError> for Error {
    /// Wraps it in [`Error::Sparse`], except that a host allocation too large becomes
    /// [`Error::OutOfHostMemory`] as from every other module.
    fn from(e: crate::sparse::SparseError) -> Self {
        match e {
            crate::sparse::SparseError::OutOfHostMemory(e) => *e,
            e => Error::Sparse(e),
        }
    }
}

impl Error {
    /// Whether this error means "no CUDA device here" (callers fall back to the CPU).
    pub fn is_no_device(&self) -> bool {
        matches!(self, Error::Gpu(ferrocuda_host::Error::NoDevice { .. }))
    }
}

/// `bytes` in GiB for messages ("13.76 GiB").
fn gib(bytes: u128) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Result with ferrocuda's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `Err(WrongDevice)` unless `b` is the device of `a` (operand `what` of `op`): the
/// host crate's check, reported as [`Error::WrongDevice`].
pub(crate) fn check_device(
    op: &'static str,
    what: &'static str,
    a: &crate::gpu::Gpu,
    b: &crate::gpu::Gpu,
) -> Result<()> {
    Ok(ferrocuda_host::check_device(op, what, a, b)?)
}

/// `Err(DimensionMismatch)` unless `found == expected`: the host crate's check, reported
/// as [`Error::DimensionMismatch`].
pub(crate) fn check_len(
    op: &'static str,
    what: &'static str,
    expected: usize,
    found: usize,
) -> Result<()> {
    Ok(ferrocuda_host::check_len(op, what, expected, found)?)
}

#[cfg(test)]
mod tests {
    use super::Error;

    /// The vendor baselines moved into the host crate; their failures still read as
    /// `Error::Vendor` and `Error::InvalidArgument` here (the CLI files them under those).
    #[test]
    fn host_vendor_and_argument_errors_keep_their_variants() {
        let e = Error::from(ferrocuda_host::Error::Vendor {
            library: "cuSPARSE",
            call: "load",
            status: "libcusparse.so not found".into(),
        });
        assert!(matches!(
            e,
            Error::Vendor {
                library: "cuSPARSE",
                call: "load",
                ..
            }
        ));
        assert_eq!(e.to_string(), "cuSPARSE: load: libcusparse.so not found");
        let e = Error::from(ferrocuda_host::Error::InvalidArgument {
            op: "cuBLAS gemm",
            reason: "m = 3000000000 exceeds the vendor library's 32-bit sizes".into(),
        });
        assert!(matches!(
            e,
            Error::InvalidArgument {
                op: "cuBLAS gemm",
                ..
            }
        ));
        let e = Error::from(ferrocuda_host::Error::NoDevice {
            reason: "none".into(),
        });
        assert!(e.is_no_device());
    }
}
