//! Every command ends in a report: one trait renders it as text or JSON on stdout and
//! says which exit status it implies (docs/reliability.md).

use std::io::Write;

use serde::Serialize;

use ferrocuda::{Error, Result};

/// The exit status of a command that computed its answer (errors: [`exit_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// 0: done, every output written.
    Success,
    /// 3: an iteration stopped before its tolerance or end time (the report says why).
    NotConverged,
}

impl Status {
    /// The process exit status.
    pub fn code(self) -> i32 {
        match self {
            Status::Success => 0,
            Status::NotConverged => 3,
        }
    }
}

/// The exit status of an error: 2 where the input has no reliable answer (a singular
/// matrix, or one singular to working precision), 1 for everything else (bad options or
/// input, sizes, I/O, devices, a zero pivot without pivoting, a failed integration).
pub fn exit_code(e: &Error) -> i32 {
    if matches!(
        e,
        Error::Singular { .. } | Error::SingularToWorkingPrecision { .. }
    ) {
        2
    } else {
        1
    }
}

/// What a command reports.
pub trait Report {
    /// The form for people.
    fn text(&self) -> String;
    /// The form for programs (pretty-printed JSON).
    fn json(&self) -> serde_json::Result<String>;
    /// The exit status it implies.
    fn status(&self) -> Status {
        Status::Success
    }
}

/// A report type of the library or the benchmarks with its text form.
pub struct Shown<T> {
    value: T,
    text: fn(&T) -> String,
}

impl<T: Serialize> Report for Shown<T> {
    fn text(&self) -> String {
        (self.text)(&self.value)
    }

    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(&self.value)
    }
}

/// `value` as a [`Report`] whose text is `text(value)`.
pub fn shown<T: Serialize + 'static>(value: T, text: fn(&T) -> String) -> Box<dyn Report> {
    Box::new(Shown { value, text })
}

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// [`Report::text`].
    Text,
    /// [`Report::json`].
    Json,
    /// Nothing (`--quiet`, or a command that printed as it went).
    Nothing,
}

impl Format {
    /// `--json` or text.
    pub fn of(json: bool) -> Format {
        if json { Format::Json } else { Format::Text }
    }
}

/// Prints `report` on stdout. A closed pipe is not an error (the reader has what it
/// wanted); any other failure is (`info --json > /dev/full` exits 1).
pub fn print(report: &dyn Report, format: Format) -> Result<()> {
    let mut text = match format {
        Format::Text => report.text(),
        Format::Json => report.json().map_err(|e| Error::InvalidArgument {
            op: "json output",
            reason: e.to_string(),
        })?,
        Format::Nothing => return Ok(()),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    write_stdout(text.as_bytes())
}

/// Writes `bytes` to stdout and flushes (see [`print()`] for the errors).
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::InvalidArgument {
            op: "writing to stdout",
            reason: ferrocuda_bench::output::plain(&e),
        }),
        _ => Ok(()),
    }
}

/// A short, stable name of an error's kind for the JSON error object (snake case of the
/// library's variant; `usage` is a command line not understood).
pub fn error_kind(e: &Error) -> &'static str {
    match e {
        Error::Gpu(_) => "gpu",
        Error::Sparse(_) => "sparse",
        Error::DimensionMismatch { .. } => "dimension_mismatch",
        Error::Empty { .. } => "empty",
        Error::WrongDevice { .. } => "wrong_device",
        Error::Vendor { .. } => "vendor",
        Error::Singular { .. } => "singular",
        Error::NotSquare { .. } => "not_square",
        Error::OutOfHostMemory { .. } => "out_of_host_memory",
        Error::OutOfDeviceMemory { .. } => "out_of_device_memory",
        Error::NonFinite { .. } => "non_finite",
        Error::ZeroPivot { .. } => "zero_pivot",
        Error::SingularToWorkingPrecision { .. } => "singular_to_working_precision",
        Error::IntegrationFailed { .. } => "integration_failed",
        Error::InvalidArgument { .. } => "invalid_argument",
        _ => "other",
    }
}

/// The numbers an error carries, for programs: sizes in bytes, the pivot column, rcond.
fn error_details(e: &Error) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::json;
    let v = match e {
        Error::OutOfHostMemory {
            requested,
            limit,
            bound,
            ..
        } => json!({
            // u128 does not fit every JSON reader: a string keeps it exact.
            "requested_bytes": requested.to_string(),
            "limit_bytes": limit,
            "limit": bound,
        }),
        Error::OutOfDeviceMemory {
            requested,
            free,
            total,
            ordinal,
            ..
        } => json!({
            "requested_bytes": requested.to_string(),
            "free_bytes": free,
            "total_bytes": total,
            "device": ordinal,
        }),
        Error::Singular { column, .. } | Error::ZeroPivot { column, .. } => {
            json!({ "column": column })
        }
        Error::SingularToWorkingPrecision {
            rcond,
            eps,
            precision,
            ..
        } => json!({ "rcond": rcond, "eps": eps, "precision": precision }),
        Error::DimensionMismatch {
            expected, found, ..
        } => json!({ "expected": expected, "found": found }),
        Error::IntegrationFailed { report, .. } => json!({ "final_time": report.final_time }),
        _ => json!({}),
    };
    match v {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// clap's message without its `error: ` prefix, usage and tips: the first line.
pub fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// Prints the JSON error object of a failed `--json` command on stdout (one line):
/// `{"error": {"kind", "message", "exit_status", ...the numbers of `e`}}`. A failure to
/// print is ignored: the error is on stderr already.
pub fn print_error_json(kind: &str, message: &str, exit_status: i32, e: Option<&Error>) {
    let mut body = e.map(error_details).unwrap_or_default();
    body.insert("kind".into(), kind.into());
    body.insert("message".into(), message.into());
    body.insert("exit_status".into(), exit_status.into());
    let v = serde_json::json!({ "error": body });
    let _ = write_stdout(format!("{v}\n").as_bytes());
}

/// `msg` without the library's function names (`Bcsr::from_csr: `, `dense::cpu::factor: `)
/// that start its parts: errors speak the user's language.
pub fn user_words(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    loop {
        let skipped = library_name_len(rest);
        rest = &rest[skipped..];
        match rest.find(": ") {
            Some(i) => {
                out.push_str(&rest[..i + 2]);
                rest = &rest[i + 2..];
            }
            None => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// The length of a leading `path::name: ` (identifiers joined by `::`), else 0.
fn library_name_len(s: &str) -> usize {
    let Some(end) = s.find(": ") else { return 0 };
    let head = &s[..end];
    let ident = |p: &str| {
        !p.is_empty()
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !p.starts_with(|c: char| c.is_ascii_digit())
    };
    if head.contains("::") && head.split("::").all(ident) {
        end + 2
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names_are_dropped_and_the_rest_kept() {
        assert_eq!(
            user_words("Bcsr::from_csr: block size 5 is larger than 3"),
            "block size 5 is larger than 3"
        );
        assert_eq!(
            user_words("--matrix A.mtx: Csr::try_from_coo: a 3 x 3 matrix: needs 8 bytes"),
            "--matrix A.mtx: a 3 x 3 matrix: needs 8 bytes"
        );
        assert_eq!(user_words("lu: x::y is fine here"), "lu: x::y is fine here");
        assert_eq!(user_words("no colon"), "no colon");
    }
}
