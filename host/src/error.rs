//! The one error type of the GPU runtime. Every variant says which call, kernel or value
//! failed; `Display` prints a sentence.

use cudarc::driver::DriverError;

/// A CUDA driver status with its symbolic name, e.g. `CUDA_ERROR_NOT_FOUND (named symbol not found)`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DriverStatus(pub DriverError);

impl DriverStatus {
    /// Whether this status is `CUDA_ERROR_OUT_OF_MEMORY`.
    pub fn is_out_of_memory(&self) -> bool {
        self.0.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
    }
}

impl std::fmt::Display for DriverStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self
            .0
            .error_name()
            .map(|s| s.to_string_lossy().into_owned());
        let text = self
            .0
            .error_string()
            .map(|s| s.to_string_lossy().into_owned());
        match (name, text) {
            (Ok(name), Ok(text)) => write!(f, "{name} ({text})"),
            (Ok(name), Err(_)) => write!(f, "{name}"),
            _ => write!(f, "{:?}", self.0.0),
        }
    }
}

impl std::fmt::Debug for DriverStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

/// Everything that can go wrong in the GPU runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No usable CUDA driver or device on this machine.
    #[error("no CUDA device found: {reason}")]
    NoDevice {
        /// Why (driver library missing, zero devices, initialisation failed).
        reason: String,
    },
    /// The requested device ordinal does not exist.
    #[error("CUDA device {ordinal} does not exist: this machine has {count} device(s)")]
    InvalidOrdinal {
        /// The ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// A driver call failed.
    #[error("{call}: {status}")]
    Driver {
        /// The driver call, with its subject where useful (`cuModuleGetFunction(axpy_f64)`).
        call: String,
        /// What the driver returned.
        status: DriverStatus,
    },
    /// A kernel could not be launched.
    #[error("launch of kernel `{kernel}` failed: {status}")]
    Launch {
        /// The kernel's name.
        kernel: &'static str,
        /// What the driver returned.
        status: DriverStatus,
    },
    /// An asynchronous fault surfaced at a synchronisation after a kernel ran.
    #[error("{call} failed after kernel `{kernel}`: {status}")]
    AfterKernel {
        /// The call that surfaced it (`cuStreamSynchronize`, `cuMemcpyDtoH`).
        call: &'static str,
        /// The last kernel launched on the stream.
        kernel: &'static str,
        /// What the driver returned.
        status: DriverStatus,
    },
    /// The device has too little free memory for an allocation.
    #[error(
        "out of GPU memory on device {ordinal}: requested {requested} bytes, {free} of {total} bytes free"
    )]
    OutOfMemory {
        /// Device ordinal.
        ordinal: usize,
        /// Bytes requested.
        requested: usize,
        /// Bytes free at the time.
        free: usize,
        /// Bytes on the device.
        total: usize,
    },
    /// Sizes of operands do not fit together.
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
    /// A buffer from another device was passed.
    #[error("{op}: {what} lives on device {found}, but the operation runs on device {expected}")]
    WrongDevice {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: &'static str,
        /// Device of the operation.
        expected: usize,
        /// Device of the buffer.
        found: usize,
    },
    /// A range outside a buffer.
    #[error("{op}: range {start}..{end} is outside a buffer of length {len}")]
    OutOfRange {
        /// The operation.
        op: &'static str,
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
        /// Buffer length.
        len: usize,
    },
    /// A launch configuration the hardware cannot run.
    #[error("kernel `{kernel}`: invalid launch configuration: {reason}")]
    InvalidLaunch {
        /// The kernel's name.
        kernel: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Something that cannot happen while a stream is captured into a graph.
    #[error("graph capture: {reason}")]
    Capture {
        /// What was attempted.
        reason: String,
    },
    /// The embedded PTX lacks a kernel the host asked for.
    #[error("kernel `{kernel}` is not in the embedded PTX ({status})")]
    KernelNotFound {
        /// The kernel's name.
        kernel: &'static str,
        /// What the driver returned.
        status: DriverStatus,
    },
    /// No PTX is registered for the Rust module that declared a kernel.
    #[error(
        "no kernel module is registered for the kernels of `{module}` (open the device through the library that embeds them, e.g. `ferrocuda::gpu::open`, or call `register_module`)"
    )]
    NoModule {
        /// The declaring module's path.
        module: &'static str,
    },
    /// A vendor library (cuSPARSE, cuRAND, cuBLAS, cuSOLVER) is missing or a call into it
    /// failed.
    #[error("{library}: {call}: {status}")]
    Vendor {
        /// The library.
        library: &'static str,
        /// The call, or "load" when the library is missing.
        call: &'static str,
        /// What it returned.
        status: String,
    },
    /// An argument a call cannot take (a size beyond a vendor library's 32-bit indices,
    /// an index array that is not a valid sparse structure).
    #[error("{op}: {reason}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong, with the value.
        reason: String,
    },
    /// An NCCL call failed, or the NCCL library could not be loaded.
    #[error("{call}: {reason}")]
    Nccl {
        /// The NCCL call (`ncclCommInitAll`, `ncclAllReduce`, ...), or `load libnccl`.
        call: &'static str,
        /// NCCL's error string, or what is missing.
        reason: String,
    },
}

/// Result with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Wraps a driver result, naming the call.
pub(crate) fn check<T>(
    result: std::result::Result<T, DriverError>,
    call: impl FnOnce() -> String,
) -> Result<T> {
    result.map_err(|e| Error::Driver {
        call: call(),
        status: DriverStatus(e),
    })
}

/// `found == expected`, else [`Error::DimensionMismatch`] naming the operand.
pub fn check_len(
    op: &'static str,
    what: &'static str,
    expected: usize,
    found: usize,
) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::DimensionMismatch {
            op,
            what,
            expected,
            found,
        })
    }
}

/// `found` is the device of `expected`, else [`Error::WrongDevice`] naming the operand.
pub fn check_device(
    op: &'static str,
    what: &'static str,
    expected: &crate::Gpu,
    found: &crate::Gpu,
) -> Result<()> {
    if expected.same_device(found) {
        Ok(())
    } else {
        Err(Error::WrongDevice {
            op,
            what,
            expected: expected.ordinal(),
            found: found.ordinal(),
        })
    }
}
