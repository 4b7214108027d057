//! Event timing on a stream.

use cudarc::driver::{CudaEvent, sys};

use crate::error::{Error, Result, check};
use crate::gpu::Gpu;

/// Measures device time between two points of a stream with CUDA events.
pub struct EventTimer {
    gpu: Gpu,
    start: CudaEvent,
    stop: CudaEvent,
}

impl Gpu {
    /// A timer on this stream.
    pub fn timer(&self) -> Result<EventTimer> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = check(self.context().new_event(flags), || "cuEventCreate".into())?;
        let stop = check(self.context().new_event(flags), || "cuEventCreate".into())?;
        Ok(EventTimer {
            gpu: self.clone(),
            start,
            stop,
        })
    }
}

impl EventTimer {
    /// Records the start point.
    pub fn start(&self) -> Result<()> {
        check(self.start.record(self.gpu.cuda_stream()), || {
            "cuEventRecord(start)".into()
        })
    }

    /// Records the stop point.
    pub fn stop(&self) -> Result<()> {
        check(self.stop.record(self.gpu.cuda_stream()), || {
            "cuEventRecord(stop)".into()
        })
    }

    /// Milliseconds between start and stop; waits for the stop point.
    pub fn elapsed_ms(&self) -> Result<f64> {
        crate::gpu::count_host_wait();
        self.stop
            .synchronize()
            .map_err(|e| self.gpu.after_kernel("cuEventSynchronize", e))?;
        check(self.start.elapsed_ms(&self.stop), || {
            "cuEventElapsedTime".into()
        })
        .map(f64::from)
    }

    /// Times `f` (issued on this timer's stream) in milliseconds.
    pub fn time<R, E: From<Error>>(
        &self,
        f: impl FnOnce() -> std::result::Result<R, E>,
    ) -> std::result::Result<(R, f64), E> {
        self.start()?;
        let r = f()?;
        self.stop()?;
        Ok((r, self.elapsed_ms()?))
    }
}
