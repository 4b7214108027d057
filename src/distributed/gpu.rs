//! The distributed BCSR operator on GPUs: each rank's rows on its own device, a
//! [`DeviceLinOp`] so the GPU GMRES runs on it unchanged
//! ([`crate::krylov::gpu::gmres_distributed`]).
//!
//! The halo travels in **spans**: to each peer a rank sends the contiguous range of its
//! block rows from the first to the last one the peer needs, so a send is one copy of
//! a window of `x` (no gather kernel), and the receiver lays the spans end to end in its
//! ghost buffer. On TRACE-like matrices split by grid blocks a span is the two boundary
//! cell planes of a grid block plus the ghost cells between them. Where the
//! communicator has an NCCL communicator ([`super::WithNccl`]) the spans go GPU to GPU
//! on its stream, straight from `x` into the ghost buffer, while the interior SpMV runs
//! on the main stream, and no host thread waits. Otherwise they go through the host
//! [`Communicator`] (device to host, message, host to device), overlapped with the
//! interior SpMV, which is queued before the host waits for its peers.

use std::ops::Range;
use std::sync::Mutex;

use ferrocuda_host::{
    DeviceBuffer, DeviceSlice, DeviceView, DeviceViewMut, Gpu, copy_host_to_window,
    copy_window_to_host,
};

use super::halo::HaloPlan;
use super::partition::RowPartition;
use crate::blas1::Element;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::krylov::DeviceLinOp;
use crate::sparse::gpu::{self as sgpu, DeviceBcsr, DeviceSbell, SpmvKernels};
use crate::sparse::{Bcsr, BcsrParts, Index, MatrixScalar, Sbell};

/// Rows on the device in the fastest format that takes them: SBELL (which also stores
/// only the non-empty block rows, so the halo part touches only the boundary rows), else
/// BCSR.
enum Part<A> {
    Sbell(Box<DeviceSbell<A>>),
    Bcsr(Box<DeviceBcsr<A>>),
}

impl<A: Element> Part<A> {
    fn upload(gpu: &Gpu, a: &Bcsr<A>) -> Result<Self> {
        Ok(match Sbell::from_bcsr(a) {
            Ok(s) => Part::Sbell(Box::new(DeviceSbell::upload(gpu, &s)?)),
            Err(_) => Part::Bcsr(Box::new(DeviceBcsr::upload(gpu, a)?)),
        })
    }

    /// `y <- A x + beta y`.
    fn spmv<V>(&self, x: &impl DeviceSlice<V>, beta: V, y: &mut DeviceViewMut<'_, V>) -> Result<()>
    where
        A: MatrixScalar<V> + SpmvKernels<V>,
        V: Element,
    {
        match self {
            Part::Sbell(a) => sgpu::spmv_sbell(V::ONE, a, x, beta, y),
            Part::Bcsr(a) => sgpu::spmv_bcsr(V::ONE, a, x, beta, y),
        }
    }
}

/// Host staging of the spans: what goes out, what comes in.
struct Staging<V> {
    send: Vec<V>,
    recv: Vec<V>,
    ghosts: DeviceBuffer<V>,
}

/// One rank's part of a distributed square BCSR matrix on its GPU, for vectors of `V`.
pub struct DeviceDistributedBcsr<'c, A, V> {
    comm: &'c dyn Communicator,
    gpu: Gpu,
    b: usize,
    n_block_rows: usize,
    interior: Part<A>,
    /// All local block rows x the ghost spans (rows without ghosts empty, not stored).
    halo: Part<A>,
    /// Per peer: our block rows it needs, first to last.
    send: Vec<(usize, Range<usize>)>,
    /// Per peer: where its span lies in the ghost buffer, in blocks.
    recv: Vec<(usize, Range<usize>)>,
    /// `send` and `recv` in elements of `V`, for the NCCL exchange.
    send_windows: Vec<(usize, Range<usize>)>,
    recv_windows: Vec<(usize, Range<usize>)>,
    staging: Mutex<Staging<V>>,
    plan: HaloPlan,
}

impl<A, V> std::fmt::Debug for DeviceDistributedBcsr<'_, A, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceDistributedBcsr")
            .field("rank", &self.comm.rank())
            .field("ranks", &self.comm.size())
            .field("device", &self.gpu.ordinal())
            .field("block_rows", &self.n_block_rows)
            .field("send", &self.send)
            .field("recv", &self.recv)
            .finish()
    }
}

impl<'c, A: Element, V: Element> DeviceDistributedBcsr<'c, A, V> {
    /// Uploads the rows `local` (global block columns, from
    /// [`RowPartition::local_rows`]) of `comm.rank()` to `gpu`. Collective (the halo
    /// plan is agreed on, as for [`super::DistributedBcsr::new`]). Every rank checks
    /// its communicator (its NCCL communicator's rank, size and device) and its rows
    /// first, and the ranks agree on the outcome before any message: an invalid input
    /// on one rank is an error on every rank, never a wait.
    pub fn new(
        comm: &'c dyn Communicator,
        gpu: &Gpu,
        part: &RowPartition,
        local: &Bcsr<A>,
    ) -> Result<Self> {
        let nccl_problem = comm.nccl().and_then(|nccl| {
            (!nccl.stream().same_device(gpu)
                || nccl.rank() != comm.rank()
                || nccl.size() != comm.size())
            .then(|| Error::InvalidArgument {
                op: "DeviceDistributedBcsr::new",
                reason: format!(
                    "the NCCL communicator is rank {} of {} on device {}, the operator \
                     rank {} of {} on device {}",
                    nccl.rank(),
                    nccl.size(),
                    nccl.stream().ordinal(),
                    comm.rank(),
                    comm.size(),
                    gpu.ordinal()
                ),
            })
        });
        let plan = HaloPlan::build_checked(comm, part, local, nccl_problem)?;
        let own = part.range(comm.rank());
        let b = local.b();
        // Spans: what each peer sends us, laid end to end.
        let mut recv = Vec::new();
        let mut seg_start = Vec::new();
        let mut total = 0;
        for (peer, r) in &plan.recv {
            let (first, last) = (plan.ghosts[r.start], plan.ghosts[r.end - 1]);
            seg_start.push((part.range(*peer).start, first, total));
            recv.push((*peer, total..total + last - first + 1));
            total += last - first + 1;
        }
        let send: Vec<(usize, Range<usize>)> = plan
            .send
            .iter()
            .map(|(peer, list)| {
                let lo = list.iter().min().copied().unwrap_or(0) as usize;
                let hi = list.iter().max().copied().unwrap_or(0) as usize + 1;
                (*peer, lo..hi)
            })
            .collect();
        let (interior, halo) = split_spans(local, &own, &plan, &seg_start, total);
        let interior = Part::upload(gpu, &interior)?;
        let elements = |list: &[(usize, Range<usize>)]| -> Vec<(usize, Range<usize>)> {
            list.iter()
                .map(|(p, r)| (*p, r.start * b..r.end * b))
                .collect()
        };
        let (send_windows, recv_windows) = (elements(&send), elements(&recv));
        let longest_send = send.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
        let longest_recv = recv.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
        Ok(DeviceDistributedBcsr {
            comm,
            gpu: gpu.clone(),
            b,
            n_block_rows: own.len(),
            interior,
            halo: Part::upload(gpu, &halo)?,
            send,
            recv,
            send_windows,
            recv_windows,
            staging: Mutex::new(Staging {
                send: vec![V::ZERO; longest_send * b],
                recv: vec![V::ZERO; longest_recv * b],
                ghosts: gpu.alloc_zeroed(total.max(1) * b)?,
            }),
            plan,
        })
    }

    /// The halo plan (blocks as the CPU operator counts them).
    pub fn plan(&self) -> &HaloPlan {
        &self.plan
    }

    /// Blocks sent per application (the spans, ghost cells included).
    pub fn span_blocks_sent(&self) -> usize {
        self.send.iter().map(|(_, r)| r.len()).sum()
    }
}

/// `local` split into the interior (local columns, renumbered) and the halo part (all
/// local block rows, columns numbered by position in the spans).
fn split_spans<A: Element>(
    local: &Bcsr<A>,
    own: &Range<usize>,
    plan: &HaloPlan,
    seg_start: &[(usize, usize, usize)],
    span_blocks: usize,
) -> (Bcsr<A>, Bcsr<A>) {
    let split = super::halo::split_rows(local, own, plan);
    // Halo columns: compact ghost index -> global column -> span position.
    let span_col = |g: Index| -> Index {
        let c = plan.ghosts[g as usize];
        let seg = seg_start.partition_point(|&(_, first, _)| first <= c) - 1;
        let (_, first, at) = seg_start[seg];
        (at + c - first) as Index
    };
    let h = &split.halo;
    let bb = h.b() * h.b();
    let mut row_ptr = vec![0; own.len() + 1];
    for (i, &r) in split.map.iter().enumerate() {
        row_ptr[r as usize + 1] = h.row_ptr()[i + 1] - h.row_ptr()[i];
    }
    for r in 0..own.len() {
        row_ptr[r + 1] += row_ptr[r];
    }
    let halo = Bcsr::from_parts_trusted(BcsrParts {
        b: h.b(),
        layout: h.layout(),
        n_block_rows: own.len(),
        n_block_cols: span_blocks,
        row_ptr,
        col_idx: h.col_idx().iter().map(|&g| span_col(g)).collect(),
        values: h.values()[..h.nnz_blocks() * bb].to_vec(),
    });
    (split.interior, halo)
}

fn poisoned() -> Error {
    Error::InvalidArgument {
        op: "DeviceDistributedBcsr::apply",
        reason: "a previous application panicked".into(),
    }
}

impl<A, V> DeviceLinOp<V> for DeviceDistributedBcsr<'_, A, V>
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    fn nrows(&self) -> usize {
        self.n_block_rows * self.b
    }

    fn ncols(&self) -> usize {
        self.n_block_rows * self.b
    }

    fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Sends the spans, queues the interior SpMV, receives the peers' spans while it
    /// runs, then adds the halo part.
    fn apply_unchecked(&self, x: &DeviceView<'_, V>, y: &mut DeviceViewMut<'_, V>) -> Result<()> {
        let b = self.b;
        let mut st = self.staging.lock().map_err(|_| poisoned())?;
        let st = &mut *st;
        if let Some(nccl) = self.comm.nccl() {
            // GPU to GPU on the communication stream, after the work that wrote x (and
            // the last application's halo SpMV, which read the ghosts); the interior
            // SpMV runs meanwhile, the halo SpMV after the join.
            nccl.exchange(
                x,
                &self.send_windows,
                &mut st.ghosts,
                &self.recv_windows,
                || self.interior.spmv(x, V::ZERO, y),
            )?;
            // Also when nothing comes in: x must not change before the sends are done.
            nccl.join(y.gpu())?;
            if self.recv.is_empty() {
                return Ok(());
            }
            return self.halo.spmv(&st.ghosts, V::ONE, y);
        }
        for (peer, r) in &self.send {
            let out = &mut st.send[..r.len() * b];
            copy_window_to_host(x, r.start * b, out)?;
            self.comm.send(*peer, bytemuck::cast_slice(out))?;
        }
        self.interior.spmv(x, V::ZERO, y)?;
        if self.recv.is_empty() {
            return Ok(());
        }
        for (peer, r) in &self.recv {
            let inc = &mut st.recv[..r.len() * b];
            self.comm.recv(*peer, bytemuck::cast_slice_mut(inc))?;
            copy_host_to_window(inc, &mut st.ghosts, r.start * b)?;
        }
        self.halo.spmv(&st.ghosts, V::ONE, y)
    }
}
