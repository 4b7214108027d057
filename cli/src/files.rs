//! The files a command reads and writes (docs/reliability.md): every input is opened
//! once and read once (so `--matrix /dev/stdin` and `<(cat A.mtx)` work), an output
//! that is also an input is refused before any work, and outputs follow
//! [`ferrocuda_bench::output`] (a unique temporary file renamed over a regular file
//! on success; FIFOs and character devices written through; nothing else replaced).
//! Errors name the option and the path as the user gave them.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use ferrocuda::sparse::SparseError;
use ferrocuda::sparse::mm::{self, MmObject};
use ferrocuda::{Error, Result};
use ferrocuda_bench::output::{FileId, Target, plain};

/// An input file, open.
#[derive(Debug)]
pub struct Input {
    op: &'static str,
    label: String,
    file: File,
    id: Option<FileId>,
}

/// The error of command `op` about a file option: `spmv: --matrix A.mtx: reason`.
pub fn file_error(op: &'static str, label: &str, reason: impl std::fmt::Display) -> Error {
    Error::InvalidArgument {
        op,
        reason: format!("{label}: {reason}"),
    }
}

impl Input {
    /// Opens `path`, given to command `op` as `flag` (`--matrix`).
    pub fn open(op: &'static str, flag: &str, path: &Path) -> Result<Input> {
        let label = format!("{flag} {}", path.display());
        let file = File::open(path).map_err(|e| file_error(op, &label, plain(&e)))?;
        let id = file.metadata().ok().as_ref().and_then(FileId::of);
        Ok(Input {
            op,
            label,
            file,
            id,
        })
    }

    /// `--matrix A.mtx`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Reads the Matrix Market object, once (errors name the option, the file and the
    /// line).
    pub fn read_mm(self) -> Result<MmObject> {
        let (op, label) = (self.op, self.label);
        mm::read(BufReader::new(self.file)).map_err(|e| mm_error(op, &label, e))
    }
}

/// A Matrix Market error (reading or converting) of the file `label` in the user's words.
pub fn mm_error(op: &'static str, label: &str, e: SparseError) -> Error {
    match e {
        SparseError::Parse { line: 0, reason } => file_error(op, label, reason),
        SparseError::Parse { line, reason } => {
            file_error(op, label, format!("line {line}: {reason}"))
        }
        e => file_error(op, label, crate::report::user_words(&e.to_string())),
    }
}

/// Checks the output `path` of option `flag` before any work: what is there (see
/// [`Target`]) and that it is none of `inputs` (also under another name or link).
pub fn output(op: &'static str, flag: &str, path: &Path, inputs: &[&Input]) -> Result<Target> {
    let label = format!("{flag} {}", path.display());
    let target = Target::new(label.clone(), path)?;
    if let Some(out) = target.id()
        && let Some(same) = inputs
            .iter()
            .find(|i| i.id.is_some_and(|id| id.clashes_with(out)))
    {
        return Err(Error::InvalidArgument {
            op,
            reason: format!(
                "{label} is the same file as {}: refusing to overwrite an input",
                same.label
            ),
        });
    }
    Ok(target)
}

/// An optional output path, checked as [`output`].
pub fn optional_output(
    op: &'static str,
    flag: &str,
    path: Option<&PathBuf>,
    inputs: &[&Input],
) -> Result<Option<Target>> {
    path.map(|p| output(op, flag, p, inputs)).transpose()
}

/// Writes `values` (`rows x cols`, column-major) as a Matrix Market array to `target`.
pub fn write_array<T: ferrocuda::blas1::Element>(
    target: &Target,
    rows: usize,
    cols: usize,
    values: &[T],
) -> Result<()> {
    target.write_with(|w| {
        mm::write_dense(w, rows, cols, values).map_err(|e| Error::InvalidArgument {
            op: "writing",
            reason: format!(
                "{}: {}",
                target.path().display(),
                crate::report::user_words(&e.to_string())
            ),
        })
    })
}
