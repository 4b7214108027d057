//! The measured points the model is checked against, read from the Markdown that
//! `ferrocuda bench scaling` writes (`scaling.md`, `scaling-transports.md`): that tool
//! writes no JSON, so its table is read by its column names, with errors that name the
//! file, the line and the column.

use std::path::Path;

use crate::scaling::ScalingReport;
use ferrocuda::sparse::generate::TraceSpec;
use ferrocuda::{Error, Result};
use serde::Serialize;

/// What was timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum What {
    /// One distributed SpMV, halo exchange included.
    Spmv,
    /// One GMRES(m) iteration (a cycle's time over its steps).
    GmresIteration,
}

impl What {
    /// As the results table writes it.
    pub fn label(self) -> &'static str {
        match self {
            What::Spmv => "spmv",
            What::GmresIteration => "gmres iteration",
        }
    }
}

/// One row of a scaling table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredPoint {
    /// The file's name (e.g. `scaling.md`).
    pub file: String,
    /// Line of the row in the file (1-based).
    pub line: usize,
    /// `nccl`, `nccl-host-sums` or `host`.
    pub transport: String,
    /// `weak` or `strong`.
    pub mode: String,
    /// SpMV or GMRES iteration.
    pub what: What,
    /// Ranks (GPUs).
    pub gpus: usize,
    /// Grid blocks of the whole problem.
    pub grid_blocks: usize,
    /// Rows of the whole problem.
    pub rows: usize,
    /// Ghost blocks per rank, largest over the ranks.
    pub ghost_blocks: usize,
    /// Slowest rank's median, ms.
    pub ms: f64,
}

/// One results file: where it came from and its points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredFile {
    /// The file's name.
    pub file: String,
    /// Its recorded provenance (`date, commit, device`), if any.
    pub provenance: Option<String>,
    /// Cells of one grid block (`nx, ntheta, nr`).
    pub block: (usize, usize, usize),
    /// The rows of its table.
    pub points: Vec<MeasuredPoint>,
}

impl MeasuredFile {
    /// The matrix of a point of this file.
    pub fn spec(&self, p: &MeasuredPoint) -> TraceSpec {
        let (x, t, r) = self.block;
        TraceSpec::new(x, t, r, p.grid_blocks)
    }
}

fn bad(reason: String) -> Error {
    Error::InvalidArgument {
        op: "bench scale-model",
        reason,
    }
}

/// The columns read, by their headers in `bench scaling`'s table: all but the two
/// derived ones (speed-up, efficiency).
const COLUMNS: &[&str] = ScalingReport::HEADERS.split_at(8).0;

/// Reads `path`. Errors: the file cannot be read, or it is not a scaling table (names
/// the file, line and column of the first problem).
pub fn read(path: &Path) -> Result<MeasuredFile> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad(format!(
            "{}: {} (the measured points come from `ferrocuda bench scaling`)",
            path.display(),
            crate::output::plain(&e)
        ))
    })?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    parse(&text, &name)
}

/// `"date, commit c, device"` from a results file's provenance comment.
fn provenance(text: &str) -> Option<String> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("<!-- ferrocuda-results:"))?;
    let json = line.trim_end().strip_suffix("-->")?.trim();
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let field = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("unknown");
    Some(format!(
        "measured {}, commit {} on {}",
        field("date"),
        field("commit"),
        field("device")
    ))
}

/// `(nx, ntheta, nr)` from the line `- matrices: TRACE-like, grid blocks of 40 x 80 x 40
/// cells ...`.
fn block_of(text: &str, name: &str) -> Result<(usize, usize, usize)> {
    const KEY: &str = "grid blocks of ";
    for (i, line) in text.lines().enumerate() {
        if !line.starts_with("- matrices:") {
            continue;
        }
        let dims = line
            .split_once(KEY)
            .and_then(|(_, rest)| rest.split_once(" cells"))
            .map(|(d, _)| d);
        let parsed: Option<Vec<usize>> =
            dims.and_then(|d| d.split(" x ").map(|v| v.trim().parse().ok()).collect());
        return match parsed.as_deref() {
            Some(&[x, t, r]) => Ok((x, t, r)),
            _ => Err(bad(format!(
                "{name}:{}: expected \"{KEY}NX x NTHETA x NR cells\" in {line:?}",
                i + 1
            ))),
        };
    }
    Err(bad(format!(
        "{name}: no \"- matrices: ... {KEY}NX x NTHETA x NR cells\" line: not a table of `ferrocuda bench scaling`"
    )))
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// Parses the text of a scaling results file named `name`.
pub fn parse(text: &str, name: &str) -> Result<MeasuredFile> {
    let block = block_of(text, name)?;
    let lines: Vec<&str> = text.lines().collect();
    let Some(head) = lines.iter().position(|l| {
        l.starts_with('|') && cells(l).first().map(String::as_str) == Some("transport")
    }) else {
        return Err(bad(format!(
            "{name}: no table whose first column is \"transport\": not a table of `ferrocuda bench scaling`"
        )));
    };
    let headers = cells(lines[head]);
    let col = |want: &str| -> Result<usize> {
        headers.iter().position(|h| h == want).ok_or_else(|| {
            bad(format!(
                "{name}:{}: the table has no column {want:?} (columns: {headers:?})",
                head + 1
            ))
        })
    };
    let at: Vec<usize> = COLUMNS.iter().map(|c| col(c)).collect::<Result<_>>()?;
    let mut points = Vec::new();
    // Rows follow the header and its `|---|` line, up to the first line not in the table.
    for (i, line) in lines.iter().enumerate().skip(head + 2) {
        if !line.starts_with('|') {
            break;
        }
        let row = cells(line);
        let n = i + 1;
        let cell = |k: usize| -> Result<&str> {
            row.get(at[k]).map(String::as_str).ok_or_else(|| {
                bad(format!(
                    "{name}:{n}: the row has {} cells, column {:?} is missing",
                    row.len(),
                    COLUMNS[k]
                ))
            })
        };
        let count = |k: usize| -> Result<usize> {
            let v = cell(k)?;
            v.parse().map_err(|_| {
                bad(format!(
                    "{name}:{n}: column {:?} holds {v:?}, not a whole number",
                    COLUMNS[k]
                ))
            })
        };
        let what = match cell(2)? {
            "spmv" => What::Spmv,
            "gmres iteration" => What::GmresIteration,
            other => {
                return Err(bad(format!(
                    "{name}:{n}: column \"what\" holds {other:?}, expected \"spmv\" or \"gmres iteration\""
                )));
            }
        };
        let mode = cell(1)?;
        if mode != "weak" && mode != "strong" {
            return Err(bad(format!(
                "{name}:{n}: column \"mode\" holds {mode:?}, expected \"weak\" or \"strong\""
            )));
        }
        let ms_text = cell(7)?;
        let ms: f64 = ms_text
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| {
                bad(format!(
                    "{name}:{n}: column \"ms\" holds {ms_text:?}, not a positive time"
                ))
            })?;
        let p = MeasuredPoint {
            file: name.to_string(),
            line: n,
            transport: cell(0)?.to_string(),
            mode: mode.to_string(),
            what,
            gpus: count(3)?,
            grid_blocks: count(4)?,
            rows: count(5)?,
            ghost_blocks: count(6)?,
            ms,
        };
        if p.gpus == 0 || p.gpus > p.grid_blocks {
            return Err(bad(format!(
                "{name}:{n}: {} GPUs for {} grid blocks (each rank holds whole grid blocks)",
                p.gpus, p.grid_blocks
            )));
        }
        let spec = TraceSpec::new(block.0, block.1, block.2, p.grid_blocks);
        let rows = spec
            .block_rows()
            .saturating_mul(ferrocuda::sparse::generate::B);
        if rows != p.rows {
            return Err(bad(format!(
                "{name}:{n}: {} rows, but {} grid blocks of {} x {} x {} cells have {rows}",
                p.rows, p.grid_blocks, block.0, block.1, block.2
            )));
        }
        points.push(p);
    }
    if points.is_empty() {
        return Err(bad(format!("{name}:{}: the table has no rows", head + 1)));
    }
    Ok(MeasuredFile {
        file: name.to_string(),
        provenance: provenance(text),
        block,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# Distributed SpMV and GMRES: weak and strong scaling

<!-- ferrocuda-results: {\"date\":\"2026-11-28 06:54 UTC\",\"commit\":\"abc1234\",\"version\":\"0.1.0\",\"device\":\"GPU A, GPU B\"} -->

- matrices: TRACE-like, grid blocks of 4 x 8 x 4 cells (5x5 blocks, 13-point stencil), f64

| transport | mode | what | GPUs | grid blocks | rows | ghost blocks / rank | ms | t(1) / t(P) | efficiency |
|---|---|---|---|---|---|---|---|---|---|
| nccl | weak | spmv | 1 | 4 | 15360 | 0 | 0.3149 | 1.00x | 100.0% |
| nccl | weak | gmres iteration | 2 | 8 | 30720 | 64 | 0.8873 | 0.91x | 91.1% |

after the table
";

    #[test]
    fn reads_the_table_and_its_provenance() {
        let f = parse(GOOD, "scaling.md").unwrap();
        assert_eq!(f.block, (4, 8, 4));
        assert_eq!(f.points.len(), 2);
        assert_eq!(f.points[1].what, What::GmresIteration);
        assert_eq!((f.points[1].gpus, f.points[1].ghost_blocks), (2, 64));
        assert_eq!(f.points[1].line, 10);
        assert_eq!(
            f.provenance.as_deref(),
            Some("measured 2026-11-28 06:54 UTC, commit abc1234 on GPU A, GPU B")
        );
    }

    #[test]
    fn malformed_files_name_the_problem() {
        let cases = [
            (
                GOOD.replace("| 0.8873 |", "| fast |"),
                "scaling.md:10: column \"ms\" holds \"fast\"",
            ),
            (
                GOOD.replace("| 2 | 8 | 30720", "| 2 | 8 | 999"),
                "scaling.md:10: 999 rows",
            ),
            (
                GOOD.replace("gmres iteration", "cg"),
                "column \"what\" holds \"cg\"",
            ),
            (
                GOOD.replace("| ghost blocks / rank ", "| ghosts "),
                "no column \"ghost blocks / rank\"",
            ),
            (
                GOOD.replace("4 x 8 x 4 cells", "4 by 8 cells"),
                "scaling.md:5: expected",
            ),
            (
                GOOD.replace("| transport |", "| kind |"),
                "no table whose first column",
            ),
            (
                GOOD.replace("| 1 | 4 | 15360", "| 8 | 4 | 15360"),
                "8 GPUs for 4 grid blocks",
            ),
            ("# nothing here\n".to_string(), "no \"- matrices:"),
        ];
        for (text, want) in cases {
            let e = parse(&text, "scaling.md").unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
        let e = read(Path::new("/nonexistent/scaling.md"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/scaling.md"), "{e}");
    }
}
