//! CUDA graphs: capture a sequence of launches once, replay it with one call.

use cudarc::driver::{CudaGraph, sys};

use crate::error::{DriverStatus, Error, Result, check};
use crate::gpu::Gpu;

/// A captured, instantiated sequence of work on one stream.
pub struct Graph {
    graph: CudaGraph,
    gpu: Gpu,
}

impl Gpu {
    /// Captures the work `f` issues on this stream into a [`Graph`] instead of running
    /// it. Inside `f`, only issue work: no allocation that grows a buffer, no download,
    /// no synchronisation (the driver rejects them during capture). Scratch areas must
    /// already be large enough, so run the same work once before capturing.
    pub fn capture(&self, f: impl FnOnce(&Gpu) -> Result<()>) -> Result<Graph> {
        let stream = self.cuda_stream();
        check(
            stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            || "cuStreamBeginCapture".into(),
        )?;
        let issued = f(self);
        let ended = stream.end_capture(sys::CUgraphInstantiate_flags(0));
        issued?;
        match ended {
            Ok(Some(graph)) => Ok(Graph {
                graph,
                gpu: self.clone(),
            }),
            Ok(None) => Err(Error::Driver {
                call: "cuStreamEndCapture (nothing was captured)".into(),
                status: DriverStatus(cudarc::driver::DriverError(
                    sys::CUresult::CUDA_ERROR_INVALID_VALUE,
                )),
            }),
            Err(e) => Err(Error::Driver {
                call: "cuStreamEndCapture/cuGraphInstantiate".into(),
                status: DriverStatus(e),
            }),
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
