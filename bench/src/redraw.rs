//! Drawing the charts of a results folder again, without the runs that measured them
//! (`ferrocuda bench redraw`).
//!
//! * [`redraw_dir`] draws every chart whose data file is there (`<name>.json` beside
//!   `<name>.png`, a [`ChartFile`] that every benchmark writes with its chart).
//! * [`mark_unknown_provenance`] marks the Markdown results files that record no
//!   provenance (written before they did) as stale under their title.
//! * [`charts_from_results`] rebuilds the data files of charts written before the
//!   benchmarks kept them, from what the same tools wrote beside them: the tables of
//!   `spmv-*.md`, `lu.md`, `rock4.md`, `mpc.md` and `probe.md`, and the report in
//!   `multigrid.json` (written by `ferrocuda bench mg --json`). Only numbers those files
//!   hold are used; a chart whose data they lack (per-iteration convergence histories,
//!   solution fields, swarm paths) is left as it is and reported.
//!
//! Images are written through [`crate::output::write_file`] (a temporary file renamed
//! over the old image); a symbolic link in place of an image or data file is refused,
//! and nothing is written over a file that was read.

use std::path::{Path, PathBuf};

use ferrocuda::probe::{ProbeReport, Sweep, SweepPoint};
use ferrocuda::{Error, Result};

use crate::plot::{Chart, ChartFile};

fn invalid(reason: String) -> Error {
    Error::InvalidArgument {
        op: "bench redraw",
        reason,
    }
}

fn io_err(path: &Path, e: &std::io::Error) -> Error {
    invalid(format!("{}: {}", path.display(), crate::output::plain(e)))
}

/// Refuses a symbolic link at `path` (the image or data file to be replaced).
fn no_link(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(invalid(format!(
            "{} is a symbolic link: refusing to write through it",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// The regular files of `dir` and of its sub-folders (links are not followed), sorted.
fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| io_err(&d, &e))?;
        for e in entries {
            let e = e.map_err(|e| io_err(&d, &e))?;
            let t = e.file_type().map_err(|err| io_err(&e.path(), &err))?;
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

fn ext_is(p: &Path, ext: &str) -> bool {
    p.extension().and_then(|e| e.to_str()) == Some(ext)
}

fn name_of(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// Draws every chart of `dir` (and its sub-folders) from its data file: each
/// `<name>.json` that is a [`ChartFile`] gives `<name>.png`. Returns the images
/// written; other JSON files are skipped.
pub fn redraw_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for path in files(dir)?.into_iter().filter(|p| ext_is(p, "json")) {
        let text = std::fs::read_to_string(&path).map_err(|e| io_err(&path, &e))?;
        let Some(file) = ChartFile::parse(&text, &path.display().to_string())? else {
            continue;
        };
        let png = path.with_extension("png");
        no_link(&png)?;
        let bytes = file.chart.render_png(file.width, file.height)?;
        crate::output::write_file(&png, &bytes)?;
        written.push(png);
    }
    Ok(written)
}

/// Marks each Markdown file of `dir` (and its sub-folders) that records no provenance
/// with [`crate::output::UNKNOWN_FILE_LINE`] under its title; returns the files marked.
pub fn mark_unknown_provenance(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut marked = Vec::new();
    for path in files(dir)?.into_iter().filter(|p| ext_is(p, "md")) {
        let text = std::fs::read_to_string(&path).map_err(|e| io_err(&path, &e))?;
        if let Some(text) = crate::output::with_unknown_line(&text) {
            crate::output::write_file(&path, text.as_bytes())?;
            marked.push(path);
        }
    }
    Ok(marked)
}

/// What [`charts_from_results`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rebuilt {
    /// Data files written (`<name>.json`), each with its image.
    pub data: Vec<PathBuf>,
    /// Images of the folder left as they are because no results file holds their data,
    /// with the reason.
    pub kept: Vec<(PathBuf, String)>,
}

/// Rebuilds the data file and the image of every chart of `dir` (and its sub-folders)
/// whose numbers are in a results file the same tool wrote beside it (module docs),
/// and lists the images it cannot rebuild.
pub fn charts_from_results(dir: &Path) -> Result<Rebuilt> {
    let all = files(dir)?;
    let mut out = Rebuilt::default();
    for path in &all {
        let name = name_of(path);
        let folder = path.parent().unwrap_or(Path::new("."));
        let read = || std::fs::read_to_string(path).map_err(|e| io_err(path, &e));
        let source = format!("the tables of {name}");
        let charts: Vec<(String, ChartFile)> =
            if name.starts_with("spmv-") && name.ends_with(".md") && name != "spmv-thesis.md" {
                let (w, h) = crate::spmv::SPMV_CHART_SIZE;
                spmv_chart(&read()?, name)?
                    .map(|c| {
                        (
                            name.replace(".md", ".png"),
                            ChartFile::new(c, w, h, &source),
                        )
                    })
                    .into_iter()
                    .collect()
            } else if name == "lu.md" {
                vec![(
                    "lu.png".into(),
                    ChartFile::new(lu_chart(&read()?)?, 1280, 640, &source),
                )]
            } else if name == "rock4.md" {
                vec![(
                    "rock4.png".into(),
                    ChartFile::new(rock4_chart(&read()?)?, 1280, 640, &source),
                )]
            } else if name == "mpc.md" {
                vec![(
                    "mpc.png".into(),
                    ChartFile::new(mpc_chart(&read()?)?, 1280, 640, &source),
                )]
            } else if name == "probe.md" {
                probe_charts(&read()?)?
                    .into_iter()
                    .map(|(png, c)| (png, ChartFile::new(c, 1200, 640, &source)))
                    .collect()
            } else if name == "multigrid.json" {
                let source = "the report in multigrid.json";
                multigrid_charts(&read()?)?
                    .into_iter()
                    .map(|(png, c)| (png, ChartFile::new(c, 1024, 576, source)))
                    .collect()
            } else {
                Vec::new()
            };
        for (png, file) in charts {
            let png = folder.join(png);
            let json = png.with_extension("json");
            no_link(&png)?;
            no_link(&json)?;
            if json == *path {
                return Err(invalid(format!(
                    "{} would be written over its input",
                    json.display()
                )));
            }
            file.write(&png)?;
            out.data.push(json);
        }
    }
    out.kept = charts_without_data(dir)?;
    Ok(out)
}

/// The images of `dir` (and its sub-folders) without a data file beside them, with the
/// reason they cannot be rebuilt from the results files.
pub fn charts_without_data(dir: &Path) -> Result<Vec<(PathBuf, String)>> {
    Ok(files(dir)?
        .into_iter()
        .filter(|p| ext_is(p, "png") && !p.with_extension("json").exists())
        .map(|png| {
            let why = why_kept(name_of(&png));
            (png, why)
        })
        .collect())
}

/// Why an image without data cannot be rebuilt from the results files.
fn why_kept(name: &str) -> String {
    if name.starts_with("gmres-") {
        "per-step residual histories are not in gmres.md (rerun `ferrocuda bench gmres`)".into()
    } else if name.starts_with("rock4-") {
        "solution fields are not in rock4.md (rerun `ferrocuda bench rock4`)".into()
    } else if name.starts_with("mpc-trajectories") || name.starts_with("frame-") {
        "swarm positions are not in mpc.md (rerun `ferrocuda bench mpc` / `ferrocuda mpc --frames`)"
            .into()
    } else {
        "no results file beside it holds its data".into()
    }
}

/// A Markdown table: the last heading above it, its header and its rows.
#[derive(Debug, Clone)]
struct Table {
    heading: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Column index of `name` (the first one of that name).
    fn col(&self, name: &str) -> Result<usize> {
        self.headers.iter().position(|h| h == name).ok_or_else(|| {
            invalid(format!(
                "the table under {:?} has no column {name:?}",
                self.heading
            ))
        })
    }
}

fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(|c| c.trim().to_string()).collect()
}

/// The Markdown tables of `text`, in order.
fn tables(text: &str) -> Vec<Table> {
    let mut out: Vec<Table> = Vec::new();
    let mut heading = String::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        if l.starts_with('#') {
            heading = l.trim_start_matches('#').trim().to_string();
        } else if l.starts_with('|')
            && lines
                .get(i + 1)
                .is_some_and(|n| n.trim().starts_with("|---"))
        {
            let headers = cells(l);
            let mut rows = Vec::new();
            i += 2;
            while i < lines.len() && lines[i].trim().starts_with('|') {
                rows.push(cells(lines[i]));
                i += 1;
            }
            out.push(Table {
                heading: heading.clone(),
                headers,
                rows,
            });
            continue;
        }
        i += 1;
    }
    out
}

/// The first table with all of `columns`.
fn table_with<'a>(tables: &'a [Table], columns: &[&str], file: &str) -> Result<&'a Table> {
    tables
        .iter()
        .find(|t| columns.iter().all(|c| t.headers.iter().any(|h| h == c)))
        .ok_or_else(|| invalid(format!("{file}: no table with the columns {columns:?}")))
}

/// A number cell: `None` for "-", else the number before any unit or "x".
fn num(cell: &str, what: &str) -> Result<Option<f64>> {
    let c = cell.trim();
    if c == "-" || c.is_empty() {
        return Ok(None);
    }
    let first = c.split_whitespace().next().unwrap_or("");
    let first = first.trim_end_matches('x').trim_end_matches('%');
    first
        .parse::<f64>()
        .map(Some)
        .map_err(|_| invalid(format!("{what}: {cell:?} is not a number")))
}

fn need(v: Option<f64>, cell: &str, what: &str) -> Result<f64> {
    v.ok_or_else(|| invalid(format!("{what}: {cell:?} has no value")))
}

fn int(cell: &str, what: &str) -> Result<usize> {
    cell.trim()
        .parse()
        .map_err(|_| invalid(format!("{what}: {cell:?} is not a whole number")))
}

/// The text after `prefix` on the first line that starts with it.
fn line_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .map(str::trim)
}

/// A device name as the tools print it, `None` where no GPU ran.
fn device(name: &str) -> Option<String> {
    let n = name.trim();
    let none = n.is_empty() || n.starts_with("none") || n == "no GPU";
    (!none).then(|| n.to_string())
}

/// `spmv-<case>-<scalar>.md` (one section of `ferrocuda bench spmv`); `None` for a file
/// without a results table.
fn spmv_chart(text: &str, file: &str) -> Result<Option<Chart>> {
    let ts = tables(text);
    let Ok(t) = table_with(&ts, &["format", "kernel", "on", "GB/s"], file) else {
        return Ok(None);
    };
    let mut words = t.heading.split_whitespace();
    let (Some(case), Some(scalar)) = (words.next(), words.next()) else {
        return Err(invalid(format!(
            "{file}: heading {:?} is not \"CASE SCALAR\"",
            t.heading
        )));
    };
    let dev = line_after(text, "- device:").and_then(device);
    let copy = match line_after(text, "- copy ceiling:") {
        Some(c) => num(c, file)?,
        None => None,
    };
    let (cf, ck, con, cg) = (
        t.col("format")?,
        t.col("kernel")?,
        t.col("on")?,
        t.col("GB/s")?,
    );
    let mut rows = Vec::new();
    for r in &t.rows {
        let what = format!("{file}, row {:?}", r.get(ck));
        let gbps = need(num(&r[cg], &what)?, &r[cg], &what)?;
        rows.push((r[cf].clone(), r[ck].clone(), r[con].clone(), gbps));
    }
    Ok(Some(Chart::Bar(crate::spmv::spmv_chart(
        case,
        scalar,
        dev.as_deref(),
        copy,
        &rows,
    ))))
}

/// `lu.md`: the "Pivoting LU against cuSOLVER" table.
fn lu_chart(text: &str) -> Result<Chart> {
    let ts = tables(text);
    let cols = ["prec", "n", "ours GF/s", "cuSOLVER GF/s", "CPU GF/s"];
    let t = table_with(&ts, &cols, "lu.md")?;
    let dev = line_after(text, "Device:")
        .and_then(|l| l.split(';').next())
        .and_then(device);
    let c: Vec<usize> = cols.iter().map(|n| t.col(n)).collect::<Result<_>>()?;
    let mut rows = Vec::new();
    for r in &t.rows {
        let what = format!("lu.md, row {} {}", r[c[0]], r[c[1]]);
        rows.push((
            r[c[0]].clone(),
            int(&r[c[1]], &what)?,
            [
                num(&r[c[2]], &what)?,
                num(&r[c[3]], &what)?,
                num(&r[c[4]], &what)?,
            ],
        ));
    }
    Ok(Chart::Line(crate::lu::lu_chart(dev.as_deref(), &rows)))
}

/// `rock4.md`: the Table 6.4 table.
fn rock4_chart(text: &str) -> Result<Chart> {
    let ts = tables(text);
    let cols = [
        "N",
        "CPU 1 core s",
        "CPU all cores s",
        "GPU host-decided s",
        "GPU device-decided s",
        "thesis CPU s",
        "thesis GPU s",
    ];
    let t = table_with(&ts, &cols, "rock4.md")?;
    let dev = line_after(text, "- device:")
        .and_then(|l| l.split(';').next())
        .and_then(device);
    let c: Vec<usize> = cols.iter().map(|n| t.col(n)).collect::<Result<_>>()?;
    let mut rows = Vec::new();
    for r in &t.rows {
        let what = format!("rock4.md, row N = {}", r[c[0]]);
        let mut v = [None; 6];
        for k in 0..6 {
            v[k] = num(&r[c[k + 1]], &what)?;
        }
        rows.push((int(&r[c[0]], &what)?, v));
    }
    Ok(Chart::Line(crate::rock4::rock4_chart(
        dev.as_deref(),
        &rows,
    )))
}

/// `mpc.md`: Table 8.3 (N = 10) and the large swarms.
fn mpc_chart(text: &str) -> Result<Chart> {
    let ts = tables(text);
    let file = "mpc.md";
    let header = line_after(text, "Device:").unwrap_or("");
    let dev = header.split(';').next().and_then(device);
    let threads = header
        .split("CPU twin on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .ok_or_else(|| invalid(format!("{file}: no \"CPU twin on N threads\"")))?;
    let threads = int(threads, file)?;
    let cols = [
        "M",
        "N",
        "+exact CPU ms",
        "+exact GPU ms",
        "thesis +FD grad CPU/GPU ms",
    ];
    let t = table_with(&ts, &cols, file)?;
    let c: Vec<usize> = cols.iter().map(|n| t.col(n)).collect::<Result<_>>()?;
    let (mut cpu, mut gpu, mut thesis) = (Vec::new(), Vec::new(), Vec::new());
    for r in t.rows.iter().filter(|r| r[c[1]] == "10") {
        let what = format!("{file}, Table 8.3 row M = {}", r[c[0]]);
        let m = int(&r[c[0]], &what)? as f64;
        cpu.push((m, need(num(&r[c[2]], &what)?, &r[c[2]], &what)?));
        if let Some(g) = num(&r[c[3]], &what)? {
            gpu.push((m, g));
        }
        // "CPU ms / GPU ms" of the thesis: its GPU's forward differences.
        if let Some(g) = r[c[4]].split('/').nth(1) {
            thesis.push((m, need(num(g, &what)?, g, &what)?));
        }
    }
    let cols = ["M", "exact CPU ms", "exact GPU ms"];
    if let Ok(t) = table_with(&ts, &cols, file) {
        let c: Vec<usize> = cols.iter().map(|n| t.col(n)).collect::<Result<_>>()?;
        for r in &t.rows {
            let what = format!("{file}, large swarm M = {}", r[c[0]]);
            let m = int(&r[c[0]], &what)? as f64;
            cpu.push((m, need(num(&r[c[1]], &what)?, &r[c[1]], &what)?));
            if let Some(g) = num(&r[c[2]], &what)? {
                gpu.push((m, g));
            }
        }
    }
    Ok(Chart::Line(crate::mpc::mpc_chart(
        dev.as_deref(),
        threads,
        [cpu, gpu, thesis],
    )))
}

/// Bytes of a size as the probe prints it ("4 KiB", "16 MiB", "1 GiB").
fn bytes_of(cell: &str, what: &str) -> Result<f64> {
    let mut w = cell.split_whitespace();
    let (Some(v), Some(unit)) = (w.next(), w.next()) else {
        return Err(invalid(format!("{what}: {cell:?} is not a size")));
    };
    let v: f64 = v
        .parse()
        .map_err(|_| invalid(format!("{what}: {cell:?} is not a size")))?;
    let scale = match unit {
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(invalid(format!("{what}: unit of {cell:?}"))),
    };
    Ok(v * scale)
}

/// `probe.md`: the sweeps, the pointer chase, the divergence and the DRAM and PCIe
/// ceilings (of the read and the host-to-device figures).
fn probe_charts(text: &str) -> Result<Vec<(String, Chart)>> {
    let file = "probe.md";
    let ts = tables(text);
    let mut r = ProbeReport::skipped(String::new());
    r.gpu_skipped = None;
    r.device = line_after(text, "- device:").and_then(device);
    let sweep = |t: &Table, name: &str| -> Result<Sweep> {
        let mut points = Vec::new();
        for row in &t.rows {
            let what = format!("{file}, {:?}", t.heading);
            points.push(SweepPoint {
                bytes: bytes_of(&row[0], &what)?,
                value: need(num(&row[1], &what)?, &row[1], &what)?,
            });
        }
        Ok(Sweep {
            name: name.to_string(),
            points,
        })
    };
    let (mut dram, mut pcie) = (None, None);
    for t in &ts {
        if let Some(name) = t.heading.strip_prefix("Read sweep: ") {
            r.bandwidth_sweeps.push(sweep(t, name)?);
        } else if let Some(name) = t.heading.strip_prefix("Transfer sweep: ") {
            r.transfers.push(sweep(t, name)?);
        } else if t.headers.first().map(String::as_str) == Some("figure") {
            let (cf, cm, cc) = (t.col("figure")?, t.col("measured")?, t.col("ceiling")?);
            for row in &t.rows {
                let what = format!("{file}, {:?}", row[cf]);
                let f = row[cf].as_str();
                if t.heading.starts_with("Memory bandwidth") && f.starts_with("read ") {
                    dram = dram.or(num(&row[cc], &what)?);
                } else if t.heading.starts_with("Host <-> device") && f.contains("bandwidth") {
                    pcie = pcie.or(num(&row[cc], &what)?);
                } else if t.heading.starts_with("Memory latency") {
                    if let Some(size) = f.strip_prefix("pointer chase, ") {
                        r.chase.push(SweepPoint {
                            bytes: bytes_of(size, &what)?,
                            value: need(num(&row[cm], &what)?, &row[cm], &what)?,
                        });
                    }
                } else if t.heading.starts_with("Warp divergence")
                    && let Some(p) = f.split(" paths per warp").next().filter(|p| *p != f)
                {
                    let paths = int(p, &what)? as u32;
                    r.divergence
                        .push((paths, need(num(&row[cm], &what)?, &row[cm], &what)?));
                }
            }
        }
    }
    Ok(crate::probe::charts_with_ceilings(&r, dram, pcie)
        .into_iter()
        .map(|(png, c)| (png, Chart::Line(c)))
        .collect())
}

/// `multigrid.json` (the report of `ferrocuda bench mg --json`): the curves of its
/// charts, read from the JSON by field name.
fn multigrid_charts(text: &str) -> Result<Vec<(String, Chart)>> {
    use crate::multigrid::{MgChartData, MgLargeCurves, MgThesisCurves};
    use serde_json::Value;
    let file = "multigrid.json";
    let v: Value =
        serde_json::from_str(text).map_err(|e| invalid(format!("{file}: not JSON: {e}")))?;
    let bad = |what: &str| invalid(format!("{file}: {what} missing or of the wrong type"));
    let floats = |v: &Value, what: &str| -> Result<Vec<f64>> {
        v.as_array()
            .ok_or_else(|| bad(what))?
            .iter()
            .map(|x| x.as_f64().ok_or_else(|| bad(what)))
            .collect()
    };
    let uint = |v: &Value, what: &str| -> Result<usize> {
        v.as_u64().map(|u| u as usize).ok_or_else(|| bad(what))
    };
    let string = |v: &Value, what: &str| -> Result<String> {
        v.as_str().map(str::to_string).ok_or_else(|| bad(what))
    };
    let norms = |r: &Value, what: &str| -> Result<(Vec<f64>, Vec<f64>)> {
        Ok((
            floats(&r["residual_norm"], &format!("{what}.residual_norm"))?,
            floats(&r["error_norm"], &format!("{what}.error_norm"))?,
        ))
    };
    let mut d = MgChartData {
        device: v["device"].as_str().map(str::to_string),
        sweep_n: uint(&v["sweep_n"], "sweep_n")?,
        ..Default::default()
    };
    for (i, r) in v["thesis"]
        .as_array()
        .ok_or_else(|| bad("thesis"))?
        .iter()
        .enumerate()
    {
        let what = format!("thesis[{i}]");
        let ours = match (&r["gpu"], &r["cpu"]) {
            (g, _) if !g.is_null() => Some(norms(g, &format!("{what}.gpu"))?),
            (_, c) if !c.is_null() => Some(norms(c, &format!("{what}.cpu"))?),
            _ => None,
        };
        let mut thesis = Vec::new();
        for p in r["thesis"].as_array().ok_or_else(|| bad(&what))? {
            let p = floats(p, &format!("{what}.thesis"))?;
            if p.len() != 2 {
                return Err(bad(&format!("{what}.thesis")));
            }
            thesis.push((p[0], p[1]));
        }
        d.thesis.push(MgThesisCurves {
            tables: string(&r["tables"], &format!("{what}.tables"))?,
            smoother: string(&r["smoother"], &format!("{what}.smoother"))?,
            n: uint(&r["n"], &format!("{what}.n"))?,
            base: uint(&r["base"], &format!("{what}.base"))?,
            ours,
            thesis,
        });
    }
    for (i, l) in v["large"]
        .as_array()
        .ok_or_else(|| bad("large"))?
        .iter()
        .enumerate()
    {
        let what = format!("large[{i}]");
        let g = &l["gpu"];
        let (residual, error) = norms(g, &format!("{what}.gpu"))?;
        d.large.push(MgLargeCurves {
            n: uint(&g["options"]["n"], &format!("{what}.gpu.options.n"))?,
            precision: string(&g["precision"], &format!("{what}.gpu.precision"))?,
            setup: string(&l["setup"], &format!("{what}.setup"))?,
            residual,
            error,
            discretisation_error: g["discretisation_error"]
                .as_f64()
                .ok_or_else(|| bad(&format!("{what}.gpu.discretisation_error")))?,
        });
    }
    for (i, s) in v["sweep"]
        .as_array()
        .ok_or_else(|| bad("sweep"))?
        .iter()
        .enumerate()
    {
        let what = format!("sweep[{i}]");
        if !s["gpu"].is_null() {
            let secs = floats(
                &s["gpu"]["cycle_seconds"],
                &format!("{what}.gpu.cycle_seconds"),
            )?;
            d.sweep.push((
                uint(&s["inner"], &format!("{what}.inner"))?,
                crate::multigrid::best_ms(&secs),
            ));
        }
    }
    Ok(crate::multigrid::multigrid_charts(&d)
        .into_iter()
        .map(|(png, _, c)| (png, Chart::Line(c)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPMV: &str = "## case4 f64\n\n- matrix: case4\n- device: Test GPU\n- CPU: 2 rayon threads\n- copy ceiling: 3000.0 GB/s (cuMemcpyDtoD)\n\n| format | kernel | on | ms | GB/s | % of copy |\n|---|---|---|---|---|---|\n| CSR | rayon | CPU | 1.0 | 75.3 | - |\n| BELL 5x5 | ferrocuda, thread per row | GPU | 0.1 | 2824.3 | 94.1 |\n| CSR | cuSPARSE SpMV (generic API) | GPU | 0.2 | 2452.3 | 81.7 |\n\n![spmv-case4-f64](spmv-case4-f64.png)\n";

    #[test]
    fn markdown_tables_parse_with_their_headings() {
        let ts = tables(SPMV);
        assert_eq!(ts.len(), 1);
        assert_eq!(ts[0].heading, "case4 f64");
        assert_eq!(ts[0].rows.len(), 3);
        assert_eq!(ts[0].rows[1][1], "ferrocuda, thread per row");
        assert_eq!(num("2.2x", "t").unwrap(), Some(2.2));
        assert_eq!(num("- ", "t").unwrap(), None);
        assert!(num("many", "t").is_err());
        assert_eq!(bytes_of("16 MiB", "t").unwrap(), 16.0 * 1048576.0);
    }

    #[test]
    fn spmv_chart_comes_from_its_table() {
        let Some(Chart::Bar(c)) = spmv_chart(SPMV, "spmv-case4-f64.md").unwrap() else {
            panic!("no bar chart");
        };
        assert!(c.title.contains("case4 f64 on Test GPU"), "{}", c.title);
        assert_eq!(c.groups.len(), 3);
        assert_eq!(c.groups[0].values, vec![Some(75.3), None, None]);
        assert_eq!(c.groups[1].values, vec![None, Some(2824.3), None]);
        assert_eq!(c.groups[2].values, vec![None, None, Some(2452.3)]);
        assert_eq!(c.reference_lines[0].0, 3000.0);
        assert_eq!(c.reference_lines[1].0, 2452.3);
    }

    #[test]
    fn redraw_rebuilds_and_draws_a_results_folder_copy() {
        let dir = tempfile::tempdir().expect("temp dir");
        let sub = dir.path().join("h200");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("spmv-case4-f64.md"), SPMV).unwrap();
        std::fs::write(sub.join("spmv.md"), "# SpMV benchmark\n").unwrap();
        std::fs::write(dir.path().join("gmres-case1-f64-none.png"), b"old image").unwrap();
        std::fs::write(dir.path().join("other.json"), "{\"device\": \"x\"}").unwrap();
        let r = charts_from_results(dir.path()).expect("rebuild");
        assert_eq!(r.data, vec![sub.join("spmv-case4-f64.json")]);
        assert_eq!(r.kept.len(), 1);
        assert!(r.kept[0].1.contains("gmres.md"), "{:?}", r.kept);
        let png = sub.join("spmv-case4-f64.png");
        let first = std::fs::read(&png).expect("image");
        assert_eq!(&first[1..4], b"PNG");
        // Redraw from the data alone: the same image, the other files untouched.
        std::fs::remove_file(&png).unwrap();
        assert_eq!(redraw_dir(dir.path()).expect("redraw"), vec![png.clone()]);
        assert_eq!(std::fs::read(&png).unwrap(), first);
        assert_eq!(
            std::fs::read(dir.path().join("gmres-case1-f64-none.png")).unwrap(),
            b"old image"
        );
        #[cfg(unix)]
        {
            std::fs::remove_file(&png).unwrap();
            std::os::unix::fs::symlink(dir.path().join("elsewhere.png"), &png).unwrap();
            assert!(
                redraw_dir(dir.path())
                    .unwrap_err()
                    .to_string()
                    .contains("symbolic link")
            );
        }
    }
}
