//! CUDA graphs: capture a sequence of launches once, replay it with one call.

use cudarc::driver::{CudaGraph, sys};

use crate::error::{DriverStatus, Error, Result, check};
use crate::gpu::Gpu;
use crate::memory::Allocation;
use std::sync::Arc;

/// A captured, instantiated sequence of work on one stream. It holds raw device
/// addresses of the buffers used during capture (see [`Gpu::capture`]); it keeps the
/// stream's reduction scratch of that time alive itself.
pub struct Graph {
    graph: CudaGraph,
    gpu: Gpu,
    _scratch: Option<Arc<Allocation>>,
}

impl Gpu {
    /// Captures the work `f` issues on this stream into a [`Graph`] instead of running
    /// it. The stream must be this thread's alone meanwhile: every [`Gpu::new`] of a
    /// device shares its main stream, so capture on a stream from [`Gpu::new_stream`]
    /// where other threads may issue work. Inside `f`, only issue work: no allocation, no download, no synchronisation
    /// (the driver rejects them during capture; a reduction scratch that would have to
    /// grow is reported as [`Error::Capture`], so run the same work once first).
    ///
    /// # Safety
    /// The graph replays raw device addresses: every buffer the captured work touches
    /// must outlive every [`Graph::launch`], and must not be used concurrently on
    /// another stream while a replay runs. The borrow checker cannot see this.
    pub unsafe fn capture<E: From<Error>>(
        &self,
        f: impl FnOnce(&Gpu) -> std::result::Result<(), E>,
    ) -> std::result::Result<Graph, E> {
        let stream = self.cuda_stream();
        {
            // Exclusive while beginning: no free may be between its capture-status check
            // of this stream and its event on it (see `Device::capture_gate`).
            let _gate = self
                .device()
                .capture_gate
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            check::<()>(
                stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                || "cuStreamBeginCapture".into(),
            )?;
        }
        let issued = f(self);
        let ended = stream.end_capture(sys::CUgraphInstantiate_flags(0));
        issued?;
        match ended {
            Ok(Some(graph)) => Ok(Graph {
                graph,
                gpu: self.clone(),
                _scratch: self.current_scratch(),
            }),
            Ok(None) => Err(E::from(Error::Driver {
                call: "cuStreamEndCapture (nothing was captured)".into(),
                status: DriverStatus(cudarc::driver::DriverError(
                    sys::CUresult::CUDA_ERROR_INVALID_VALUE,
                )),
            })),
            Err(e) => Err(E::from(Error::Driver {
                call: "cuStreamEndCapture/cuGraphInstantiate".into(),
                status: DriverStatus(e),
            })),
        }
    }
}

impl Graph {
    /// Replays the graph on the stream it was captured on.
    pub fn launch(&self) -> Result<()> {
        check(self.graph.launch(), || "cuGraphLaunch".into())
    }

    /// The stream handle the graph replays on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").finish_non_exhaustive()
    }
}
