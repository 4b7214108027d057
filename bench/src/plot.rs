//! The benchmark charts (`docs/results/*.png`): what a chart shows is described by
//! plain data ([`BarChart`], [`LineChart`], [`HeatMap`]) and drawn by the `plotters`
//! library; this module is the only code that knows `plotters`.
//!
//! * A [`BarChart`] draws horizontal bars, one row per group with its whole label on
//!   the left (wrapped, never cut), one colour per series (Okabe & Ito's colour-blind
//!   friendly palette), the value at the end of each bar, and dashed vertical reference
//!   lines such as a ceiling ("device copy") and a vendor's result ("cuSPARSE CSR").
//! * A [`LineChart`] draws one line per series (markers too when a series has few
//!   points) on a linear or logarithmic y axis: convergence histories, scaling curves,
//!   with an optional dashed horizontal reference line.
//! * A [`HeatMap`] draws fields side by side with a colour bar (solution snapshots).
//!
//! Text is DejaVu Sans, bundled in the crate (`bench/fonts/`, Bitstream Vera licence)
//! and registered with `plotters`' `ab_glyph` feature: no system font, no fontconfig
//! and no GPU is needed, so charts look the same everywhere. Pixels are encoded with
//! the pure-Rust `png` crate.
//!
//! Every chart a benchmark writes also gets its data as JSON beside the image
//! ([`ChartFile`], `<name>.json` next to `<name>.png`), so [`crate::redraw`] can draw
//! it again later without the run that measured it.
//!
//! ```no_run
//! use ferrocuda_bench::plot::{BarChart, BarGroup};
//!
//! let chart = BarChart {
//!     title: "axpy, n = 2^24".into(),
//!     value_label: "GB/s".into(),
//!     series: vec!["CPU".into(), "GPU".into()],
//!     groups: vec![
//!         BarGroup { label: "f32".into(), values: vec![Some(41.0), Some(2870.0)] },
//!         BarGroup { label: "f64".into(), values: vec![Some(44.5), None] },
//!     ],
//!     reference_lines: vec![(3350.0, "copy bandwidth".into())],
//!     log_x: false,
//! };
//! chart.write_png(std::path::Path::new("docs/results/axpy.png"), 1024, 576)?;
//! # Ok::<(), ferrocuda::Error>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Once;

use ferrocuda::{Error, Result};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

/// A chart of horizontal bars: one row per group, one bar per series present in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BarChart {
    /// Title, drawn on top.
    pub title: String,
    /// Label of the value axis (units), e.g. "GB/s"; may be empty.
    pub value_label: String,
    /// The groups, top to bottom.
    pub groups: Vec<BarGroup>,
    /// Series names, one colour each, in legend order (colours repeat after 8).
    pub series: Vec<String>,
    /// Dashed vertical lines at values, with their labels in the legend, e.g. a ceiling
    /// `(3006.7, "device copy")` and a vendor's result. They count for the axis range.
    pub reference_lines: Vec<(f64, String)>,
    /// A logarithmic value axis (whole decades), for values that span several orders of
    /// magnitude; every value and reference line must then be positive.
    #[serde(default)]
    pub log_x: bool,
}

/// One group of bars: its label and one value per series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BarGroup {
    /// Label left of the group, wrapped onto up to three lines when long.
    pub label: String,
    /// One value per series of the chart, in the chart's series order; `None` draws no
    /// bar (the group's other bars share its row). Negative values are drawn as 0; NaN
    /// and infinite values are errors.
    pub values: Vec<Option<f64>>,
}

/// A line chart: one line per series, for instance the relative residual of an
/// iterative solver against the iteration, on a linear or logarithmic y axis.
///
/// A series with fewer than 40 points also gets a marker on each point (a disc,
/// triangle, square or cross, by series), shown in its legend key too.
///
/// ```no_run
/// use ferrocuda_bench::plot::{LineChart, LineSeries};
///
/// let history = |rate: f64, n: usize| -> Vec<(f64, f64)> {
///     (0..=n).map(|k| (k as f64, rate.powi(k as i32))).collect()
/// };
/// let chart = LineChart {
///     title: "GMRES(30), poisson2d n = 2^20".into(),
///     x_label: "iteration".into(),
///     y_label: "relative residual".into(),
///     log_y: true,
///     series: vec![
///         LineSeries { name: "GPU CGS2".into(), points: history(0.93, 270) },
///         LineSeries { name: "CPU".into(), points: history(0.94, 310) },
///     ],
///     reference_line: Some((1e-8, "tolerance".into())),
/// };
/// chart.write_png(std::path::Path::new("docs/results/gmres.png"), 1024, 576)?;
/// # Ok::<(), ferrocuda::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LineChart {
    /// Title, drawn on top.
    pub title: String,
    /// Label of the x axis; may be empty.
    pub x_label: String,
    /// Label of the y axis; may be empty.
    pub y_label: String,
    /// Logarithmic y axis. Every y value (and the reference line) must then be
    /// positive: a zero or negative value is an error rather than a silently dropped
    /// point.
    pub log_y: bool,
    /// The series, one colour each, in legend order (colours repeat after 8). An empty
    /// series only takes its place in the legend.
    pub series: Vec<LineSeries>,
    /// An optional dashed horizontal line at a y value, with its label in the legend
    /// (e.g. `(1e-8, "tolerance")`). Its value counts for the axis range.
    pub reference_line: Option<(f64, String)>,
}

/// One series of a [`LineChart`]: its legend name and its points.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LineSeries {
    /// Name shown in the legend.
    pub name: String,
    /// (x, y) points, joined in this order; NaN and infinite coordinates are errors.
    pub points: Vec<(f64, f64)>,
}

/// Fields drawn side by side with one colour scale (viridis, low dark blue to high
/// yellow) and a colour bar: solution snapshots.
///
/// ```no_run
/// use ferrocuda_bench::plot::{HeatMap, HeatPanel};
/// let values: Vec<f64> = (0..64 * 64).map(|k| ((k % 64) as f64 / 63.0).sin()).collect();
/// let map = HeatMap {
///     title: "u(x, y)".into(),
///     panels: vec![HeatPanel { label: "t = 0".into(), nx: 64, ny: 64, values }],
/// };
/// map.write_png(std::path::Path::new("docs/results/snapshot.png"), 640, 360)?;
/// # Ok::<(), ferrocuda::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeatMap {
    /// Title on top.
    pub title: String,
    /// The fields, left to right.
    pub panels: Vec<HeatPanel>,
}

/// One field of a [`HeatMap`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeatPanel {
    /// Label under the panel.
    pub label: String,
    /// Points in x.
    pub nx: usize,
    /// Points in y.
    pub ny: usize,
    /// `nx ny` values, row-major with x fastest; row 0 is drawn at the bottom.
    pub values: Vec<f64>,
}

/// Any chart, as stored in a [`ChartFile`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Chart {
    /// A [`BarChart`].
    Bar(BarChart),
    /// A [`LineChart`].
    Line(LineChart),
    /// A [`LineChart`] with point clouds drawn as markers only (see
    /// [`LineChart::write_png_with_points`]).
    LineWithPoints {
        /// The lines.
        chart: LineChart,
        /// The point clouds.
        points: Vec<LineSeries>,
    },
    /// A [`HeatMap`].
    Heat(HeatMap),
}

impl From<BarChart> for Chart {
    fn from(c: BarChart) -> Chart {
        Chart::Bar(c)
    }
}

impl From<LineChart> for Chart {
    fn from(c: LineChart) -> Chart {
        Chart::Line(c)
    }
}

impl From<HeatMap> for Chart {
    fn from(c: HeatMap) -> Chart {
        Chart::Heat(c)
    }
}

impl Chart {
    /// Renders the chart as an RGB PNG of `width` x `height` pixels.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>> {
        match self {
            Chart::Bar(c) => c.render_png(width, height),
            Chart::Line(c) => c.render_png(width, height),
            Chart::LineWithPoints { chart, points } => {
                let mut rgb = canvas(width, height)?;
                chart.draw(&mut rgb, width, height, points)?;
                encode_png(&rgb, width, height)
            }
            Chart::Heat(c) => c.render_png(width, height),
        }
    }
}

/// The value of [`ChartFile::format`].
pub const CHART_FORMAT: &str = "ferrocuda-chart/1";

/// A chart's data as written beside its image (`<name>.json` next to `<name>.png`):
/// enough to draw the same image again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartFile {
    /// Always [`CHART_FORMAT`]; other JSON files of a results folder lack it.
    pub format: String,
    /// Where the numbers come from, e.g. "ferrocuda bench spmv" or "the table in
    /// spmv-case6-f64.md".
    pub source: String,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// The chart.
    pub chart: Chart,
}

impl ChartFile {
    /// A chart file for `chart` drawn at `width` x `height`.
    pub fn new(chart: impl Into<Chart>, width: u32, height: u32, source: &str) -> ChartFile {
        ChartFile {
            format: CHART_FORMAT.into(),
            source: source.into(),
            width,
            height,
            chart: chart.into(),
        }
    }

    /// Parses a chart file; `None` when `text` is JSON of another kind (no `format`
    /// field of [`CHART_FORMAT`]), an error when it claims the format but is invalid.
    pub fn parse(text: &str, name: &str) -> Result<Option<ChartFile>> {
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) => return Ok(None),
        };
        if value.get("format").and_then(|f| f.as_str()) != Some(CHART_FORMAT) {
            return Ok(None);
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| invalid(format!("{name}: not a valid chart file: {e}")))
    }

    /// The JSON text (pretty-printed, newline at the end).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Writes the image to `png` and this data to the same path with `.json`; returns
    /// both paths.
    pub fn write(&self, png: &Path) -> Result<Vec<PathBuf>> {
        let bytes = self.chart.render_png(self.width, self.height)?;
        let json = png.with_extension("json");
        crate::output::write_file(png, &bytes)?;
        crate::output::write_file(&json, self.to_json().as_bytes())?;
        Ok(vec![png.to_path_buf(), json])
    }
}

/// Writes `chart` as `png` and its data beside it (see [`ChartFile::write`]), drawn at
/// `width` x `height`; `source` names the benchmark.
pub fn write_with_data(
    chart: impl Into<Chart>,
    png: &Path,
    width: u32,
    height: u32,
    source: &str,
) -> Result<Vec<PathBuf>> {
    ChartFile::new(chart, width, height, source).write(png)
}

/// Largest accepted width or height, in pixels.
const MAX_SIDE: u32 = 8192;
/// Smallest accepted width or height, in pixels.
const MIN_SIDE: u32 = 200;
/// A line-chart series with fewer points than this gets markers.
const MARKER_MAX_POINTS: usize = 40;
/// The bundled font's family name.
const FONT: &str = "sans-serif";

const TEXT: RGBColor = RGBColor(32, 32, 32);
const GRID: RGBColor = RGBColor(225, 225, 225);
/// Colours of the reference lines, in order (dark red, black, dark grey).
const REFERENCE: [RGBColor; 3] = [
    RGBColor(200, 30, 30),
    RGBColor(20, 20, 20),
    RGBColor(110, 110, 110),
];

/// Okabe & Ito's colour-blind-friendly palette, ordered so the first colours are the
/// most distinct on white (yellow, the faintest, comes late).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(240, 228, 66),  // yellow
    RGBColor(110, 110, 110), // grey
];

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        op: "plot",
        reason: reason.into(),
    }
}

fn draw_err(e: impl std::fmt::Display) -> Error {
    invalid(format!("drawing failed: {e}"))
}

/// Registers the bundled font once.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType file, checked by the tests.
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            include_bytes!("../fonts/DejaVuSans.ttf"),
        );
    });
}

/// A white RGB canvas of `width` x `height` after checking the size.
fn canvas(width: u32, height: u32) -> Result<Vec<u8>> {
    for (side, what) in [(width, "width"), (height, "height")] {
        if !(MIN_SIDE..=MAX_SIDE).contains(&side) {
            return Err(invalid(format!(
                "image {what} {side} is outside {MIN_SIDE}..={MAX_SIDE} pixels"
            )));
        }
    }
    register_font();
    Ok(vec![255; width as usize * height as usize * 3])
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let err = |e: png::EncodingError| invalid(format!("PNG encoding failed: {e}"));
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::High);
        let mut writer = encoder.write_header().map_err(err)?;
        writer.write_image_data(rgb).map_err(err)?;
        writer.finish().map_err(err)?;
    }
    Ok(out)
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

fn font(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().color(&TEXT)
}

/// Width and height of `text` in `style`, in pixels.
fn text_size(area: &Area, text: &str, style: &TextStyle) -> (u32, u32) {
    area.estimate_text_size(text, style).unwrap_or((0, 0))
}

/// Splits `text` at spaces into lines no wider than `max_w`, at most `max_lines`;
/// `None` when it does not fit.
fn wrap(
    area: &Area,
    text: &str,
    style: &TextStyle,
    max_w: u32,
    max_lines: usize,
) -> Option<Vec<String>> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(last) if text_size(area, &format!("{last} {word}"), style).0 <= max_w => {
                last.push(' ');
                last.push_str(word);
            }
            _ => {
                if text_size(area, word, style).0 > max_w {
                    return None;
                }
                lines.push(word.to_string());
            }
        }
    }
    (lines.len() <= max_lines).then_some(lines)
}

/// Draws the title (shrunk to fit, then wrapped) and returns the height used.
fn draw_title(area: &Area, title: &str, width: u32) -> Result<i32> {
    let max_w = width.saturating_sub(24);
    let mut size = (width / 48).clamp(14, 24);
    loop {
        let style = font(size);
        let lines = wrap(area, title, &style, max_w, 1).or_else(|| {
            (size <= 14)
                .then(|| wrap(area, title, &style, max_w, 3))
                .flatten()
        });
        if let Some(lines) = lines {
            let mut y = 8;
            for line in &lines {
                let style = style.pos(Pos::new(HPos::Center, VPos::Top));
                area.draw_text(line, &style, (width as i32 / 2, y))
                    .map_err(draw_err)?;
                y += size as i32 + 4;
            }
            return Ok(y + 4);
        }
        if size <= 10 {
            // A single word wider than the image: draw it as it is.
            area.draw_text(title, &style, (8, 8)).map_err(draw_err)?;
            return Ok(size as i32 + 16);
        }
        size -= 1;
    }
}

/// What a legend key shows.
#[derive(Clone, Copy)]
enum Key {
    /// A filled box (bars).
    Box(RGBColor),
    /// A line, with a marker of this kind where given.
    Line(RGBColor, Option<usize>),
    /// A marker alone (point clouds).
    Marker(RGBColor, usize),
    /// A dashed line.
    Dashed(RGBColor),
}

/// Draws the legend in rows below the title, starting at `top`; returns the height
/// used.
fn draw_legend(area: &Area, entries: &[(Key, String)], top: i32, width: u32) -> Result<i32> {
    if entries.is_empty() {
        return Ok(0);
    }
    let style = font(14);
    let key_w = 30;
    let gap = 22;
    let row_h = 22;
    // Lay out rows.
    let mut rows: Vec<Vec<(i32, usize)>> = vec![Vec::new()];
    let mut x = 0;
    let max_w = width as i32 - 32;
    for (i, (_, name)) in entries.iter().enumerate() {
        let w = key_w + 6 + text_size(area, name, &style).0 as i32;
        if x > 0 && x + w > max_w {
            rows.push(Vec::new());
            x = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((x, i));
        }
        x += w + gap;
    }
    for (r, row) in rows.iter().enumerate() {
        let row_w = row
            .last()
            .map(|&(x, i)| x + key_w + 6 + text_size(area, &entries[i].1, &style).0 as i32)
            .unwrap_or(0);
        let x0 = (width as i32 - row_w) / 2;
        let cy = top + r as i32 * row_h + row_h / 2;
        for &(x, i) in row {
            let kx = x0 + x;
            draw_key(area, entries[i].0, kx, cy, key_w)?;
            area.draw_text(
                &entries[i].1,
                &style.pos(Pos::new(HPos::Left, VPos::Center)),
                (kx + key_w + 6, cy),
            )
            .map_err(draw_err)?;
        }
    }
    Ok(rows.len() as i32 * row_h + 6)
}

fn draw_key(area: &Area, key: Key, x: i32, cy: i32, w: i32) -> Result<()> {
    match key {
        Key::Box(c) => area
            .draw(&Rectangle::new(
                [(x + 4, cy - 7), (x + w - 4, cy + 7)],
                c.filled(),
            ))
            .map_err(draw_err),
        Key::Line(c, marker) => {
            area.draw(&PathElement::new(
                vec![(x, cy), (x + w, cy)],
                c.stroke_width(2),
            ))
            .map_err(draw_err)?;
            match marker {
                Some(m) => draw_marker(area, (x + w / 2, cy), m, c),
                None => Ok(()),
            }
        }
        Key::Marker(c, m) => draw_marker(area, (x + w / 2, cy), m, c),
        Key::Dashed(c) => {
            let mut s = x;
            while s < x + w {
                area.draw(&PathElement::new(
                    vec![(s, cy), ((s + 6).min(x + w), cy)],
                    c.stroke_width(2),
                ))
                .map_err(draw_err)?;
                s += 10;
            }
            Ok(())
        }
    }
}

/// Draws marker `kind` (disc, triangle, square, cross, by `kind % 4`) at a pixel.
fn draw_marker(area: &Area, at: (i32, i32), kind: usize, c: RGBColor) -> Result<()> {
    let (x, y) = at;
    let r = 4;
    match kind % 4 {
        0 => area.draw(&Circle::new(at, r, c.filled())),
        1 => area.draw(&Polygon::new(
            vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)],
            c.filled(),
        )),
        2 => area.draw(&Rectangle::new(
            [(x - r, y - r), (x + r, y + r)],
            c.filled(),
        )),
        _ => {
            area.draw(&PathElement::new(
                vec![(x - r, y - r), (x + r, y + r)],
                c.stroke_width(2),
            ))
            .map_err(draw_err)?;
            area.draw(&PathElement::new(
                vec![(x - r, y + r), (x + r, y - r)],
                c.stroke_width(2),
            ))
        }
    }
    .map_err(draw_err)
}

/// A short label for an axis value: "0", "0.5", "12.5", "3000", "25k", "1e-8".
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if !(1e-3..1e6).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        return if (m.abs() - 1.0).abs() < 1e-9 {
            format!("{}1e{e}", if v < 0.0 { "-" } else { "" })
        } else {
            let mut s = format!("{m:.1}");
            if s.ends_with(".0") {
                s.truncate(s.len() - 2);
            }
            format!("{s}e{e}")
        };
    }
    let (scaled, suffix) = if a >= 1e4 { (v / 1e3, "k") } else { (v, "") };
    let sa = scaled.abs();
    let decimals = if sa >= 100.0 {
        0
    } else if sa >= 10.0 {
        1
    } else if sa >= 1.0 {
        2
    } else {
        (2 - sa.log10().floor() as i32).clamp(2, 5) as usize
    };
    let mut s = format!("{scaled:.decimals$}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s.push_str(suffix);
    s
}

/// A "nice" upper bound for an axis starting at 0 (1, 2, 2.5 or 5 times a power of ten).
fn nice_ceil(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v * 1.0000001)
        .unwrap_or(10.0 * p)
}

fn check_finite(v: f64, what: &dyn Fn() -> String) -> Result<()> {
    if v.is_nan() {
        Err(invalid(format!("{} is NaN", what())))
    } else if v.is_infinite() {
        Err(invalid(format!("{} is infinite", what())))
    } else {
        Ok(())
    }
}

impl BarChart {
    /// Renders the chart as an RGB PNG image of `width` x `height` pixels (each side
    /// from 200 to 8192).
    ///
    /// Errors ([`Error::InvalidArgument`] with op `"plot"`): no groups or no series, a
    /// group whose value count differs from the series count, a NaN or infinite value
    /// (bar or reference line), a side out of range, or a PNG encoding failure.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>> {
        let mut rgb = canvas(width, height)?;
        self.draw(&mut rgb, width, height)?;
        encode_png(&rgb, width, height)
    }

    /// Renders the chart (see [`BarChart::render_png`]) and writes it to `path`,
    /// creating missing parent directories ([`crate::output::write_file`]).
    pub fn write_png(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        crate::output::write_file(path, &self.render_png(width, height)?)
    }

    fn validate(&self) -> Result<()> {
        if self.groups.is_empty() {
            return Err(invalid("the bar chart has no groups"));
        }
        if self.series.is_empty() {
            return Err(invalid("the bar chart has no series"));
        }
        for g in &self.groups {
            if g.values.len() != self.series.len() {
                return Err(invalid(format!(
                    "group {:?} has {} values for {} series",
                    g.label,
                    g.values.len(),
                    self.series.len()
                )));
            }
            for (s, v) in g.values.iter().enumerate() {
                if let Some(v) = v {
                    check_finite(*v, &|| {
                        format!("value of {:?} in {:?}", self.series[s], g.label)
                    })?;
                }
            }
        }
        for (v, label) in &self.reference_lines {
            check_finite(*v, &|| format!("reference line {label:?}"))?;
        }
        if self.log_x {
            let values = self.groups.iter().flat_map(|g| {
                g.values
                    .iter()
                    .flatten()
                    .map(move |v| (*v, format!("a value in {:?}", g.label)))
            });
            let lines = self
                .reference_lines
                .iter()
                .map(|(v, l)| (*v, format!("reference line {l:?}")));
            if let Some((v, what)) = values.chain(lines).find(|(v, _)| *v <= 0.0) {
                return Err(invalid(format!(
                    "{what} is {v}: a log scale needs positive values"
                )));
            }
        }
        Ok(())
    }

    /// The value axis: `(x_max, to_axis)`, where `to_axis` maps a value to the axis
    /// coordinate. Linear from 0, or with `log_x` decades from the one below the smallest
    /// value (drawn as `log10(v / low)`, labelled with the values).
    fn value_axis(&self) -> (f64, f64, Box<dyn Fn(f64) -> f64>) {
        let values = || {
            self.groups
                .iter()
                .flat_map(|g| g.values.iter().flatten().copied())
                .chain(self.reference_lines.iter().map(|r| r.0))
        };
        let max_v = values().fold(0.0f64, f64::max);
        if !self.log_x {
            return (nice_ceil(max_v * 1.12), 0.0, Box::new(|v: f64| v.max(0.0)));
        }
        let min_v = values().fold(f64::INFINITY, f64::min);
        let (lo, hi) = if min_v.is_finite() {
            (min_v.log10().floor(), (max_v * 1.5).log10().ceil())
        } else {
            (0.0, 1.0)
        };
        let hi = hi.max(lo + 1.0);
        (hi - lo, lo, Box::new(move |v: f64| v.log10() - lo))
    }

    fn draw(&self, rgb: &mut [u8], width: u32, height: u32) -> Result<()> {
        self.validate()?;
        let root = BitMapBackend::with_buffer(rgb, (width, height)).into_drawing_area();
        let mut top = draw_title(&root, &self.title, width)?;
        let mut legend: Vec<(Key, String)> = Vec::new();
        let used: Vec<bool> = (0..self.series.len())
            .map(|s| self.groups.iter().any(|g| g.values[s].is_some()))
            .collect();
        if self.series.len() > 1 || !self.series[0].is_empty() {
            for (s, name) in self.series.iter().enumerate().filter(|p| used[p.0]) {
                legend.push((Key::Box(PALETTE[s % PALETTE.len()]), name.clone()));
            }
        }
        for (k, (v, label)) in self.reference_lines.iter().enumerate() {
            legend.push((
                Key::Dashed(REFERENCE[k % REFERENCE.len()]),
                format!("{label}: {}", fmt_value(*v)),
            ));
        }
        top += draw_legend(&root, &legend, top, width)?;

        // Group labels on the left: as wide as the longest needs, at most 40 % of the
        // image, wrapped onto up to three lines (smaller type if still too long).
        let n = self.groups.len();
        let bottom_axis = 56;
        let band = (height as i32 - top - bottom_axis).max(20) / n as i32;
        let max_label_w = width * 2 / 5;
        let mut size = 14u32;
        let mut labels: Vec<Vec<String>>;
        loop {
            let style = font(size);
            let lines_fit = ((band - 2) / (size as i32 + 2)).clamp(1, 3) as usize;
            labels = self
                .groups
                .iter()
                .map(|g| {
                    wrap(&root, &g.label, &style, max_label_w, lines_fit)
                        .unwrap_or_else(|| vec![g.label.clone()])
                })
                .collect();
            let fits =
                self.groups.iter().zip(&labels).all(|(g, l)| {
                    l.len() > 1 || text_size(&root, &g.label, &style).0 <= max_label_w
                });
            if fits || size <= 9 {
                break;
            }
            size -= 1;
        }
        let label_style = font(size);
        let label_w = labels
            .iter()
            .flatten()
            .map(|l| text_size(&root, l, &label_style).0)
            .max()
            .unwrap_or(0) as i32;

        let (x_max, low_decade, to_axis) = self.value_axis();
        let log_x = self.log_x;
        let x_label = move |x: &f64| {
            if log_x {
                fmt_value(10f64.powf(x.round() + low_decade))
            } else {
                fmt_value(*x)
            }
        };
        let plot = root.margin(top as u32, 8, 0, 24);
        let mut chart = ChartBuilder::on(&plot)
            .x_label_area_size(bottom_axis as u32)
            .y_label_area_size((label_w + 14) as u32)
            .build_cartesian_2d(0.0..x_max, n as f64..0.0)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .y_labels(0)
            // Log axis: one label per decade.
            .x_labels(if log_x { x_max as usize + 1 } else { 8 })
            .x_label_formatter(&x_label)
            .x_desc(self.value_label.as_str())
            .label_style(font(14))
            .axis_desc_style(font(15))
            .light_line_style(WHITE)
            .bold_line_style(GRID)
            .draw()
            .map_err(draw_err)?;
        let value_style = font(12).pos(Pos::new(HPos::Left, VPos::Center));
        for (i, g) in self.groups.iter().enumerate() {
            let present: Vec<(usize, f64)> = g
                .values
                .iter()
                .enumerate()
                .filter_map(|(s, v)| v.map(|v| (s, v.max(0.0))))
                .collect();
            let present: Vec<(usize, f64, f64)> = present
                .into_iter()
                .map(|(s, v)| (s, v, to_axis(v)))
                .collect();
            let k = present.len().max(1) as f64;
            let (pad, inner) = (0.14, 0.72);
            for (j, &(s, v, x)) in present.iter().enumerate() {
                let y0 = i as f64 + pad + inner * j as f64 / k;
                let y1 = i as f64 + pad + inner * (j + 1) as f64 / k;
                let color = PALETTE[s % PALETTE.len()];
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(0.0, y0), (x, y1)],
                        color.filled(),
                    )))
                    .map_err(draw_err)?;
                let (px, py) = chart.backend_coord(&(x, (y0 + y1) / 2.0));
                root.draw_text(&fmt_value(v), &value_style, (px + 4, py))
                    .map_err(draw_err)?;
            }
            // The label, right-aligned left of the axis, centred on the row.
            let (ax, cy) = chart.backend_coord(&(0.0, i as f64 + 0.5));
            let line_h = size as i32 + 2;
            let lines = &labels[i];
            let y0 = cy - line_h * lines.len() as i32 / 2 + line_h / 2;
            for (l, line) in lines.iter().enumerate() {
                root.draw_text(
                    line,
                    &label_style.pos(Pos::new(HPos::Right, VPos::Center)),
                    (ax - 8, y0 + l as i32 * line_h),
                )
                .map_err(draw_err)?;
            }
        }
        // The value axis line.
        let (ax, ay0) = chart.backend_coord(&(0.0, 0.0));
        let (_, ay1) = chart.backend_coord(&(0.0, n as f64));
        root.draw(&PathElement::new(
            vec![(ax, ay0), (ax, ay1)],
            TEXT.stroke_width(1),
        ))
        .map_err(draw_err)?;
        for (k, (v, _)) in self.reference_lines.iter().enumerate() {
            let c = REFERENCE[k % REFERENCE.len()];
            let x = to_axis(*v);
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x, 0.0), (x, n as f64)],
                    8,
                    6,
                    c.stroke_width(2),
                ))
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
        Ok(())
    }
}

impl LineChart {
    /// Renders the chart as an RGB PNG image of `width` x `height` pixels (each side
    /// from 200 to 8192).
    ///
    /// Errors ([`Error::InvalidArgument`] with op `"plot"`): no series, no points in
    /// any series, a NaN or infinite coordinate or reference value, a zero or negative
    /// y or reference value with `log_y`, a side out of range, or a PNG encoding
    /// failure.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>> {
        let mut rgb = canvas(width, height)?;
        self.draw(&mut rgb, width, height, &[])?;
        encode_png(&rgb, width, height)
    }

    /// Renders the chart (see [`LineChart::render_png`]) and writes it to `path`,
    /// creating missing parent directories ([`crate::output::write_file`]).
    pub fn write_png(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        crate::output::write_file(path, &self.render_png(width, height)?)
    }

    /// As [`LineChart::render_png`], with `points` added after the series as markers
    /// only, never joined by lines (a point cloud, such as a swarm at one instant); they
    /// take their places in the legend and count for the axis ranges like the series.
    pub fn render_png_with_points(
        &self,
        width: u32,
        height: u32,
        points: &[LineSeries],
    ) -> Result<Vec<u8>> {
        Chart::LineWithPoints {
            chart: self.clone(),
            points: points.to_vec(),
        }
        .render_png(width, height)
    }

    /// As [`LineChart::write_png`], with point clouds (see
    /// [`LineChart::render_png_with_points`]).
    pub fn write_png_with_points(
        &self,
        path: &Path,
        width: u32,
        height: u32,
        points: &[LineSeries],
    ) -> Result<()> {
        crate::output::write_file(path, &self.render_png_with_points(width, height, points)?)
    }

    /// Checks the data (the point clouds too) and returns the x and y ranges.
    fn ranges(&self, clouds: &[LineSeries]) -> Result<((f64, f64), (f64, f64))> {
        if self.series.is_empty() && clouds.is_empty() {
            return Err(invalid("the chart has no series"));
        }
        let (mut x0, mut x1, mut y0, mut y1) = (
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        );
        for s in self.series.iter().chain(clouds) {
            for (k, &(x, y)) in s.points.iter().enumerate() {
                check_finite(x, &|| format!("x of point {k} of {:?}", s.name))?;
                check_finite(y, &|| format!("y of point {k} of {:?}", s.name))?;
                if self.log_y && y <= 0.0 {
                    return Err(invalid(format!(
                        "y of point {k} of {:?} is {y}: a log scale needs positive values",
                        s.name
                    )));
                }
                x0 = x0.min(x);
                x1 = x1.max(x);
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
        }
        if !x0.is_finite() {
            return Err(invalid("no series of the chart has a point"));
        }
        if let Some((v, label)) = &self.reference_line {
            check_finite(*v, &|| format!("reference line {label:?}"))?;
            if self.log_y && *v <= 0.0 {
                return Err(invalid(format!(
                    "reference line {label:?} is {v}: a log scale needs positive values"
                )));
            }
            y0 = y0.min(*v);
            y1 = y1.max(*v);
        }
        // x: the data's range, from 0 when the data are positive and near it.
        if x0 > 0.0 && x0 <= 0.25 * x1 {
            x0 = 0.0;
        }
        if x1 <= x0 {
            x0 -= 0.5;
            x1 += 0.5;
        }
        let pad = 0.03 * (x1 - x0);
        let x = (if x0 == 0.0 { 0.0 } else { x0 - pad }, x1 + pad);
        let y = if self.log_y {
            let lo = 10f64.powf(y0.log10().floor());
            let mut hi = 10f64.powf(y1.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
            (lo, hi)
        } else {
            let (mut lo, mut hi) = (y0, y1);
            if lo >= 0.0 && lo <= 0.5 * hi {
                lo = 0.0;
            }
            if hi <= lo {
                lo -= 0.5;
                hi += 0.5;
            }
            let pad = 0.06 * (hi - lo);
            (if lo == 0.0 { 0.0 } else { lo - pad }, hi + pad)
        };
        Ok((x, y))
    }

    fn draw(&self, rgb: &mut [u8], width: u32, height: u32, clouds: &[LineSeries]) -> Result<()> {
        let ((x0, x1), (y0, y1)) = self.ranges(clouds)?;
        let root = BitMapBackend::with_buffer(rgb, (width, height)).into_drawing_area();
        let mut top = draw_title(&root, &self.title, width)?;
        let mut legend = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            let marker = (s.points.len() < MARKER_MAX_POINTS).then_some(i);
            legend.push((
                Key::Line(PALETTE[i % PALETTE.len()], marker),
                s.name.clone(),
            ));
        }
        let first_cloud = self.series.len();
        for (j, s) in clouds.iter().enumerate() {
            let i = first_cloud + j;
            legend.push((Key::Marker(PALETTE[i % PALETTE.len()], i), s.name.clone()));
        }
        if let Some((v, label)) = &self.reference_line {
            legend.push((
                Key::Dashed(REFERENCE[0]),
                format!("{label}: {}", fmt_value(*v)),
            ));
        }
        top += draw_legend(&root, &legend, top, width)?;
        // Room on the left for the rotated y-axis title.
        let plot = root.margin(top as u32, 8, 16, 28);
        if self.log_y {
            let mut chart = ChartBuilder::on(&plot)
                .x_label_area_size(56)
                .y_label_area_size(84)
                .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                .map_err(draw_err)?;
            chart
                .configure_mesh()
                .x_labels(8)
                .y_labels(12)
                .x_label_formatter(&|v| fmt_value(*v))
                .y_label_formatter(&|v| fmt_value(*v))
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .label_style(font(14))
                .axis_desc_style(font(15))
                .light_line_style(RGBColor(242, 242, 242))
                .bold_line_style(GRID)
                .draw()
                .map_err(draw_err)?;
            self.draw_data(&root, &mut chart, clouds, (x0, x1))
        } else {
            let mut chart = ChartBuilder::on(&plot)
                .x_label_area_size(56)
                .y_label_area_size(84)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(draw_err)?;
            chart
                .configure_mesh()
                .x_labels(8)
                .y_labels(8)
                .x_label_formatter(&|v| fmt_value(*v))
                .y_label_formatter(&|v| fmt_value(*v))
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .label_style(font(14))
                .axis_desc_style(font(15))
                .light_line_style(RGBColor(245, 245, 245))
                .bold_line_style(GRID)
                .draw()
                .map_err(draw_err)?;
            self.draw_data(&root, &mut chart, clouds, (x0, x1))
        }?;
        root.present().map_err(draw_err)?;
        Ok(())
    }

    fn draw_data<'a, 'b, Y>(
        &self,
        root: &Area<'a>,
        chart: &mut ChartContext<'b, BitMapBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
        clouds: &[LineSeries],
        (x0, x1): (f64, f64),
    ) -> Result<()>
    where
        Y: Ranged<ValueType = f64>,
    {
        if let Some((v, _)) = &self.reference_line {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x0, *v), (x1, *v)],
                    8,
                    6,
                    REFERENCE[0].stroke_width(2),
                ))
                .map_err(draw_err)?;
        }
        for (i, s) in self.series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(plotters::series::LineSeries::new(
                    s.points.iter().copied(),
                    c.stroke_width(2),
                ))
                .map_err(draw_err)?;
            if s.points.len() < MARKER_MAX_POINTS {
                self.draw_markers(root, chart, &s.points, i, c)?;
            }
        }
        for (j, s) in clouds.iter().enumerate() {
            let i = self.series.len() + j;
            self.draw_markers(root, chart, &s.points, i, PALETTE[i % PALETTE.len()])?;
        }
        Ok(())
    }

    fn draw_markers<'a, 'b, Y>(
        &self,
        root: &Area<'a>,
        chart: &ChartContext<'b, BitMapBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
        points: &[(f64, f64)],
        kind: usize,
        c: RGBColor,
    ) -> Result<()>
    where
        Y: Ranged<ValueType = f64>,
    {
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        for p in points {
            let (px, py) = chart.backend_coord(p);
            if (xr.start..=xr.end).contains(&px) && (yr.start..=yr.end).contains(&py) {
                draw_marker(root, (px, py), kind, c)?;
            }
        }
        Ok(())
    }
}

/// Viridis at 0, 1/4, 1/2, 3/4, 1.
const RAMP: [[u8; 3]; 5] = [
    [68, 1, 84],
    [59, 82, 139],
    [33, 145, 140],
    [94, 201, 98],
    [253, 231, 37],
];

/// The ramp's colour at `x` in [0, 1].
fn ramp(x: f64) -> RGBColor {
    let x = if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let f = x * (RAMP.len() - 1) as f64;
    let i = (f.floor() as usize).min(RAMP.len() - 2);
    let w = f - i as f64;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    let c = [0, 1, 2].map(|k| (a[k] as f64 + w * (b[k] as f64 - a[k] as f64)).round() as u8);
    RGBColor(c[0], c[1], c[2])
}

impl HeatMap {
    /// Renders the maps as a PNG of `width` x `height` pixels. Errors: no panel, a panel
    /// whose values are not `nx ny` or hold no finite value, a side outside 200..=8192.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>> {
        let mut rgb = canvas(width, height)?;
        self.draw(&mut rgb, width, height)?;
        encode_png(&rgb, width, height)
    }

    /// Renders and writes the PNG to `path`, creating missing parent directories.
    pub fn write_png(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        crate::output::write_file(path, &self.render_png(width, height)?)
    }

    fn draw(&self, rgb: &mut [u8], width: u32, height: u32) -> Result<()> {
        if self.panels.is_empty() {
            return Err(invalid("a heat map needs at least one panel"));
        }
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for p in &self.panels {
            if p.nx == 0 || p.ny == 0 || p.values.len() != p.nx * p.ny {
                return Err(invalid(format!(
                    "panel {:?}: {} values for {} x {} points",
                    p.label,
                    p.values.len(),
                    p.nx,
                    p.ny
                )));
            }
            for &v in p.values.iter().filter(|v| v.is_finite()) {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if !lo.is_finite() {
            return Err(invalid("the heat map has no finite value"));
        }
        let span = if hi > lo { hi - lo } else { 1.0 };
        let root = BitMapBackend::with_buffer(rgb, (width, height)).into_drawing_area();
        let top = draw_title(&root, &self.title, width)?;
        let (w, h) = (width as i32, height as i32);
        let bar_w = 100;
        let k = self.panels.len() as i32;
        let gap = 16;
        let side = ((w - bar_w - 20 - gap * (k - 1)) / k)
            .min(h - top - 34)
            .max(8);
        let label_style = font(14).pos(Pos::new(HPos::Center, VPos::Top));
        for (pi, p) in self.panels.iter().enumerate() {
            let x0 = 10 + pi as i32 * (side + gap);
            for py in 0..side {
                // Row 0 at the bottom.
                let j = ((side - 1 - py) as usize * p.ny) / side as usize;
                for px in 0..side {
                    let i = (px as usize * p.nx) / side as usize;
                    let v = p.values[j * p.nx + i];
                    root.draw_pixel((x0 + px, top + py), &ramp((v - lo) / span))
                        .map_err(draw_err)?;
                }
            }
            root.draw_text(&p.label, &label_style, (x0 + side / 2, top + side + 6))
                .map_err(draw_err)?;
        }
        // Colour bar with its limits.
        let bx = w - bar_w;
        for py in 0..side {
            let x = 1.0 - py as f64 / (side - 1).max(1) as f64;
            root.draw(&Rectangle::new(
                [(bx, top + py), (bx + 16, top + py + 1)],
                ramp(x).filled(),
            ))
            .map_err(draw_err)?;
        }
        let style = font(13).pos(Pos::new(HPos::Left, VPos::Center));
        root.draw_text(&format!("{hi:.3}"), &style, (bx + 22, top + 6))
            .map_err(draw_err)?;
        root.draw_text(&format!("{lo:.3}"), &style, (bx + 22, top + side - 6))
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        let mut reader = decoder.read_info().expect("PNG header");
        let mut buf = vec![0; reader.output_buffer_size().expect("buffer size")];
        let info = reader.next_frame(&mut buf).expect("PNG frame");
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    fn count(pixels: &[u8], c: RGBColor) -> usize {
        pixels
            .chunks_exact(3)
            .filter(|p| *p == [c.0, c.1, c.2])
            .count()
    }

    /// Pixels darker than light grey (text, axes, dark bars).
    fn dark(pixels: &[u8]) -> usize {
        pixels
            .chunks_exact(3)
            .filter(|p| p.iter().map(|&v| v as u32).sum::<u32>() < 300)
            .count()
    }

    fn bars() -> BarChart {
        BarChart {
            title: "SpMV case6 f64 on a long device name".into(),
            value_label: "GB/s moved".into(),
            series: vec!["CPU (rayon)".into(), "GPU, ferrocuda".into()],
            groups: vec![
                BarGroup {
                    label: "CSR, rayon".into(),
                    values: vec![Some(75.0), None],
                },
                BarGroup {
                    label: "BCSR 5x5, ferrocuda, thread per row, column-major blocks".into(),
                    values: vec![None, Some(2347.2)],
                },
            ],
            reference_lines: vec![(3006.7, "device copy".into()), (2452.3, "cuSPARSE".into())],
            log_x: false,
        }
    }

    fn lines(log_y: bool) -> LineChart {
        LineChart {
            title: "convergence".into(),
            x_label: "iteration".into(),
            y_label: "relative residual".into(),
            log_y,
            series: vec![
                LineSeries {
                    name: "fast".into(),
                    points: (0..20).map(|k| (k as f64, 0.5f64.powi(k))).collect(),
                },
                LineSeries {
                    name: "slow".into(),
                    points: (0..100).map(|k| (k as f64, 0.9f64.powi(k))).collect(),
                },
            ],
            reference_line: Some((1e-3, "tolerance".into())),
        }
    }

    #[test]
    fn the_bundled_font_is_a_font() {
        let bytes: &'static [u8] = include_bytes!("../fonts/DejaVuSans.ttf");
        assert!(plotters::style::register_font("check", FontStyle::Normal, bytes).is_ok());
    }

    #[test]
    fn bar_chart_renders_bars_text_and_reference_lines() {
        let (w, h, px) = decode(&bars().render_png(900, 420).expect("png"));
        assert_eq!((w, h), (900, 420));
        assert!(count(&px, PALETTE[0]) > 200, "CPU bar");
        assert!(count(&px, PALETTE[1]) > 2000, "GPU bar");
        assert!(count(&px, REFERENCE[0]) > 50, "ceiling line");
        assert!(dark(&px) > 1000, "text");
    }

    /// On a log axis both bars are drawn to scale in decades (75 and 2347 both well
    /// visible), the reference lines too; a value of zero is an error; charts saved
    /// before the option read as linear.
    #[test]
    fn bar_chart_renders_on_a_log_axis() {
        let mut b = bars();
        b.log_x = true;
        let (_, _, px) = decode(&b.render_png(900, 420).expect("png"));
        assert!(count(&px, PALETTE[0]) > 1000, "CPU bar");
        assert!(count(&px, PALETTE[1]) > 2000, "GPU bar");
        assert!(count(&px, REFERENCE[0]) > 50, "ceiling line");
        let (x_max, low, to_axis) = b.value_axis();
        assert_eq!((x_max, low), (3.0, 1.0), "decades 10 to 10^4");
        assert!((to_axis(100.0) - 1.0).abs() < 1e-12);
        b.groups[0].values[0] = Some(0.0);
        let e = b.render_png(900, 420).unwrap_err().to_string();
        assert!(e.contains("log scale") && e.contains("CSR, rayon"), "{e}");
        let old: BarChart = serde_json::from_str(
            r#"{"title": "t", "value_label": "", "groups": [], "series": [], "reference_lines": []}"#,
        )
        .expect("a chart saved before log_x");
        assert!(!old.log_x);
    }

    #[test]
    fn line_charts_render_on_linear_and_log_axes() {
        for log_y in [false, true] {
            let (w, h, px) = decode(&lines(log_y).render_png(800, 450).expect("png"));
            assert_eq!((w, h), (800, 450));
            assert!(count(&px, PALETTE[0]) > 300, "log_y {log_y}");
            assert!(count(&px, PALETTE[1]) > 300, "log_y {log_y}");
            assert!(dark(&px) > 1000, "log_y {log_y}");
        }
        let points = vec![LineSeries {
            name: "cloud".into(),
            points: vec![(1.0, 0.5), (2.0, 0.25)],
        }];
        let png = lines(false)
            .render_png_with_points(640, 360, &points)
            .expect("png");
        assert_eq!(decode(&png).0, 640);
    }

    #[test]
    fn bad_data_and_sizes_are_errors() {
        let mut b = bars();
        b.groups[0].values[0] = Some(f64::NAN);
        assert!(
            b.render_png(800, 400)
                .unwrap_err()
                .to_string()
                .contains("NaN")
        );
        let mut b = bars();
        b.groups[1].values.pop();
        assert!(b.render_png(800, 400).is_err());
        assert!(BarChart::default().render_png(800, 400).is_err());
        let mut l = lines(true);
        l.series[0].points[3].1 = 0.0;
        assert!(
            l.render_png(800, 400)
                .unwrap_err()
                .to_string()
                .contains("log")
        );
        assert!(lines(false).render_png(0, 400).is_err());
        assert!(lines(false).render_png(800, 9000).is_err());
        assert!(LineChart::default().render_png(800, 400).is_err());
    }

    #[test]
    fn heat_map_draws_the_ramp_ends_and_rejects_bad_panels() {
        let (nx, ny) = (40, 30);
        let values: Vec<f64> = (0..nx * ny).map(|k| (k / nx) as f64).collect();
        let map = HeatMap {
            title: "rows".into(),
            panels: vec![HeatPanel {
                label: "t = 0".into(),
                nx,
                ny,
                values,
            }],
        };
        let (w, h, px) = decode(&map.render_png(400, 240).expect("png"));
        assert_eq!((w, h), (400, 240));
        assert!(count(&px, ramp(0.0)) > 100);
        assert!(count(&px, ramp(1.0)) > 100);
        let bad = HeatMap {
            title: "bad".into(),
            panels: vec![HeatPanel {
                label: "x".into(),
                nx: 3,
                ny: 3,
                values: vec![0.0; 8],
            }],
        };
        assert!(bad.render_png(400, 240).is_err());
        assert!(HeatMap::default().render_png(400, 240).is_err());
    }

    #[test]
    fn chart_files_round_trip_and_other_json_is_not_a_chart() {
        let file = ChartFile::new(lines(true), 800, 450, "a test");
        let text = file.to_json();
        let back = ChartFile::parse(&text, "x.json")
            .expect("parse")
            .expect("chart");
        assert_eq!(back, file);
        let bar = ChartFile::new(bars(), 900, 420, "a test");
        assert_eq!(
            ChartFile::parse(&bar.to_json(), "b.json").unwrap().unwrap(),
            bar
        );
        assert!(
            ChartFile::parse("{\"device\": \"x\"}", "m.json")
                .unwrap()
                .is_none()
        );
        assert!(ChartFile::parse("not json", "m.json").unwrap().is_none());
        let broken = text.replace("\"line\"", "\"pie\"");
        assert!(ChartFile::parse(&broken, "x.json").is_err());
    }

    #[test]
    fn write_puts_the_data_beside_the_image() {
        let dir = tempfile::tempdir().expect("temp dir");
        let png = dir.path().join("sub").join("c.png");
        let written = write_with_data(lines(false), &png, 640, 360, "a test").expect("write");
        assert_eq!(written, vec![png.clone(), png.with_extension("json")]);
        let text = std::fs::read_to_string(png.with_extension("json")).expect("json");
        let file = ChartFile::parse(&text, "c.json").unwrap().unwrap();
        assert_eq!(file.chart, Chart::Line(lines(false)));
        let (w, h, _) = decode(&std::fs::read(&png).expect("png"));
        assert_eq!((w, h), (640, 360));
    }

    #[test]
    fn values_format_short() {
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(3000.0), "3000");
        assert_eq!(fmt_value(25000.0), "25k");
        assert_eq!(fmt_value(0.5), "0.5");
        assert_eq!(fmt_value(1e-8), "1e-8");
        assert_eq!(fmt_value(2.5e-7), "2.5e-7");
        assert_eq!(nice_ceil(3367.0), 4000.0);
    }
}
