//! Writing files so that nothing a user has is replaced, destroyed or half-written: the
//! rules of `--out` and of every result file the benchmarks write (docs/reliability.md).
//!
//! * A regular file (or a path that does not exist yet) is written to a temporary file
//!   with a unique name in the same folder and renamed over the target only when all of
//!   it is on disk: a failure leaves an existing file as it was, and a concurrent run
//!   never shares the temporary file. A file that exists keeps its permissions; a new
//!   one gets the usual `0666` less the umask.
//! * A symbolic link to a regular file is kept: the file it points to is replaced as
//!   above.
//! * A FIFO or a character device (`/dev/null`, `/dev/stdout` on a terminal or a pipe)
//!   is written through, never replaced or renamed.
//! * Anything else (a folder, a block device, a socket, a dangling link) is refused.
//!
//! Errors name the path as the user gave it, never the temporary file's.

use std::fs::{File, Metadata, Permissions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use ferrocuda::{Error, Result};

/// Where the bytes for one target go.
#[derive(Debug, Clone)]
enum How {
    /// A new file in `dir`, which must not appear meanwhile.
    Create { dir: PathBuf },
    /// The regular file `real` (a link's target, or the path itself), replaced by rename.
    Replace {
        real: PathBuf,
        permissions: Permissions,
    },
    /// A FIFO or character device: opened and written, nothing renamed.
    Through,
}

/// A file to write, checked against the rules above (see the module docs).
#[derive(Debug, Clone)]
pub struct Target {
    /// How errors name it, e.g. `--out y.mtx`.
    label: String,
    path: PathBuf,
    how: How,
    id: Option<FileId>,
}

/// The identity of a file (device and inode on Unix), to recognise one file under two
/// names (links, `./a` and `a`, `/dev/stdin` and the file behind it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
    /// Character devices such as a terminal may be read and written at once.
    shareable: bool,
}

impl FileId {
    /// The identity of an open file or of `fs::metadata`.
    #[cfg(unix)]
    pub fn of(m: &Metadata) -> Option<FileId> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        Some(FileId {
            dev: m.dev(),
            ino: m.ino(),
            shareable: m.file_type().is_char_device(),
        })
    }

    /// Not known on this system.
    #[cfg(not(unix))]
    pub fn of(_: &Metadata) -> Option<FileId> {
        None
    }

    /// Whether writing one while reading the other would clobber the input.
    pub fn clashes_with(self, other: FileId) -> bool {
        self.dev == other.dev && self.ino == other.ino && !self.shareable
    }
}

/// `e` without the path a library may have added (a temporary file's): the system's
/// message for its code, else its kind.
pub fn plain(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code).to_string(),
        None => io::Error::from(e.kind()).to_string(),
    }
}

fn refuse(label: &str, why: impl std::fmt::Display) -> Error {
    Error::InvalidArgument {
        op: "writing",
        reason: format!("{label}: {why}"),
    }
}

/// What a file is, in words, for refusals.
fn kind_of(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Whether a file is written through rather than replaced.
fn written_through(m: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        t.is_fifo() || t.is_char_device()
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        false
    }
}

impl Target {
    /// Checks `path` (errors name it as `label`, e.g. `--out y.mtx`): what is there and
    /// whether its folder exists. Nothing is created yet.
    pub fn new(label: impl Into<String>, path: &Path) -> Result<Target> {
        let label = label.into();
        let io_err = |e: io::Error| refuse(&label, plain(&e));
        let (how, id) = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                match std::fs::metadata(&dir) {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => {
                        return Err(refuse(&label, format!("{} is not a folder", dir.display())));
                    }
                    Err(e) => {
                        return Err(refuse(
                            &label,
                            format!("the folder {}: {}", dir.display(), plain(&e)),
                        ));
                    }
                }
                (How::Create { dir }, None)
            }
            Err(e) => return Err(io_err(e)),
            Ok(link) => {
                let is_link = link.file_type().is_symlink();
                let m = if is_link {
                    match std::fs::metadata(path) {
                        Ok(m) => m,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            return Err(refuse(
                                &label,
                                "a symbolic link to nothing: refusing to replace it",
                            ));
                        }
                        Err(e) => return Err(io_err(e)),
                    }
                } else {
                    link
                };
                let how = if m.is_file() {
                    let real = if is_link {
                        std::fs::canonicalize(path).map_err(io_err)?
                    } else {
                        path.to_path_buf()
                    };
                    How::Replace {
                        real,
                        permissions: m.permissions(),
                    }
                } else if written_through(&m) {
                    How::Through
                } else {
                    return Err(refuse(
                        &label,
                        format!("{}: only a file can be written", kind_of(&m)),
                    ));
                };
                (how, FileId::of(&m))
            }
        };
        Ok(Target {
            label,
            path: path.to_path_buf(),
            how,
            id,
        })
    }

    /// The identity of the file there now (`None` for a new file).
    pub fn id(&self) -> Option<FileId> {
        self.id
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes` (see the module docs).
    pub fn write(&self, bytes: &[u8]) -> Result<()> {
        self.write_with(|w| {
            w.write_all(bytes)
                .map_err(|e| refuse(&self.label, plain(&e)))
        })
    }

    /// Writes what `fill` writes (see the module docs). An I/O failure inside `fill` is
    /// reported as the system's message naming this target, whatever error `fill`
    /// wraps it in.
    pub fn write_with(&self, fill: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
        let io_err = |e: io::Error| refuse(&self.label, plain(&e));
        // Looked at again: what is there may have changed during a long computation
        // (another run may have created the file, someone may have put a link there).
        let now = Target::new(self.label.clone(), &self.path)?;
        match &now.how {
            How::Through => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&self.path)
                    .map_err(io_err)?;
                self.fill_file(&f, fill)
            }
            How::Create { dir } => {
                let tmp = self.temp_in(dir)?;
                self.fill_file(tmp.as_file(), fill)?;
                tmp.as_file().sync_all().map_err(io_err)?;
                // A file that appears after this last look is replaced whole (the last
                // of several runs wins), never mixed.
                tmp.persist(&self.path).map_err(|e| io_err(e.error))?;
                Ok(())
            }
            How::Replace { real, permissions } => {
                let dir = match real.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let tmp = self.temp_in(&dir)?;
                tmp.as_file()
                    .set_permissions(permissions.clone())
                    .map_err(io_err)?;
                self.fill_file(tmp.as_file(), fill)?;
                tmp.as_file().sync_all().map_err(io_err)?;
                tmp.persist(real).map_err(|e| io_err(e.error))?;
                Ok(())
            }
        }
    }

    /// A temporary file with a unique name next to the target (`.NAME.XXXXXX.tmp`),
    /// deleted unless persisted.
    fn temp_in(&self, dir: &Path) -> Result<tempfile::NamedTempFile> {
        let name = self
            .path
            .file_name()
            .map_or("out".into(), |n| n.to_string_lossy().into_owned());
        #[cfg(unix)]
        let permissions = {
            use std::os::unix::fs::PermissionsExt;
            Permissions::from_mode(0o666)
        };
        let prefix = format!(".{name}.");
        let mut b = tempfile::Builder::new();
        b.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        b.permissions(permissions);
        b.tempfile_in(dir).map_err(|e| {
            refuse(
                &self.label,
                format!("cannot create a file in {}: {}", dir.display(), plain(&e)),
            )
        })
    }

    fn fill_file(&self, f: &File, fill: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
        let mut w = Recording {
            inner: BufWriter::new(f),
            error: None,
        };
        let filled = fill(&mut w);
        let flushed = w.inner.flush();
        // The system's reason first: `fill`'s own error may only say "I/O error".
        if let Some(e) = w.error.take() {
            return Err(refuse(&self.label, e));
        }
        filled?;
        flushed.map_err(|e| refuse(&self.label, plain(&e)))
    }
}

/// A writer that remembers its first failure in the system's words.
struct Recording<W> {
    inner: W,
    error: Option<String>,
}

impl<W: Write> Recording<W> {
    fn note<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r
            && self.error.is_none()
        {
            self.error = Some(plain(e));
        }
        r
    }
}

impl<W: Write> Write for Recording<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.inner.write(buf);
        self.note(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.inner.flush();
        self.note(r)
    }
}

/// Writes `bytes` to `path` by the rules of [`Target`], creating missing parent folders
/// (for results folders).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            refuse(
                &path.display().to_string(),
                format!("cannot create the folder {}: {}", dir.display(), plain(&e)),
            )
        })?;
    }
    Target::new(path.display().to_string(), path)?.write(bytes)
}

/// The first line of a Markdown results file written by a run without a GPU.
pub const CPU_ONLY_MARK: &str = "<!-- ferrocuda: written by a run without a GPU (CPU-only results); a run with a GPU replaces this file -->";

/// The results folder of a benchmark and the one rule for what a run may write there:
/// **a run without a GPU never replaces results written by a run with a GPU.** Each
/// benchmark's files form a set named by its Markdown record (`lu.md`, ...); without a
/// GPU the set is written only where that record does not exist yet or was itself
/// written without a GPU (its first line is [`CPU_ONLY_MARK`]). Runs with a GPU write
/// as always. Every file goes through [`write_file`].
#[derive(Debug, Clone)]
pub struct ResultsDir {
    dir: PathBuf,
    gpu_ran: bool,
}

impl ResultsDir {
    /// `dir` for a run that used a GPU (`gpu_ran`) or not.
    pub fn new(dir: &Path, gpu_ran: bool) -> Self {
        ResultsDir {
            dir: dir.to_path_buf(),
            gpu_ran,
        }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `dir/name`.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `Ok(())` when this run may write the set whose record is `record`, else the
    /// reason it may not (for a note on stderr; not an error).
    pub fn may_write(&self, record: &str) -> std::result::Result<(), String> {
        if self.gpu_ran {
            return Ok(());
        }
        let path = self.dir.join(record);
        match std::fs::read_to_string(&path) {
            Err(_) => Ok(()), // none yet (or unreadable: then writing fails with the reason)
            Ok(text) if text.lines().next() == Some(CPU_ONLY_MARK) => Ok(()),
            Ok(_) => Err(format!(
                "no GPU ran: {} holds results of a run with a GPU and is kept (nothing written; --results-dir picks another folder)",
                path.display()
            )),
        }
    }

    /// Writes the set whose record is `record` with `write` where [`ResultsDir::may_write`]
    /// allows it; else nothing, and the reason.
    pub fn save(
        &self,
        record: &str,
        write: impl FnOnce(&Self) -> Result<Vec<PathBuf>>,
    ) -> Result<Saved> {
        match self.may_write(record) {
            Ok(()) => write(self).map(Saved::Wrote),
            Err(why) => Ok(Saved::Kept(why)),
        }
    }

    /// Writes a Markdown file of the set (marked as CPU-only where no GPU ran).
    pub fn write_markdown(&self, name: &str, text: &str) -> Result<PathBuf> {
        let path = self.dir.join(name);
        if self.gpu_ran {
            write_file(&path, text.as_bytes())?;
        } else {
            write_file(&path, format!("{CPU_ONLY_MARK}\n{text}").as_bytes())?;
        }
        Ok(path)
    }

    /// The text of a Markdown file of the set without the CPU-only mark, if it exists.
    pub fn read_markdown(&self, name: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join(name)).ok()?;
        Some(match text.strip_prefix(CPU_ONLY_MARK) {
            Some(rest) => rest.trim_start_matches('\n').to_string(),
            None => text,
        })
    }
}

/// What [`ResultsDir::save`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// These files were written.
    Wrote(Vec<PathBuf>),
    /// Nothing was written, for this reason.
    Kept(String),
}

impl std::fmt::Display for Saved {
    /// `wrote a, b` or the reason nothing was written.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Saved::Wrote(paths) => {
                let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(f, "wrote {}", names.join(", "))
            }
            Saved::Kept(why) => f.write_str(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(test: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("ferrocuda-output-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn replaces_a_file_atomically_and_keeps_its_permissions() {
        let d = scratch("replace");
        let p = d.join("y.mtx");
        std::fs::write(&p, "old").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, Permissions::from_mode(0o640)).unwrap();
        }
        // A user file named like the old fixed temporary file is not touched.
        std::fs::write(d.join("y.mtx.partial"), "mine").unwrap();
        let t = Target::new("--out y.mtx", &p).unwrap();
        t.write(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            std::fs::read_to_string(d.join("y.mtx.partial")).unwrap(),
            "mine"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o640);
        }
        // Only y.mtx and the user's file: no temporary file left.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_fill_leaves_the_old_file_and_no_temporary() {
        let d = scratch("fail");
        let p = d.join("y.mtx");
        std::fs::write(&p, "old").unwrap();
        let t = Target::new("--out y.mtx", &p).unwrap();
        let e = t
            .write_with(|w| {
                w.write_all(b"half").unwrap();
                Err(Error::InvalidArgument {
                    op: "test",
                    reason: "stopped".into(),
                })
            })
            .unwrap_err();
        assert!(e.to_string().contains("stopped"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn links_are_kept_devices_written_through_folders_refused() {
        let d = scratch("kinds");
        let real = d.join("real.mtx");
        std::fs::write(&real, "old").unwrap();
        let link = d.join("link.mtx");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        Target::new("--out link.mtx", &link)
            .unwrap()
            .write(b"new")
            .unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");

        let null = Path::new("/dev/null");
        if null.exists() {
            Target::new("--out /dev/null", null)
                .unwrap()
                .write(b"x")
                .unwrap();
            assert!(!std::fs::metadata(null).unwrap().is_file());
        }
        let full = Path::new("/dev/full");
        if full.exists() {
            let e = Target::new("--out /dev/full", full)
                .unwrap()
                .write(&[0; 1 << 16])
                .unwrap_err();
            assert!(e.to_string().contains("--out /dev/full"), "{e}");
        }
        let e = Target::new("--out d", &d).unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(d.join("nothing"), &dangling).unwrap();
        assert!(Target::new("--out dangling", &dangling).is_err());
        let e = Target::new("--out nope/y.mtx", &d.join("nope/y.mtx")).unwrap_err();
        assert!(
            e.to_string().contains("--out nope/y.mtx") && !e.to_string().contains(".tmp"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn without_a_gpu_results_of_a_gpu_run_are_kept() {
        let d = scratch("results");
        let gpu = ResultsDir::new(&d, true);
        gpu.write_markdown("lu.md", "# GPU results\n").unwrap();
        let cpu = ResultsDir::new(&d, false);
        let why = cpu.may_write("lu.md").unwrap_err();
        assert!(why.contains("lu.md") && why.contains("kept"), "{why}");
        // A fresh record, and a CPU-only one, may be (re)written.
        assert!(cpu.may_write("mg.md").is_ok());
        cpu.write_markdown("mg.md", "# CPU\n").unwrap();
        assert!(cpu.may_write("mg.md").is_ok());
        assert_eq!(cpu.read_markdown("mg.md").unwrap(), "# CPU\n");
        assert!(gpu.may_write("lu.md").is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
