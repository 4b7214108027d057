//! Launch configurations and kernel arguments.

use crate::error::{Error, Result};

/// Grid, block and dynamic shared memory of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block in bytes.
    pub shared_bytes: u32,
}

/// Largest grid extent in x that every CUDA GPU accepts.
pub const MAX_GRID_X: u32 = (1 << 31) - 1;
/// Largest grid extent in y and z.
pub const MAX_GRID_YZ: u32 = 65535;
/// Largest number of threads in a block.
pub const MAX_BLOCK_THREADS: u32 = 1024;

impl LaunchConfig {
    /// `blocks` blocks of `threads` threads in x.
    pub fn blocks(blocks: u32, threads: u32) -> Self {
        LaunchConfig {
            grid: (blocks, 1, 1),
            block: (threads, 1, 1),
            shared_bytes: 0,
        }
    }

    /// One thread per element for a grid-stride kernel: `div_ceil(n, threads)` blocks,
    /// at least one, capped at [`MAX_GRID_X`] (the kernel's loop covers the rest).
    pub fn for_elements(n: usize, threads: u32) -> Self {
        let blocks = n
            .div_ceil(threads.max(1) as usize)
            .clamp(1, MAX_GRID_X as usize) as u32;
        Self::blocks(blocks, threads)
    }

    /// Sets the grid's y extent.
    pub fn with_grid_y(mut self, y: u32) -> Self {
        self.grid.1 = y;
        self
    }

    /// Sets the grid's z extent.
    pub fn with_grid_z(mut self, z: u32) -> Self {
        self.grid.2 = z;
        self
    }

    /// Sets the dynamic shared memory per block.
    pub fn with_shared_bytes(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }

    /// Checks the limits every CUDA GPU has; the driver checks the device-specific rest.
    pub fn validate(&self, kernel: &'static str) -> Result<()> {
        let (gx, gy, gz) = self.grid;
        let (bx, by, bz) = self.block;
        let reason = if gx == 0 || gy == 0 || gz == 0 {
            Some(format!("empty grid {:?}", self.grid))
        } else if bx == 0 || by == 0 || bz == 0 {
            Some(format!("empty block {:?}", self.block))
        } else if gx > MAX_GRID_X || gy > MAX_GRID_YZ || gz > MAX_GRID_YZ {
            Some(format!(
                "grid {:?} exceeds ({MAX_GRID_X}, {MAX_GRID_YZ}, {MAX_GRID_YZ})",
                self.grid
            ))
        } else if (bx as u64) * (by as u64) * (bz as u64) > MAX_BLOCK_THREADS as u64 {
            Some(format!(
                "block {:?} has more than {MAX_BLOCK_THREADS} threads",
                self.block
            ))
        } else {
            None
        };
        match reason {
            Some(reason) => Err(Error::InvalidLaunch { kernel, reason }),
            None => Ok(()),
        }
    }
}
