//! A small, dependency-light PNG chart renderer for the benchmark reports
//! (`docs/results/*.png`): bar charts for throughput, line charts for convergence
//! histories.
//!
//! A [`BarChart`] draws grouped vertical bars: one bar per series in every group, one
//! colour per series (a fixed colour-blind-friendly palette, Okabe & Ito), a legend, a
//! y axis from 0 to a rounded maximum with 4 to 6 labelled ticks and light grid lines,
//! the group labels under the x axis (wrapped, then truncated when too long), the title
//! on top, value labels above the bars where they fit, and an optional dashed
//! horizontal reference line with its label (for instance "copy bandwidth").
//!
//! A [`LineChart`] draws one polyline per series (markers too when a series has few
//! points) against a linear x axis and a linear or logarithmic y axis, for instance
//! the relative residual of GMRES against the iteration, with the same title, legend,
//! grid and reference line; its documentation has an example.
//!
//! Text comes from the public-domain 8x8 bitmap font of the `font8x8` crate, drawn at
//! twice its size where the image leaves room; pixels are encoded with the pure-Rust
//! `png` crate. No system font, no C library and no GPU is involved, so charts render
//! the same everywhere.
//!
//! ```no_run
//! use ferrocuda_bench::plot::{BarChart, BarGroup};
//!
//! let chart = BarChart {
//!     title: "axpy, n = 2^24".into(),
//!     y_label: "GB/s".into(),
//!     series: vec!["CPU".into(), "GPU".into()],
//!     groups: vec![
//!         BarGroup { label: "f32".into(), values: vec![Some(41.0), Some(2870.0)] },
//!         BarGroup { label: "f64".into(), values: vec![Some(44.5), None] },
//!     ],
//!     reference_line: Some((3350.0, "copy bandwidth".into())),
//! };
//! chart.write_png(std::path::Path::new("docs/results/axpy.png"), 1024, 576)?;
//! # Ok::<(), ferrocuda::Error>(())
//! ```

use std::path::Path;

use ferrocuda::{Error, Result};

/// A grouped vertical bar chart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BarChart {
    /// Title, drawn centred on top.
    pub title: String,
    /// Label of the y axis (units), drawn vertically left of the tick labels; may be
    /// empty.
    pub y_label: String,
    /// The groups along the x axis, left to right (about 16 at most stay legible).
    pub groups: Vec<BarGroup>,
    /// Series names, one colour and one bar per group each, in legend order (about 6
    /// at most; colours repeat after 8).
    pub series: Vec<String>,
    /// An optional horizontal dashed line at a y value, with its label (e.g.
    /// `(3350.0, "copy bandwidth")`). Its value counts when the y range is chosen.
    pub reference_line: Option<(f64, String)>,
}

/// One group of bars: the label under the x axis and one value per series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BarGroup {
    /// Label drawn under the group.
    pub label: String,
    /// One value per series of the chart, in the chart's series order; `None` draws no
    /// bar. Negative values are drawn as 0; NaN and infinite values are errors.
    pub values: Vec<Option<f64>>,
}

/// A line chart: one polyline per series, for instance the relative residual of an
/// iterative solver against the iteration number, on a linear or logarithmic y axis.
///
/// The x axis is linear with 3 to 8 "nice" ticks (1, 2, 2.5 or 5 times a power of
/// ten), starting at 0 when the data are all positive and not far from it; the y axis
/// is linear the same way, or with `log_y` has its ticks at powers of ten ("1e-8",
/// "0.1", "1", "10"; every second, third, fifth, ... power when there are many) and
/// short minor ticks at 2..9 times them where a decade is tall enough. Both axes have
/// light grid lines at their ticks. Points are joined in the order given by 2-pixel
/// lines in the series' colour; a series with fewer than 40 points also gets a marker
/// on each point (a disc, square, diamond or triangle, by series), and its legend key
/// shows the marker too.
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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineChart {
    /// Title, drawn centred on top.
    pub title: String,
    /// Label of the x axis, drawn centred under the tick labels; may be empty.
    pub x_label: String,
    /// Label of the y axis, drawn vertically left of the tick labels; may be empty.
    pub y_label: String,
    /// Logarithmic y axis. Every y value (and the reference line) must then be
    /// positive: a zero or negative value is an error rather than a silently dropped
    /// point.
    pub log_y: bool,
    /// The series, one colour each, in legend order (about 6 at most; colours repeat
    /// after 8). An empty series only takes its place in the legend.
    pub series: Vec<LineSeries>,
    /// An optional horizontal dashed line at a y value, with its label (e.g.
    /// `(1e-8, "tolerance")`) at the end of the line and on the side of it where it
    /// hides the fewest data pixels (left and above on a tie). Its value counts when
    /// the y range is chosen.
    pub reference_line: Option<(f64, String)>,
}

/// One series of a [`LineChart`]: its legend name and its points.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineSeries {
    /// Name shown in the legend.
    pub name: String,
    /// (x, y) points, joined in this order; NaN and infinite coordinates are errors.
    pub points: Vec<(f64, f64)>,
}

/// Largest accepted width or height, in pixels.
const MAX_SIDE: u32 = 8192;
/// Most lines a group label wraps into.
const MAX_LABEL_LINES: usize = 3;
/// A line-chart series with fewer points than this gets markers.
const MARKER_MAX_POINTS: usize = 40;
/// Width of the lines of a line chart, in pixels.
const LINE_WIDTH: i32 = 2;

type Rgb = [u8; 3];
/// Bar heights per group and series (`None`: no bar).
type Heights = Vec<Vec<Option<f64>>>;
/// Legend entries of one row: (series index, x offset from the row start, name).
type LegendRow = Vec<(usize, i32, String)>;

const BACKGROUND: Rgb = [255, 255, 255];
const TEXT: Rgb = [32, 32, 32];
const AXIS: Rgb = [64, 64, 64];
const GRID: Rgb = [225, 225, 225];
const REFERENCE: Rgb = [200, 30, 30];

/// Okabe & Ito's colour-blind-friendly palette, ordered so the first colours are the
/// most distinct on white (yellow, the faintest, comes late).
const PALETTE: [Rgb; 8] = [
    [0, 114, 178],   // blue
    [230, 159, 0],   // orange
    [0, 158, 115],   // bluish green
    [213, 94, 0],    // vermillion
    [86, 180, 233],  // sky blue
    [204, 121, 167], // reddish purple
    [240, 228, 66],  // yellow
    [110, 110, 110], // grey
];

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        op: "plot",
        reason: reason.into(),
    }
}

impl BarChart {
    /// Renders the chart as an RGB PNG image of `width` x `height` pixels (each side
    /// from 1 to 8192; about 800 x 450 or more reads well, smaller images fall back to
    /// the font's natural 8x8 size).
    ///
    /// Errors ([`Error::InvalidArgument`] with op `"plot"`): no groups or no series, a
    /// group whose value count differs from the series count, a NaN or infinite value
    /// (bar or reference line), a zero or oversized side, an image too small to hold
    /// the plot area, or a PNG encoding failure.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>> {
        let canvas = self.render(width, height)?;
        encode_png(&canvas)
    }

    /// Renders the chart (see [`BarChart::render_png`]) and writes it to `path`,
    /// creating missing parent directories. I/O failures are reported as
    /// [`Error::InvalidArgument`] naming the path.
    pub fn write_png(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        write_file(path, &self.render_png(width, height)?)
    }

    /// Checks the data and returns the bar heights (clamped to 0) and the reference
    /// value.
    fn validated(&self) -> Result<(Heights, Option<f64>)> {
        if self.groups.is_empty() {
            return Err(invalid("the chart has no groups"));
        }
        if self.series.is_empty() {
            return Err(invalid("the chart has no series"));
        }
        let check = |v: f64, what: &dyn Fn() -> String| -> Result<f64> {
            if v.is_nan() {
                Err(invalid(format!("{} is NaN", what())))
            } else if v.is_infinite() {
                Err(invalid(format!("{} is infinite ({v})", what())))
            } else {
                Ok(v.max(0.0))
            }
        };
        let mut values = Vec::with_capacity(self.groups.len());
        for (g, group) in self.groups.iter().enumerate() {
            if group.values.len() != self.series.len() {
                return Err(invalid(format!(
                    "group {g} ({:?}) has {} values, expected one per series ({})",
                    group.label,
                    group.values.len(),
                    self.series.len()
                )));
            }
            let mut row = Vec::with_capacity(group.values.len());
            for (s, v) in group.values.iter().enumerate() {
                row.push(match *v {
                    Some(v) => Some(check(v, &|| {
                        format!(
                            "value of series {:?} in group {:?}",
                            self.series[s], group.label
                        )
                    })?),
                    None => None,
                });
            }
            values.push(row);
        }
        let reference = match &self.reference_line {
            Some((v, label)) => Some(check(*v, &|| format!("reference line {label:?}"))?),
            None => None,
        };
        Ok((values, reference))
    }

    /// Lays the chart out and draws it into a canvas.
    fn render(&self, width: u32, height: u32) -> Result<Canvas> {
        check_size(width, height)?;
        let (values, reference) = self.validated()?;
        let (w, h) = (width as i32, height as i32);
        let st = Style::for_size(w, h);
        let Style { big, pad, gap } = st;

        // Y scale and tick labels decide the left margin.
        let data_max = values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .chain(reference)
            .fold(0.0f64, f64::max);
        let scale = NiceScale::new(data_max);
        let tick_labels: Vec<String> = (0..=scale.ticks)
            .map(|i| scale.label(i as f64 * scale.step))
            .collect();
        let plot_left = y_axis_margin(&tick_labels, &self.y_label, st);
        let plot_right = w - pad - big;
        let plot_w = plot_right - plot_left;
        if plot_w < 16 {
            return Err(too_small(width, height, "narrow"));
        }
        let n_groups = self.groups.len();
        let n_series = self.series.len();
        let slot_w = plot_w as f64 / n_groups as f64;

        // Group labels: 2x if every label fits in two lines at 2x, else 1x and up to
        // MAX_LABEL_LINES lines (truncated beyond).
        let fit_labels = |s: i32, max_lines: usize| -> (Vec<Vec<String>>, bool) {
            let max_chars = ((slot_w - 4.0) / (8 * s) as f64).floor().max(1.0) as usize;
            let mut all_fit = true;
            let wrapped = self
                .groups
                .iter()
                .map(|g| {
                    let (lines, fit) = wrap_label(&g.label, max_chars, max_lines);
                    all_fit &= fit;
                    lines
                })
                .collect();
            (wrapped, all_fit)
        };
        // Slots too narrow for 5 characters take their labels turned 90 degrees, on
        // one line each.
        let vertical_groups = slot_w < 44.0 && !fit_labels(1, 1).1;
        let (group_lines, group_scale) = match fit_labels(big, 2) {
            _ if vertical_groups => {
                let max_chars = (h / 4 / 8).clamp(1, 20) as usize;
                let lines = self
                    .groups
                    .iter()
                    .map(|g| vec![truncate(g.label.trim(), max_chars)])
                    .collect();
                (lines, 1)
            }
            (lines, true) if big == 2 => (lines, 2),
            _ => (fit_labels(1, MAX_LABEL_LINES).0, 1),
        };
        let line_h = 8 * group_scale + 2 + group_scale;
        let labels_h = if vertical_groups {
            group_lines
                .iter()
                .flatten()
                .map(|l| text_width(l, 1))
                .max()
                .unwrap_or(0)
        } else {
            group_lines.iter().map(Vec::len).max().unwrap_or(0) as i32 * line_h
        };
        let plot_bottom = h - pad - labels_h - gap;

        // Bars: 80% of each slot (60% for a single series), split between the series.
        let inner = slot_w * if n_series == 1 { 0.6 } else { 0.8 };
        let pitch = inner / n_series as f64;
        let bar_gap = if pitch >= 8.0 {
            (pitch * 0.12).max(1.0)
        } else {
            0.0
        };
        let bar_x = |g: usize, s: usize| -> (i32, i32) {
            let x0 = plot_left as f64 + g as f64 * slot_w + (slot_w - inner) / 2.0;
            let a = x0 + s as f64 * pitch + bar_gap / 2.0;
            let b = x0 + (s + 1) as f64 * pitch - bar_gap / 2.0;
            let a = a.round() as i32;
            (a, (b.round() as i32).max(a + 1))
        };
        let value_labels: Vec<Vec<Option<String>>> = values
            .iter()
            .map(|row| row.iter().map(|v| v.map(fmt_value)).collect())
            .collect();
        let fits_at = |s: i32| {
            value_labels
                .iter()
                .flatten()
                .flatten()
                .all(|l| (text_width(l, s) + 4 * s) as f64 <= pitch)
        };
        // Value labels read horizontally above the bars when all of them fit there,
        // else vertically (inside the bar top, or above a short bar) when the bars are
        // wide enough for a glyph, else not at all.
        let value_scale = if big == 2 && fits_at(2) { 2 } else { 1 };
        let value_mode = if fits_at(value_scale) {
            ValueLabels::Horizontal
        } else if pitch - bar_gap >= 10.0 {
            ValueLabels::Vertical
        } else {
            ValueLabels::Off
        };

        // Top: title, legend, room for the value labels above the tallest bar.
        let header = Header::layout(&self.title, &self.series, |s| 8 * s, st, w, h);
        let plot_top = header.bottom + 8 * value_scale + 4;
        let plot_h = plot_bottom - plot_top;
        if plot_h < 16 {
            return Err(too_small(width, height, "short"));
        }
        let area = Area {
            left: plot_left,
            top: plot_top,
            right: plot_right,
            bottom: plot_bottom,
        };
        let y_of = |v: f64| -> i32 {
            let frac = if scale.max > 0.0 {
                (v / scale.max).clamp(0.0, 1.0)
            } else {
                0.0
            };
            plot_bottom - (frac * plot_h as f64).round() as i32
        };

        let mut c = Canvas::new(width, height);

        // Grid lines and tick labels.
        let ticks: Vec<(i32, &str)> = tick_labels
            .iter()
            .enumerate()
            .map(|(i, label)| (y_of(i as f64 * scale.step), label.as_str()))
            .collect();
        draw_y_ticks(&mut c, &ticks, area, st);
        draw_y_label(&mut c, &self.y_label, area, st);

        // Bars.
        for (g, row) in values.iter().enumerate() {
            for (s, v) in row.iter().enumerate() {
                if let Some(v) = v {
                    let (x0, x1) = bar_x(g, s);
                    let top = y_of(*v);
                    c.fill_rect(x0, top, x1 - x0, plot_bottom - top, PALETTE[s % 8]);
                }
            }
        }

        draw_axes(&mut c, area);

        // Group labels, centred under their slots.
        for (g, lines) in group_lines.iter().enumerate() {
            let cx = plot_left as f64 + (g as f64 + 0.5) * slot_w;
            if vertical_groups {
                for line in lines {
                    let x = (cx - 4.0).round() as i32;
                    c.text_vertical(x, plot_bottom + gap, line, 1, TEXT);
                }
                continue;
            }
            for (k, line) in lines.iter().enumerate() {
                let lw = text_width(line, group_scale);
                let x = (cx - lw as f64 / 2.0).round() as i32;
                let ly = plot_bottom + gap + k as i32 * line_h;
                c.text(x, ly, line, group_scale, TEXT);
            }
        }

        // Value labels.
        for (g, row) in value_labels.iter().enumerate() {
            for (s, label) in row.iter().enumerate() {
                let (Some(label), Some(v)) = (label, values[g][s]) else {
                    continue;
                };
                let (x0, x1) = bar_x(g, s);
                let top = y_of(v);
                match value_mode {
                    ValueLabels::Horizontal => {
                        let lw = text_width(label, value_scale);
                        let x = (x0 + x1 - lw) / 2;
                        c.text(x, top - 8 * value_scale - 3, label, value_scale, TEXT);
                    }
                    ValueLabels::Vertical => {
                        let len = text_width(label, 1);
                        let x = (x0 + x1 - 8) / 2;
                        if plot_bottom - top >= len + 8 {
                            let color = contrast_text(PALETTE[s % 8]);
                            c.text_vertical(x, top + 4, label, 1, color);
                        } else {
                            c.text_vertical(x, top - 4 - len, label, 1, TEXT);
                        }
                    }
                    ValueLabels::Off => {}
                }
            }
        }

        // Reference line, dashed, with its label on a white box at the right end.
        if let (Some(v), Some((_, label))) = (reference, &self.reference_line) {
            let ry = y_of(v);
            draw_reference_line(&mut c, ry, area, st);
            // At the right end, above the line unless that reaches above the room
            // for the value labels.
            if let Some(label) = ReferenceLabel::new(label, area, st) {
                let mut corner = label.corner(ry, area, st, Side::Right, true);
                if corner.1 < plot_top - 8 * value_scale {
                    corner = label.corner(ry, area, st, Side::Right, false);
                }
                label.draw(&mut c, corner);
            }
        }

        // Title and legend last, on top of everything.
        header.draw(&mut c, w, &|c, s, x, y, key_w, scale| {
            c.fill_rect(x, y, key_w, 8 * scale, PALETTE[s % 8]);
        });

        Ok(c)
    }
}

/// What a line chart's validation found: the x range of the points, the y range of
/// the points and the reference value, and that value.
struct LineRanges {
    x: (f64, f64),
    y: (f64, f64),
    reference: Option<f64>,
}

/// A line chart's y axis.
#[derive(Debug, Clone, Copy)]
enum YAxis {
    Linear(NiceScale),
    Log(LogScale),
}

impl YAxis {
    /// Where `v` lies between the bottom (0) and the top (1) of the axis.
    fn frac(&self, v: f64) -> f64 {
        match self {
            YAxis::Linear(s) => s.frac(v),
            YAxis::Log(s) => s.frac(v.log10()),
        }
    }

    /// The ticks, bottom to top, as (fraction of the axis, label).
    fn ticks(&self) -> Vec<(f64, String)> {
        match self {
            YAxis::Linear(s) => (0..=s.ticks)
                .map(|i| (s.frac(s.tick(i)), s.label(s.tick(i))))
                .collect(),
            YAxis::Log(s) => s
                .exponents()
                .map(|e| (s.frac(e as f64), log_label(e)))
                .collect(),
        }
    }
}

impl LineChart {
    /// Renders the chart as an RGB PNG image of `width` x `height` pixels (each side
    /// from 1 to 8192; about 800 x 450 or more reads well, smaller images fall back to
    /// the font's natural 8x8 size).
    ///
    /// Errors ([`Error::InvalidArgument`] with op `"plot"`): no series, no points in
    /// any series, a NaN or infinite coordinate or reference value, a zero or negative
    /// y or reference value with `log_y`, a zero or oversized side, an image too small
    /// to hold the plot area, or a PNG encoding failure.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>> {
        let canvas = self.render(width, height)?;
        encode_png(&canvas)
    }

    /// Renders the chart (see [`LineChart::render_png`]) and writes it to `path`,
    /// creating missing parent directories. I/O failures are reported as
    /// [`Error::InvalidArgument`] naming the path.
    pub fn write_png(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        write_file(path, &self.render_png(width, height)?)
    }

    /// As [`LineChart::write_png`], with `points` added after the series as markers
    /// only, never joined by lines (a point cloud, such as a swarm at one instant); they
    /// take their places in the legend and count for the axis ranges like the series.
    pub fn write_png_with_points(
        &self,
        path: &Path,
        width: u32,
        height: u32,
        points: &[LineSeries],
    ) -> Result<()> {
        let mut all = self.clone();
        let first = all.series.len();
        all.series.extend_from_slice(points);
        write_file(path, &encode_png(&all.render_with(width, height, first)?)?)
    }

    /// Checks the data and returns its ranges.
    fn validated(&self) -> Result<LineRanges> {
        if self.series.is_empty() {
            return Err(invalid("the chart has no series"));
        }
        let log_y = self.log_y;
        let check = |v: f64, is_y: bool, what: &dyn Fn() -> String| -> Result<()> {
            if v.is_nan() {
                Err(invalid(format!("{} is NaN", what())))
            } else if v.is_infinite() {
                Err(invalid(format!("{} is infinite ({v})", what())))
            } else if is_y && log_y && v <= 0.0 {
                Err(invalid(format!(
                    "{} is {v}, not positive, on a log y axis",
                    what()
                )))
            } else {
                Ok(())
            }
        };
        let mut x = (f64::INFINITY, f64::NEG_INFINITY);
        let mut y = x;
        for series in &self.series {
            for (i, &(px, py)) in series.points.iter().enumerate() {
                let what = |axis: &str| format!("{axis} of point {i} of series {:?}", series.name);
                check(px, false, &|| what("x"))?;
                check(py, true, &|| what("y"))?;
                x = (x.0.min(px), x.1.max(px));
                y = (y.0.min(py), y.1.max(py));
            }
        }
        if x.0 > x.1 {
            return Err(invalid("the chart has no points (every series is empty)"));
        }
        let reference = match &self.reference_line {
            Some((v, label)) => {
                check(*v, true, &|| format!("reference line {label:?}"))?;
                y = (y.0.min(*v), y.1.max(*v));
                Some(*v)
            }
            None => None,
        };
        Ok(LineRanges { x, y, reference })
    }

    /// Lays the chart out and draws it into a canvas.
    fn render(&self, width: u32, height: u32) -> Result<Canvas> {
        self.render_with(width, height, self.series.len())
    }

    /// [`LineChart::render`], the series from index `points_from` on drawn as markers
    /// only.
    fn render_with(&self, width: u32, height: u32, points_from: usize) -> Result<Canvas> {
        let markers = |s: usize, series: &LineSeries| s >= points_from || has_markers(series);
        check_size(width, height)?;
        let data = self.validated()?;
        let (w, h) = (width as i32, height as i32);
        let st = Style::for_size(w, h);
        let Style { big, pad, gap } = st;

        // Top: title and legend, then room for the upper half of the top tick label.
        let names: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        let header = Header::layout(&self.title, &names, line_key_width, st, w, h);
        let plot_top = header.bottom + 4 * big + 2;

        // Bottom: tick marks, tick labels, x label.
        let tick_label_dy = 4 + 2 * big;
        let x_label_h = if self.x_label.trim().is_empty() {
            0
        } else {
            8 * big + gap
        };
        let plot_bottom = h - pad - x_label_h - 8 * big - tick_label_dy;
        let plot_h = plot_bottom - plot_top;
        if plot_h < 16 {
            return Err(too_small(width, height, "short"));
        }

        // Y axis: tick labels at least two text heights apart.
        let max_y_ticks = (plot_h / (16 * big)) as usize + 1;
        let y_axis = if self.log_y {
            YAxis::Log(LogScale::covering(data.y.0, data.y.1, max_y_ticks))
        } else {
            let steps = max_y_ticks.saturating_sub(1).clamp(2, 6);
            YAxis::Linear(NiceScale::covering(data.y.0, data.y.1, steps))
        };
        let y_ticks = y_axis.ticks();
        let y_tick_labels: Vec<String> = y_ticks.iter().map(|t| t.1.clone()).collect();
        let plot_left = y_axis_margin(&y_tick_labels, &self.y_label, st);

        // X axis: at most one tick per 8 characters of width, and room on the right
        // for half of the last tick label.
        let x_steps = ((w - plot_left - pad) / (8 * 8 * big)).clamp(2, 8) as usize;
        let xs = NiceScale::covering(data.x.0, data.x.1, x_steps);
        let x_labels: Vec<String> = (0..=xs.ticks).map(|i| xs.label(xs.tick(i))).collect();
        let last_w = x_labels.last().map_or(0, |l| text_width(l, big));
        let plot_right = w - pad - (last_w / 2).max(big);
        let plot_w = plot_right - plot_left;
        if plot_w < 16 {
            return Err(too_small(width, height, "narrow"));
        }
        let area = Area {
            left: plot_left,
            top: plot_top,
            right: plot_right,
            bottom: plot_bottom,
        };
        // X tick labels at 2x when they all fit between their neighbours, else at
        // 1x, and then only every k-th one where even 1x is too crowded.
        let px_per_step = plot_w as f64 / xs.ticks as f64;
        let widest = |s: i32| x_labels.iter().map(|l| text_width(l, s)).max().unwrap_or(0);
        let x_scale = if big == 2 && (widest(2) + 16) as f64 <= px_per_step {
            2
        } else {
            1
        };
        let every = ((widest(x_scale) + 8 * x_scale) as f64 / px_per_step)
            .ceil()
            .max(1.0) as usize;

        let x_of = |v: f64| plot_left as f64 + xs.frac(v) * plot_w as f64;
        let y_of = |v: f64| plot_bottom as f64 - y_axis.frac(v) * plot_h as f64;

        let mut c = Canvas::new(width, height);

        // X grid lines, tick marks and labels.
        for (i, label) in x_labels.iter().enumerate() {
            let tx = x_of(xs.tick(i)).round() as i32;
            if tx > plot_left {
                c.fill_rect(tx, plot_top, 1, plot_h, GRID);
            }
            c.fill_rect(tx, plot_bottom + 1, 1, 4, AXIS);
            if i % every == 0 {
                let lw = text_width(label, x_scale);
                c.text(
                    tx - lw / 2,
                    plot_bottom + tick_label_dy,
                    label,
                    x_scale,
                    TEXT,
                );
            }
        }

        // Y grid lines, tick marks and labels; minor ticks on a log axis.
        let rows: Vec<(i32, &str)> = y_ticks
            .iter()
            .map(|(f, l)| {
                (
                    (plot_bottom as f64 - f * plot_h as f64).round() as i32,
                    l.as_str(),
                )
            })
            .collect();
        draw_y_ticks(&mut c, &rows, area, st);
        if let YAxis::Log(s) = y_axis {
            let decade_h = plot_h as f64 / (s.hi - s.lo) as f64;
            if s.stride == 1 && decade_h >= 24.0 {
                for e in s.lo..s.hi {
                    for m in 2..=9 {
                        let f = s.frac(e as f64 + f64::from(m).log10());
                        let ty = (plot_bottom as f64 - f * plot_h as f64).round() as i32;
                        c.fill_rect(plot_left - 2, ty, 2, 1, AXIS);
                    }
                }
            }
        }

        // Axis labels.
        draw_y_label(&mut c, &self.y_label, area, st);
        if x_label_h > 0 {
            let s = if text_width(&self.x_label, big) <= plot_w {
                big
            } else {
                1
            };
            let label = truncate(&self.x_label, (plot_w / (8 * s)).max(0) as usize);
            let lw = text_width(&label, s);
            let ly = plot_bottom + tick_label_dy + 8 * big + gap;
            c.text(plot_left + (plot_w - lw) / 2, ly, &label, s, TEXT);
        }

        // Reference line under the data, axes, then the series in order.
        let reference_row = data.reference.map(|v| y_of(v).round() as i32);
        if let Some(ry) = reference_row {
            draw_reference_line(&mut c, ry, area, st);
        }
        draw_axes(&mut c, area);
        let clip = Area {
            left: plot_left - 1,
            top: plot_top - 1,
            right: plot_right + 1,
            bottom: plot_bottom + 1,
        };
        for (s, series) in self.series.iter().enumerate() {
            let color = PALETTE[s % 8];
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .map(|&(x, y)| (x_of(x), y_of(y)))
                .collect();
            if s < points_from {
                for pair in points.windows(2) {
                    c.line(pair[0], pair[1], LINE_WIDTH, clip, color);
                }
            }
            if markers(s, series) {
                for &(x, y) in &points {
                    let (x, y) = (x.round() as i32, y.round() as i32);
                    draw_marker(&mut c, x, y, marker_radius(big), s, color);
                }
            }
        }

        // The reference label over the data, at the end of the line and on the side
        // of it (left above first: convergence curves leave the bottom left empty)
        // where its box hides the fewest data pixels.
        if let (Some(ry), Some((_, label))) = (reference_row, &self.reference_line)
            && let Some(label) = ReferenceLabel::new(label, area, st)
        {
            let spots = [
                (Side::Left, true),
                (Side::Right, true),
                (Side::Left, false),
                (Side::Right, false),
            ];
            let corners = spots
                .into_iter()
                .map(|(side, above)| label.corner(ry, area, st, side, above));
            let inside =
                |&(_, y): &(i32, i32)| y - 2 >= plot_top && y + 8 * label.scale + 2 <= plot_bottom;
            let hidden = |corner: &(i32, i32)| {
                let (x, y, w, h) = label.backdrop(*corner);
                c.count(x, y, w, h, |p| PALETTE.contains(&p))
            };
            let fallback = label.corner(ry, area, st, Side::Left, true);
            let corner = corners
                .filter(inside)
                .min_by_key(hidden)
                .unwrap_or(fallback);
            label.draw(&mut c, corner);
        }

        // Title and legend last, on top of everything.
        header.draw(&mut c, w, &|c, s, x, y, key_w, scale| {
            let color = PALETTE[s % 8];
            let cy = y + 4 * scale;
            if s < points_from {
                c.fill_rect(x, cy - LINE_WIDTH / 2, key_w, LINE_WIDTH, color);
            }
            if self.series.get(s).is_some_and(|series| markers(s, series)) {
                draw_marker(c, x + key_w / 2, cy, marker_radius(scale), s, color);
            }
        });

        Ok(c)
    }
}

/// Width of a line chart's legend key (a line sample) at `scale`.
fn line_key_width(scale: i32) -> i32 {
    20 * scale
}

fn has_markers(series: &LineSeries) -> bool {
    !series.points.is_empty() && series.points.len() < MARKER_MAX_POINTS
}

fn marker_radius(scale: i32) -> i32 {
    2 * scale
}

/// A filled marker of radius `r` centred on (x, y), its shape chosen by the series
/// index: disc, square, diamond, triangle.
fn draw_marker(c: &mut Canvas, x: i32, y: i32, r: i32, series: usize, color: Rgb) {
    for dy in -r..=r {
        for dx in -r..=r {
            let inside = match series % 4 {
                0 => dx * dx + dy * dy <= r * r + 1,
                1 => dx.abs() < r && dy.abs() < r,
                2 => dx.abs() + dy.abs() <= r + 1,
                _ => 2 * dx.abs() <= dy + r,
            };
            if inside {
                c.fill_rect(x + dx, y + dy, 1, 1, color);
            }
        }
    }
}

/// A log axis with ticks at the powers of ten `10^lo, 10^(lo + stride), ..., 10^hi`
/// (`lo` and `hi` multiples of `stride`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LogScale {
    lo: i32,
    hi: i32,
    stride: i32,
}

impl LogScale {
    /// The powers of ten around `min..=max` (positive values), with the smallest
    /// stride of 1, 2, 3, 5, 10, 20, ... decades that keeps the tick count at most
    /// `max_ticks` (2 at least). A range within one power of ten spans the decade
    /// above it.
    fn covering(min: f64, max: f64, max_ticks: usize) -> LogScale {
        let log = |v: f64| {
            if v > 0.0 && v.is_finite() {
                v.log10()
            } else {
                0.0
            }
        };
        let (a, b) = (log(min), log(max));
        let (a, b) = (a.min(b), a.max(b));
        // Tolerate rounding so that a power of ten stays on its tick.
        let lo = (a + 1e-9).floor() as i32;
        let hi = ((b - 1e-9).ceil() as i32).max(lo + 1);
        let max_ticks = max_ticks.max(2) as i32;
        let fit = |stride: i32| {
            let lo = lo.div_euclid(stride) * stride;
            let hi = (hi + stride - 1).div_euclid(stride) * stride;
            LogScale { lo, hi, stride }
        };
        [1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500]
            .into_iter()
            .map(fit)
            .find(|s| (s.hi - s.lo) / s.stride < max_ticks)
            .unwrap_or_else(|| fit(1000))
    }

    /// The tick exponents, bottom to top.
    fn exponents(&self) -> impl Iterator<Item = i32> {
        (self.lo..=self.hi).step_by(self.stride.max(1) as usize)
    }

    /// Where the decimal logarithm `log10v` lies between the bottom (0) and the top
    /// (1) of the axis.
    fn frac(&self, log10v: f64) -> f64 {
        (log10v - self.lo as f64) / (self.hi - self.lo).max(1) as f64
    }
}

/// The label of the tick at `10^e`: "0.1", "1" and "10", else "1e-8", "1e3", ...
fn log_label(e: i32) -> String {
    match e {
        -1 => "0.1".into(),
        0 => "1".into(),
        1 => "10".into(),
        _ => format!("1e{e}"),
    }
}

/// How the values are written on the bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueLabels {
    /// Above each bar, reading left to right.
    Horizontal,
    /// Turned 90 degrees: inside the top of the bar, or above a short bar.
    Vertical,
    /// Bars too narrow for any label.
    Off,
}

/// Dark or white text, whichever reads better on `fill`.
fn contrast_text(fill: Rgb) -> Rgb {
    let luma = 0.299 * fill[0] as f64 + 0.587 * fill[1] as f64 + 0.114 * fill[2] as f64;
    if luma >= 140.0 { TEXT } else { BACKGROUND }
}

/// A linear axis from `min` to `max = min + ticks * step`, with a 1, 2, 2.5 or 5 times
/// a power of ten `step`. [`NiceScale::new`] (the bar chart's y axis) starts at 0 and
/// has 3 to 5 steps (4 to 6 labelled ticks, 0 included).
#[derive(Debug, Clone, Copy)]
struct NiceScale {
    min: f64,
    step: f64,
    ticks: usize,
    max: f64,
    /// Divisor and suffix of the tick labels ("k", "M", "G") for large values.
    unit: (f64, &'static str),
}

impl NiceScale {
    fn new(data_max: f64) -> NiceScale {
        let m = if data_max.is_finite() && data_max > 0.0 {
            data_max
        } else {
            1.0
        };
        let e = m.log10().floor() as i32;
        let mut chosen = None;
        'search: for k in (e - 2)..=(e + 1) {
            for mult in [1.0, 2.0, 2.5, 5.0] {
                let step = mult * 10f64.powi(k);
                // Tolerate rounding so that a maximum equal to a tick stays on it.
                let n = (m / step * (1.0 - 1e-9)).ceil().max(1.0);
                if n <= 5.0 {
                    chosen = Some((step, n as usize));
                    break 'search;
                }
            }
        }
        let (step, ticks) = match chosen {
            Some(c) if c.0.is_finite() && c.0 > 0.0 => c,
            _ => (m / 5.0, 5),
        };
        let max = step * ticks as f64;
        let unit = if max >= 1e10 {
            (1e9, "G")
        } else if max >= 1e7 {
            (1e6, "M")
        } else if max >= 1e4 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        NiceScale {
            min: 0.0,
            step,
            ticks,
            max,
            unit,
        }
    }

    /// The scale with the most steps, `max_steps` at most (2 at least), whose ticks
    /// cover `lo..=hi`. A range that is at least half of its largest magnitude (all
    /// data on one side of 0) is extended to 0, as is a single nonzero value; a
    /// single 0 gets `0..=1`.
    fn covering(lo: f64, hi: f64, max_steps: usize) -> NiceScale {
        let (mut lo, mut hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        if !(lo.is_finite() && hi.is_finite()) {
            (lo, hi) = (0.0, 1.0);
        }
        if lo >= 0.0 && (lo <= 0.5 * hi || lo == hi) {
            lo = 0.0;
        }
        if hi <= 0.0 && (hi >= 0.5 * lo || lo == hi) {
            hi = 0.0;
        }
        if lo == hi {
            hi = 1.0;
        }
        let max_steps = max_steps.max(2) as f64;
        // Halved so that a span across the whole f64 range stays finite.
        let half_span = hi / 2.0 - lo / 2.0;
        let e = (2.0 * half_span).log10().floor() as i32;
        let mut chosen = None;
        'search: for k in (e - 1)..=(e + 1) {
            for mult in [1.0, 2.0, 2.5, 5.0] {
                let step = mult * 10f64.powi(k);
                // Tolerate rounding so that an end equal to a tick stays on it.
                let (a, b) = (lo / step, hi / step);
                let first = (a + 1e-9 * a.abs().max(1.0)).floor();
                let last = (b - 1e-9 * b.abs().max(1.0)).ceil();
                let n = (last - first).max(1.0);
                if n <= max_steps && step.is_finite() && step > 0.0 {
                    chosen = Some((first * step, step, n as usize));
                    break 'search;
                }
            }
        }
        let (min, step, ticks) = chosen.unwrap_or((lo, half_span / 2.5, 5));
        let max = min + step * ticks as f64;
        let magnitude = min.abs().max(max.abs());
        let unit = if magnitude >= 1e10 {
            (1e9, "G")
        } else if magnitude >= 1e7 {
            (1e6, "M")
        } else if magnitude >= 1e4 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        NiceScale {
            min,
            step,
            ticks,
            max,
            unit,
        }
    }

    /// The value of tick `i` (0 at `min`).
    fn tick(&self, i: usize) -> f64 {
        self.min + i as f64 * self.step
    }

    /// Where `v` lies between `min` (0) and `max` (1).
    fn frac(&self, v: f64) -> f64 {
        let d = self.max / 2.0 - self.min / 2.0;
        if d > 0.0 {
            (v / 2.0 - self.min / 2.0) / d
        } else {
            0.0
        }
    }

    /// Tick label for `v` (a multiple of the step): just enough decimals for the step.
    fn label(&self, v: f64) -> String {
        let step = self.step / self.unit.0;
        let decimals = (0..12)
            .find(|&d| {
                let x = step * 10f64.powi(d);
                (x - x.round()).abs() < 1e-6 * x.abs().max(1.0)
            })
            .unwrap_or(12) as usize;
        // A tick that rounding left a hair off 0 is 0.
        if v == 0.0 || v.abs() < 1e-6 * self.step {
            return "0".into();
        }
        if self.max.abs().max(self.min.abs()) >= 1e13 {
            return format!("{v:.1e}");
        }
        format!("{:.*}{}", decimals, v / self.unit.0, self.unit.1)
    }
}

/// A value label with about three significant digits: `0`, `0.0123`, `1.23`, `12.3`,
/// `123`, `1234`, `12.3k`, `123k`, `1.23M`, ...
fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    let (scaled, suffix) = if a >= 1e13 {
        return format!("{v:.2e}");
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else if a < 1e-3 {
        return format!("{v:.2e}");
    } else {
        (v, "")
    };
    let sa = scaled.abs();
    let decimals = if sa >= 100.0 {
        0
    } else if sa >= 10.0 {
        1
    } else if sa >= 1.0 {
        2
    } else {
        // 0.001 <= sa < 1: three significant digits.
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

/// Width in pixels of `text` at `scale` (8x8 glyphs, 8 pixels advance).
fn text_width(text: &str, scale: i32) -> i32 {
    (text.chars().count() as i32).saturating_mul(8 * scale)
}

/// `text` cut to at most `max_chars` characters, ending in ".." when cut.
fn truncate(text: &str, max_chars: usize) -> String {
    let n = text.chars().count();
    if n <= max_chars {
        return text.to_string();
    }
    if max_chars <= 3 {
        return text.chars().take(max_chars).collect();
    }
    let mut s: String = text.chars().take(max_chars - 2).collect();
    s.push_str("..");
    s
}

/// Wraps a label into lines of at most `max_chars` characters, breaking at spaces and
/// after `/ _ - , : ;`, splitting words longer than a line. More than `max_lines` lines
/// are cut, the last ending in "..". Returns the lines and whether nothing was cut.
fn wrap_label(label: &str, max_chars: usize, max_lines: usize) -> (Vec<String>, bool) {
    let max_chars = max_chars.max(1);
    // Pieces between break opportunities, each with whether a space preceded it.
    let mut pieces: Vec<(bool, String)> = Vec::new();
    let mut current = String::new();
    let mut spaced = false;
    for ch in label.chars() {
        if ch.is_whitespace() {
            if !current.is_empty() {
                pieces.push((spaced, std::mem::take(&mut current)));
            }
            spaced = true;
            continue;
        }
        current.push(ch);
        if matches!(ch, '/' | '_' | '-' | ',' | ':' | ';') {
            pieces.push((spaced, std::mem::take(&mut current)));
            spaced = false;
        }
    }
    if !current.is_empty() {
        pieces.push((spaced, current));
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (i, (spaced, piece)) in pieces.into_iter().enumerate() {
        let sep = if spaced && i > 0 { " " } else { "" };
        let len = line.chars().count();
        let plen = piece.chars().count();
        if line.is_empty() {
            line = piece;
        } else if len + sep.len() + plen <= max_chars {
            line.push_str(sep);
            line.push_str(&piece);
        } else {
            lines.push(std::mem::take(&mut line));
            line = piece;
        }
        while line.chars().count() > max_chars {
            let head: String = line.chars().take(max_chars).collect();
            let tail: String = line.chars().skip(max_chars).collect();
            lines.push(head);
            line = tail;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    let max_lines = max_lines.max(1);
    if lines.len() <= max_lines {
        return (lines, true);
    }
    lines.truncate(max_lines);
    if let Some(last) = lines.last_mut() {
        let mut cut: String = last.chars().take(max_chars.saturating_sub(2)).collect();
        cut.push_str("..");
        *last = truncate(&cut, max_chars);
    }
    (lines, false)
}

/// Legend entries (key + name) placed in centred rows.
struct Legend {
    /// Per row: entries as (series index, x offset from the row start, name), and the
    /// row width.
    row_items: Vec<(LegendRow, i32)>,
    rows: i32,
    row_h: i32,
    scale: i32,
    /// Width of the key drawn left of each name (its height is 8 * scale).
    key_w: i32,
}

/// Draws the key of series `s` into the box at (x, y), `key_w` x (8 * scale) pixels.
type DrawKey<'a> = &'a dyn Fn(&mut Canvas, usize, i32, i32, i32, i32);

/// Lays the legend out in rows at most `avail` pixels wide, `spacing` pixels between
/// entries, each key `key_w` pixels wide.
fn layout_legend(series: &[String], scale: i32, avail: i32, spacing: i32, key_w: i32) -> Legend {
    let swatch = key_w;
    let gap = legend_text_offset(key_w, scale) - swatch;
    let mut row_items: Vec<(LegendRow, i32)> = vec![(Vec::new(), 0)];
    for (i, name) in series.iter().enumerate() {
        let max_chars = ((avail - swatch - gap) / (8 * scale)).max(1) as usize;
        let name = truncate(name, max_chars);
        let item_w = swatch + gap + text_width(&name, scale);
        let Some(row) = row_items.last_mut() else {
            break;
        };
        let x = if row.0.is_empty() { 0 } else { row.1 + spacing };
        if !row.0.is_empty() && x + item_w > avail {
            row_items.push((vec![(i, 0, name)], item_w));
        } else {
            row.0.push((i, x, name));
            row.1 = x + item_w;
        }
    }
    Legend {
        rows: row_items.len() as i32,
        row_items,
        row_h: 8 * scale + 3 * scale + 2,
        scale,
        key_w,
    }
}

/// Distance from a legend key's left edge to its name.
fn legend_text_offset(key_w: i32, scale: i32) -> i32 {
    key_w + 4 * scale + 2
}

impl Legend {
    fn draw(&self, c: &mut Canvas, width: i32, top: i32, key: DrawKey) {
        let text_x = legend_text_offset(self.key_w, self.scale);
        for (r, (items, row_w)) in self.row_items.iter().enumerate() {
            let x0 = (width - row_w) / 2;
            let y = top + r as i32 * self.row_h;
            for (i, dx, name) in items {
                key(c, *i, x0 + dx, y, self.key_w, self.scale);
                c.text(x0 + dx + text_x, y, name, self.scale, TEXT);
            }
        }
    }
}

/// Text scale (2x where the image has room for 16-pixel glyphs, else 1x), outer
/// padding and the spacing between laid-out elements.
#[derive(Debug, Clone, Copy)]
struct Style {
    big: i32,
    pad: i32,
    gap: i32,
}

impl Style {
    fn for_size(w: i32, h: i32) -> Style {
        let big = if w >= 480 && h >= 320 { 2 } else { 1 };
        Style {
            big,
            pad: 6 + 4 * big,
            gap: 4 + 2 * big,
        }
    }
}

/// The plot area: the y axis runs along `left`, the x axis along `bottom`, data maps
/// onto `left..=right` x `top..=bottom`.
#[derive(Debug, Clone, Copy)]
struct Area {
    left: i32,
    top: i32,
    right: i32,
    bottom: i32,
}

impl Area {
    fn w(&self) -> i32 {
        self.right - self.left
    }

    fn h(&self) -> i32 {
        self.bottom - self.top
    }
}

fn check_size(width: u32, height: u32) -> Result<()> {
    if width == 0 || height == 0 {
        return Err(invalid(format!(
            "image size {width}x{height} has a zero side"
        )));
    }
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(invalid(format!(
            "image size {width}x{height} exceeds {MAX_SIDE} pixels per side"
        )));
    }
    Ok(())
}

/// The error for an image too `narrow` or too `short` to hold the plot area.
fn too_small(width: u32, height: u32, what: &str) -> Error {
    invalid(format!(
        "image size {width}x{height} is too {what} for the chart"
    ))
}

/// Writes `png` to `path`, creating missing parent directories ([`crate::output`]: a
/// temporary file renamed over the target on success).
pub(crate) fn write_file(path: &Path, png: &[u8]) -> Result<()> {
    crate::output::write_file(path, png)
}

/// The title and legend above the plot area.
struct Header {
    title: String,
    title_scale: i32,
    title_y: i32,
    legend: Legend,
    legend_y: i32,
    /// First row below the header (after a gap).
    bottom: i32,
}

impl Header {
    /// Lays out the title (truncated to the width, 1x when too long for 2x) and the
    /// legend (1x when it would need more than two rows, or a quarter of the height,
    /// at 2x), each legend key `key_w(scale)` pixels wide.
    fn layout(
        title: &str,
        series: &[String],
        key_w: impl Fn(i32) -> i32,
        st: Style,
        w: i32,
        h: i32,
    ) -> Header {
        let Style { big, pad, gap } = st;
        let mut y = pad;
        let title_scale = if text_width(title, big) <= w - 2 * pad {
            big
        } else {
            1
        };
        let title = truncate(title, ((w - 2 * pad) / 8).max(0) as usize);
        let title_y = y;
        if !title.is_empty() {
            y += 8 * title_scale + gap + big;
        }
        let mut legend = layout_legend(series, big, w - 2 * pad, 4 * gap, key_w(big));
        if big == 2 && (legend.rows > 2 || legend.rows * legend.row_h > h / 4) {
            legend = layout_legend(series, 1, w - 2 * pad, 4 * gap, key_w(1));
        }
        let legend_y = y;
        y += legend.rows * legend.row_h + gap;
        Header {
            title,
            title_scale,
            title_y,
            legend,
            legend_y,
            bottom: y,
        }
    }

    fn draw(&self, c: &mut Canvas, w: i32, key: DrawKey) {
        if !self.title.is_empty() {
            let tw = text_width(&self.title, self.title_scale);
            c.text(
                (w - tw) / 2,
                self.title_y,
                &self.title,
                self.title_scale,
                TEXT,
            );
        }
        self.legend.draw(c, w, self.legend_y, key);
    }
}

/// Left edge of the plot area: room for the vertical y label (when not blank), the
/// widest tick label and the tick marks.
fn y_axis_margin(tick_labels: &[String], y_label: &str, st: Style) -> i32 {
    let tick_w = tick_labels
        .iter()
        .map(|l| text_width(l, st.big))
        .max()
        .unwrap_or(0);
    let y_label_w = if y_label.trim().is_empty() {
        0
    } else {
        8 * st.big + st.gap
    };
    st.pad + y_label_w + tick_w + 4 + st.gap
}

/// Tick marks left of the y axis, their labels, and light grid lines across the plot
/// area (none on the x axis itself); `ticks` holds (row, label).
fn draw_y_ticks(c: &mut Canvas, ticks: &[(i32, &str)], area: Area, st: Style) {
    for &(ty, label) in ticks {
        if ty < area.bottom {
            c.fill_rect(area.left + 1, ty, area.w(), 1, GRID);
        }
        c.fill_rect(area.left - 4, ty, 4, 1, AXIS);
        let lw = text_width(label, st.big);
        c.text(
            area.left - 4 - st.gap - lw,
            ty - 4 * st.big,
            label,
            st.big,
            TEXT,
        );
    }
}

/// The y label, turned 90 degrees, centred on the plot area at the left padding
/// (nothing when blank).
fn draw_y_label(c: &mut Canvas, y_label: &str, area: Area, st: Style) {
    if y_label.trim().is_empty() {
        return;
    }
    let plot_h = area.h();
    let s = if text_width(y_label, st.big) <= plot_h {
        st.big
    } else {
        1
    };
    let label = truncate(y_label, (plot_h / (8 * s)).max(0) as usize);
    let len = text_width(&label, s);
    c.text_vertical(st.pad, area.top + (plot_h - len) / 2, &label, s, TEXT);
}

fn draw_axes(c: &mut Canvas, area: Area) {
    c.fill_rect(area.left, area.top, 1, area.h() + 1, AXIS);
    c.fill_rect(area.left, area.bottom, area.w() + 1, 1, AXIS);
}

/// A dashed horizontal line across the plot area at row `ry`.
fn draw_reference_line(c: &mut Canvas, ry: i32, area: Area, st: Style) {
    let thick = st.big;
    let (dash, space) = (6 * st.big, 4 * st.big);
    let mut x = area.left + 1;
    while x <= area.right {
        c.fill_rect(
            x,
            ry - thick / 2,
            dash.min(area.right + 1 - x),
            thick,
            REFERENCE,
        );
        x += dash + space;
    }
}

/// Which end of the plot area a label goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

/// The reference line's label, at 2x when it fits in the plot width, truncated to it.
struct ReferenceLabel {
    text: String,
    scale: i32,
}

impl ReferenceLabel {
    /// `None` when nothing of the label fits (or it is empty).
    fn new(label: &str, area: Area, st: Style) -> Option<ReferenceLabel> {
        let plot_w = area.w();
        let scale = if text_width(label, st.big) <= plot_w - 8 {
            st.big
        } else {
            1
        };
        let text = truncate(label, ((plot_w - 8) / (8 * scale)).max(0) as usize);
        (!text.is_empty()).then_some(ReferenceLabel { text, scale })
    }

    /// Top-left corner of the text at one end of the line at row `ry`, above or below
    /// it.
    fn corner(&self, ry: i32, area: Area, st: Style, side: Side, above: bool) -> (i32, i32) {
        let thick = st.big;
        let x = match side {
            Side::Right => area.right - 4 - text_width(&self.text, self.scale),
            Side::Left => area.left + 5 + 2 * st.big,
        };
        let y = if above {
            ry - thick / 2 - 8 * self.scale - 4
        } else {
            ry + thick + 3
        };
        (x, y)
    }

    /// The white box behind the text at `corner`, as (x, y, w, h).
    fn backdrop(&self, (x, y): (i32, i32)) -> (i32, i32, i32, i32) {
        let w = text_width(&self.text, self.scale);
        (x - 3, y - 2, w + 6, 8 * self.scale + 4)
    }

    fn draw(&self, c: &mut Canvas, corner: (i32, i32)) {
        let (bx, by, bw, bh) = self.backdrop(corner);
        c.fill_rect(bx, by, bw, bh, BACKGROUND);
        c.text(corner.0, corner.1, &self.text, self.scale, REFERENCE);
    }
}

/// An RGB8 pixel buffer; drawing outside it is clipped.
struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: u32, height: u32) -> Canvas {
        let mut pixels = Vec::with_capacity(width as usize * height as usize * 3);
        for _ in 0..width as usize * height as usize {
            pixels.extend_from_slice(&BACKGROUND);
        }
        Canvas {
            width: width as i32,
            height: height as i32,
            pixels,
        }
    }

    fn fill_rect(&mut self, x: i32, y: i32, w: i32, h: i32, color: Rgb) {
        let x0 = x.clamp(0, self.width);
        let y0 = y.clamp(0, self.height);
        let x1 = x.saturating_add(w).clamp(0, self.width);
        let y1 = y.saturating_add(h).clamp(0, self.height);
        for yy in y0..y1 {
            let row = yy as usize * self.width as usize;
            for xx in x0..x1 {
                let i = (row + xx as usize) * 3;
                self.pixels[i..i + 3].copy_from_slice(&color);
            }
        }
    }

    /// How many pixels of the rectangle (clipped to the canvas) satisfy `pred`.
    fn count(&self, x: i32, y: i32, w: i32, h: i32, pred: impl Fn(Rgb) -> bool) -> usize {
        let x0 = x.clamp(0, self.width);
        let y0 = y.clamp(0, self.height);
        let x1 = x.saturating_add(w).clamp(0, self.width);
        let y1 = y.saturating_add(h).clamp(0, self.height);
        let mut n = 0;
        for yy in y0..y1 {
            for xx in x0..x1 {
                let i = (yy as usize * self.width as usize + xx as usize) * 3;
                n += usize::from(pred([
                    self.pixels[i],
                    self.pixels[i + 1],
                    self.pixels[i + 2],
                ]));
            }
        }
        n
    }

    /// Fills the part of the rectangle that lies within `clip` (edges included).
    fn fill_rect_within(&mut self, x: i32, y: i32, w: i32, h: i32, clip: Area, color: Rgb) {
        let x0 = x.max(clip.left);
        let y0 = y.max(clip.top);
        let x1 = x.saturating_add(w).min(clip.right.saturating_add(1));
        let y1 = y.saturating_add(h).min(clip.bottom.saturating_add(1));
        if x1 > x0 && y1 > y0 {
            self.fill_rect(x0, y0, x1 - x0, y1 - y0, color);
        }
    }

    /// Draws a segment `thick` pixels wide from `a` to `b` (pixel coordinates),
    /// clipped to `clip`: Bresenham's line with a `thick` x `thick` square at each
    /// step.
    fn line(&mut self, a: (f64, f64), b: (f64, f64), thick: i32, clip: Area, color: Rgb) {
        let Some((a, b)) = clip_segment(a, b, clip) else {
            return;
        };
        let (mut x, mut y) = (a.0.round() as i32, a.1.round() as i32);
        let (x1, y1) = (b.0.round() as i32, b.1.round() as i32);
        let (dx, sx) = ((x1 - x).abs(), if x < x1 { 1 } else { -1 });
        let (dy, sy) = (-(y1 - y).abs(), if y < y1 { 1 } else { -1 });
        let mut err = dx + dy;
        loop {
            let o = thick / 2;
            self.fill_rect_within(x - o, y - o, thick, thick, clip, color);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// Draws `text` with its top-left corner at (x, y), each font pixel a
    /// `scale` x `scale` square.
    fn text(&mut self, x: i32, y: i32, text: &str, scale: i32, color: Rgb) {
        for (i, ch) in text.chars().enumerate() {
            let gx = x.saturating_add((i as i32).saturating_mul(8 * scale));
            for (row, bits) in glyph(ch).iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        let px = gx + col * scale;
                        let py = y + row as i32 * scale;
                        self.fill_rect(px, py, scale, scale, color);
                    }
                }
            }
        }
    }

    /// Draws `text` turned 90 degrees counter-clockwise (read bottom to top), within
    /// the box from (x, y) that is 8 * scale wide and `text_width` tall.
    fn text_vertical(&mut self, x: i32, y: i32, text: &str, scale: i32, color: Rgb) {
        let len = text_width(text, scale);
        for (i, ch) in text.chars().enumerate() {
            for (row, bits) in glyph(ch).iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        let u = (i as i32 * 8 + col) * scale;
                        let px = x + row as i32 * scale;
                        let py = y + len - u - scale;
                        self.fill_rect(px, py, scale, scale, color);
                    }
                }
            }
        }
    }
}

/// The part of the segment from `a` to `b` inside `clip` (edges included), or `None`
/// (Liang-Barsky).
fn clip_segment(a: (f64, f64), b: (f64, f64), clip: Area) -> Option<((f64, f64), (f64, f64))> {
    if ![a.0, a.1, b.0, b.1].iter().all(|v| v.is_finite()) {
        return None;
    }
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - clip.left as f64),
        (dx, clip.right as f64 - a.0),
        (-dy, a.1 - clip.top as f64),
        (dy, clip.bottom as f64 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    if t0 > t1 {
        return None;
    }
    let at = |t: f64| (a.0 + t * dx, a.1 + t * dy);
    Some((at(t0), at(t1)))
}

/// The 8x8 bitmap of `ch` (rows top to bottom, bit 0 the leftmost pixel); characters
/// outside printable ASCII draw as '?'.
fn glyph(ch: char) -> [u8; 8] {
    let code = ch as u32;
    let code = if (0x20..0x7f).contains(&code) {
        code
    } else {
        u32::from(b'?')
    };
    font8x8::legacy::BASIC_LEGACY[code as usize]
}

/// A row of heat maps of 2D fields on one shared colour scale (a five-colour viridis
/// ramp, low dark blue to high yellow) with a colour bar: solution snapshots.
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
#[derive(Debug, Clone)]
pub struct HeatMap {
    /// Title on top.
    pub title: String,
    /// The fields, left to right.
    pub panels: Vec<HeatPanel>,
}

/// One field of a [`HeatMap`].
#[derive(Debug, Clone)]
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

/// Viridis at 0, 1/4, 1/2, 3/4, 1.
const RAMP: [Rgb; 5] = [
    [68, 1, 84],
    [59, 82, 139],
    [33, 145, 140],
    [94, 201, 98],
    [253, 231, 37],
];

/// The ramp's colour at `x` in [0, 1].
fn ramp(x: f64) -> Rgb {
    let x = if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let f = x * (RAMP.len() - 1) as f64;
    let i = (f.floor() as usize).min(RAMP.len() - 2);
    let w = f - i as f64;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    [0, 1, 2].map(|c| (a[c] as f64 + w * (b[c] as f64 - a[c] as f64)).round() as u8)
}

impl HeatMap {
    /// Renders the maps as a PNG of `width` x `height` pixels. Errors: no panel, a panel
    /// whose values are not `nx ny` or hold no finite value, a size outside 200..8192.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>> {
        if !(200..=MAX_SIDE).contains(&width) || !(200..=MAX_SIDE).contains(&height) {
            return Err(invalid(format!(
                "image size {width} x {height} outside 200..{MAX_SIDE}"
            )));
        }
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
        let mut c = Canvas::new(width, height);
        let (w, h) = (width as i32, height as i32);
        c.text(10, 8, &self.title, 2, TEXT);
        let bar_w = 90;
        let k = self.panels.len() as i32;
        let gap = 12;
        let side = ((w - bar_w - 20 - gap * (k - 1)) / k).min(h - 70).max(8);
        let top = 34;
        for (pi, p) in self.panels.iter().enumerate() {
            let x0 = 10 + pi as i32 * (side + gap);
            for py in 0..side {
                // Row 0 at the bottom.
                let j = ((side - 1 - py) as usize * p.ny) / side as usize;
                for px in 0..side {
                    let i = (px as usize * p.nx) / side as usize;
                    let v = p.values[j * p.nx + i];
                    c.fill_rect(x0 + px, top + py, 1, 1, ramp((v - lo) / span));
                }
            }
            let label_x = x0 + (side - text_width(&p.label, 1)).max(0) / 2;
            c.text(label_x, top + side + 6, &p.label, 1, TEXT);
        }
        // Colour bar with its limits.
        let bx = w - bar_w;
        for py in 0..side {
            let x = 1.0 - py as f64 / (side - 1).max(1) as f64;
            c.fill_rect(bx, top + py, 16, 1, ramp(x));
        }
        c.text(bx + 20, top, &format!("{hi:.3}"), 1, TEXT);
        c.text(bx + 20, top + side - 8, &format!("{lo:.3}"), 1, TEXT);
        encode_png(&c)
    }

    /// Renders and writes the PNG to `path`, creating missing parent directories.
    pub fn write_png(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        write_file(path, &self.render_png(width, height)?)
    }
}

fn encode_png(c: &Canvas) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let err = |e: png::EncodingError| invalid(format!("PNG encoding failed: {e}"));
    {
        let mut encoder = png::Encoder::new(&mut out, c.width as u32, c.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::High);
        let mut writer = encoder.write_header().map_err(err)?;
        writer.write_image_data(&c.pixels).map_err(err)?;
        writer.finish().map_err(err)?;
    }
    Ok(out)
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
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
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
        // Row 0 (lowest value) at the bottom, the top row the highest.
        assert!(count_color(&px, RAMP[0]) > 100);
        assert!(count_color(&px, RAMP[4]) > 100);
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
        let empty = HeatMap {
            title: "none".into(),
            panels: vec![],
        };
        assert!(empty.render_png(400, 240).is_err());
    }

    fn count_color(pixels: &[u8], color: Rgb) -> usize {
        pixels.chunks_exact(3).filter(|p| *p == color).count()
    }

    fn sample() -> BarChart {
        BarChart {
            title: "axpy throughput, n = 2^24".into(),
            y_label: "GB/s".into(),
            series: vec!["CPU (rayon)".into(), "GPU".into(), "cuBLAS".into()],
            groups: vec![
                BarGroup {
                    label: "f32".into(),
                    values: vec![Some(41.2), Some(2870.5), Some(2911.0)],
                },
                BarGroup {
                    label: "f64".into(),
                    values: vec![Some(44.5), Some(2950.0), Some(3010.3)],
                },
            ],
            reference_line: None,
        }
    }

    fn example() -> BarChart {
        let names = [
            "axpy f32",
            "axpy f64",
            "dot f32",
            "dot f64",
            "nrm2 c64",
            "scal_inplace_complex128",
            "copy",
            "swap",
            "asum f32",
            "iamax f64",
        ];
        let groups = names
            .iter()
            .enumerate()
            .map(|(i, n)| BarGroup {
                label: (*n).into(),
                values: vec![
                    Some(20.0 + 7.0 * i as f64),
                    Some(2400.0 + 97.0 * i as f64),
                    if i % 3 == 0 {
                        None
                    } else {
                        Some(2600.0 + 50.0 * i as f64)
                    },
                ],
            })
            .collect();
        BarChart {
            title: "BLAS-1 bandwidth, n = 2^24, H100".into(),
            y_label: "effective bandwidth (GB/s)".into(),
            series: vec![
                "CPU (rayon)".into(),
                "ferrocuda GPU".into(),
                "cuBLAS".into(),
            ],
            groups,
            reference_line: Some((3350.0, "copy bandwidth".into())),
        }
    }

    #[test]
    fn renders_a_valid_png_with_bars() {
        let png_bytes = sample().render_png(800, 450).expect("render");
        let (w, h, pixels) = decode(&png_bytes);
        assert_eq!((w, h), (800, 450));
        assert_eq!(pixels.len(), 800 * 450 * 3);
        // Bars, not just the legend swatches (16x16 = 256 pixels), in every colour.
        assert!(count_color(&pixels, PALETTE[0]) > 256 + 50);
        for color in &PALETTE[1..3] {
            assert!(count_color(&pixels, *color) > 5000, "colour {color:?}");
        }
        // The plot area, between the margins, has non-background pixels.
        let row_start = (300 * 800 + 100) * 3;
        let row_end = (300 * 800 + 700) * 3;
        assert!(
            pixels[row_start..row_end]
                .chunks_exact(3)
                .any(|p| p != BACKGROUND)
        );
    }

    #[test]
    fn errors_on_empty_or_bad_input() {
        let mut empty = sample();
        empty.groups.clear();
        assert!(matches!(
            empty.render_png(800, 450),
            Err(Error::InvalidArgument { op: "plot", .. })
        ));
        let mut no_series = sample();
        no_series.series.clear();
        assert!(no_series.render_png(800, 450).is_err());
        let mut mismatch = sample();
        mismatch.groups[0].values.pop();
        assert!(mismatch.render_png(800, 450).is_err());
        assert!(sample().render_png(0, 450).is_err());
        assert!(sample().render_png(800, 0).is_err());
        assert!(sample().render_png(MAX_SIDE + 1, 450).is_err());
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut c = sample();
            c.groups[1].values[2] = Some(bad);
            assert!(c.render_png(800, 450).is_err(), "{bad}");
            let mut c = sample();
            c.reference_line = Some((bad, "ref".into()));
            assert!(c.render_png(800, 450).is_err(), "{bad}");
        }
    }

    #[test]
    fn handles_none_values_and_a_reference_line() {
        let mut chart = sample();
        chart.groups[0].values = vec![None, Some(10.0), None];
        chart.groups[1].values = vec![None, None, None];
        chart.reference_line = Some((3350.0, "copy bandwidth".into()));
        let (w, h, pixels) = decode(&chart.render_png(640, 400).expect("render"));
        assert_eq!((w, h), (640, 400));
        assert!(count_color(&pixels, REFERENCE) > 100);
        // Series 0 has no bar: only its legend swatch (16x16) shows its colour.
        assert_eq!(count_color(&pixels, PALETTE[0]), 256);
        // All values None, no reference line: still a valid (empty) chart.
        chart.reference_line = None;
        chart.groups[0].values = vec![None, None, None];
        assert!(chart.render_png(640, 400).is_ok());
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let mut chart = sample();
        chart.groups[0].values[0] = Some(-5.0); // clamps to 0
        chart.groups[1].values[1] = Some(1e-9);
        chart.title = "é∑ unicode ".repeat(40);
        chart.y_label = "y".repeat(500);
        chart.series = (0..3).map(|i| format!("series {i} ").repeat(20)).collect();
        for (w, h) in [
            (1, 1),
            (10, 10),
            (64, 48),
            (120, 90),
            (300, 200),
            (2000, 200),
        ] {
            let _ = chart.render_png(w, h);
        }
        assert!(chart.render_png(1200, 700).is_ok());
        let mut many = example();
        many.groups = (0..16)
            .map(|i| BarGroup {
                label: format!("group number {i} with a long label"),
                values: vec![Some(1e6 * i as f64), None, Some(3.0)],
            })
            .collect();
        assert!(many.render_png(1024, 576).is_ok());
        many.series = (0..6).map(|i| format!("s{i}")).collect();
        for g in &mut many.groups {
            g.values = vec![Some(0.0); 6];
        }
        assert!(many.render_png(1024, 576).is_ok());
        let mut huge = sample();
        huge.groups[0].values[0] = Some(f64::MAX);
        huge.reference_line = Some((f64::MAX, "max".into()));
        assert!(huge.render_png(800, 450).is_ok());
    }

    #[test]
    fn nice_scale_has_four_to_six_ticks() {
        for m in [
            0.0, 1e-7, 0.003, 0.3, 0.99, 1.0, 1.01, 3.0, 7.5, 9.99, 10.0, 41.0, 99.0, 123.0,
            2999.0, 3350.0, 12345.0, 1e9, 7.3e12,
        ] {
            let s = NiceScale::new(m);
            assert!((3..=5).contains(&s.ticks), "{m}: {s:?}");
            assert!(s.max >= m, "{m}: {s:?}");
            assert!(s.max <= 2.6 * m.max(1e-300) || m == 0.0, "{m}: {s:?}");
        }
        let s = NiceScale::new(3350.0);
        let labels: Vec<String> = (0..=s.ticks).map(|i| s.label(i as f64 * s.step)).collect();
        assert_eq!(labels, ["0", "1000", "2000", "3000", "4000"]);
        let s = NiceScale::new(0.9);
        assert_eq!(s.label(s.step), "0.2");
        let s = NiceScale::new(11.0);
        assert_eq!(s.label(s.step), "2.5");
        let s = NiceScale::new(42_000.0);
        assert_eq!(s.label(s.max), "50k");
    }

    #[test]
    fn value_labels_are_short() {
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(1.0), "1");
        assert_eq!(fmt_value(1.234), "1.23");
        assert_eq!(fmt_value(12.34), "12.3");
        assert_eq!(fmt_value(2870.6), "2871");
        assert_eq!(fmt_value(12345.0), "12.3k");
        assert_eq!(fmt_value(0.01234), "0.0123");
        assert_eq!(fmt_value(2.5e6), "2.5M");
    }

    #[test]
    fn labels_wrap_and_truncate() {
        let (lines, fit) = wrap_label("scal_inplace_complex128", 10, 3);
        assert!(lines.iter().all(|l| l.chars().count() <= 10), "{lines:?}");
        assert!(fit, "{lines:?}");
        assert_eq!(lines.concat(), "scal_inplace_complex128");
        let (lines, fit) = wrap_label("a very long label that cannot fit at all", 6, 2);
        assert!(!fit);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].ends_with(".."));
        assert!(lines.iter().all(|l| l.chars().count() <= 6), "{lines:?}");
        assert_eq!(
            wrap_label("axpy f32", 10, 2),
            (vec!["axpy f32".into()], true)
        );
        assert_eq!(
            wrap_label("axpy f32", 5, 2),
            (vec!["axpy".into(), "f32".into()], true)
        );
        assert_eq!(wrap_label("", 5, 2), (vec![], true));
    }

    /// A restarted-GMRES-like history: `n` iterations from 1 at about `rate` per
    /// iteration, slower just after each restart, with a little deterministic wobble.
    fn history(n: usize, rate: f64, restart: usize) -> Vec<(f64, f64)> {
        let mut r = 1.0;
        (0..=n)
            .map(|k| {
                if k > 0 {
                    let slow = if k % restart < 3 { 0.97 } else { rate };
                    r *= (slow * (1.0 + 0.05 * (k as f64 * 1.7).sin())).min(1.0);
                }
                (k as f64, r)
            })
            .collect()
    }

    fn line_example() -> LineChart {
        let cupy: Vec<(f64, f64)> = history(250, 0.922, 30).into_iter().step_by(10).collect();
        LineChart {
            title: "GMRES(30) convergence, poisson2d n = 2^20".into(),
            x_label: "iteration".into(),
            y_label: "relative residual".into(),
            log_y: true,
            series: vec![
                LineSeries {
                    name: "GPU CGS2".into(),
                    points: history(260, 0.925, 30),
                },
                LineSeries {
                    name: "GPU MGS".into(),
                    points: history(275, 0.928, 30),
                },
                LineSeries {
                    name: "CPU".into(),
                    points: history(300, 0.935, 30),
                },
                LineSeries {
                    name: "CuPy".into(),
                    points: cupy,
                },
            ],
            reference_line: Some((1e-8, "tolerance 1e-8".into())),
        }
    }

    fn one_line(points: Vec<(f64, f64)>) -> LineChart {
        LineChart {
            title: "t".into(),
            series: vec![LineSeries {
                name: "s".into(),
                points,
            }],
            log_y: true,
            ..LineChart::default()
        }
    }

    #[test]
    fn line_chart_renders_a_valid_png() {
        let chart = line_example();
        let (w, h, pixels) = decode(&chart.render_png(800, 450).expect("render"));
        assert_eq!((w, h), (800, 450));
        assert_eq!(pixels.len(), 800 * 450 * 3);
        for color in &PALETTE[..4] {
            assert!(count_color(&pixels, *color) > 300, "colour {color:?}");
        }
        assert!(count_color(&pixels, REFERENCE) > 200);
        for (w, h) in [(1024, 576), (1920, 1080), (640, 400), (300, 200), (1, 1)] {
            if let Ok(png_bytes) = chart.render_png(w, h) {
                let (dw, dh, _) = decode(&png_bytes);
                assert_eq!((dw, dh), (w, h));
            }
        }
        assert!(chart.render_png(300, 200).is_ok());
        let linear = LineChart {
            log_y: false,
            ..line_example()
        };
        assert!(linear.render_png(800, 450).is_ok());
    }

    #[test]
    fn line_chart_errors_on_empty_or_bad_input() {
        let is_plot_error =
            |r: Result<Vec<u8>>| matches!(r, Err(Error::InvalidArgument { op: "plot", .. }));
        let mut none = line_example();
        none.series.clear();
        assert!(is_plot_error(none.render_png(800, 450)));
        let mut all_empty = line_example();
        for s in &mut all_empty.series {
            s.points.clear();
        }
        assert!(is_plot_error(all_empty.render_png(800, 450)));
        // One empty series among others is fine.
        let mut one_empty = line_example();
        one_empty.series[1].points.clear();
        assert!(one_empty.render_png(800, 450).is_ok());
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut c = line_example();
            c.series[2].points[7].0 = bad;
            assert!(is_plot_error(c.render_png(800, 450)), "x {bad}");
            let mut c = line_example();
            c.series[2].points[7].1 = bad;
            let err = c.render_png(800, 450).unwrap_err().to_string();
            assert!(err.contains("point 7") && err.contains("\"CPU\""), "{err}");
            let mut c = line_example();
            c.reference_line = Some((bad, "ref".into()));
            assert!(is_plot_error(c.render_png(800, 450)), "reference {bad}");
        }
        // Zero or negative values on a log axis are errors; on a linear one, fine.
        for bad in [0.0, -1e-3] {
            let mut c = line_example();
            c.series[0].points[3].1 = bad;
            let err = c.render_png(800, 450).unwrap_err().to_string();
            assert!(err.contains("log"), "{err}");
            c.log_y = false;
            assert!(c.render_png(800, 450).is_ok());
            let mut c = line_example();
            c.reference_line = Some((bad, "ref".into()));
            assert!(is_plot_error(c.render_png(800, 450)), "reference {bad}");
        }
        assert!(is_plot_error(line_example().render_png(0, 450)));
        assert!(is_plot_error(line_example().render_png(800, 0)));
        assert!(is_plot_error(line_example().render_png(800, MAX_SIDE + 1)));
        assert!(is_plot_error(line_example().render_png(20, 20)));
    }

    #[test]
    fn log_ticks_cover_the_data() {
        let labels = |s: LogScale| s.exponents().map(log_label).collect::<Vec<_>>();
        let s = LogScale::covering(3e-9, 1.0, 12);
        assert_eq!(
            s,
            LogScale {
                lo: -9,
                hi: 0,
                stride: 1
            }
        );
        assert_eq!(
            labels(s),
            [
                "1e-9", "1e-8", "1e-7", "1e-6", "1e-5", "1e-4", "1e-3", "1e-2", "0.1", "1"
            ]
        );
        let s = LogScale::covering(0.5, 2.0, 12);
        assert_eq!(
            s,
            LogScale {
                lo: -1,
                hi: 1,
                stride: 1
            }
        );
        assert_eq!(labels(s), ["0.1", "1", "10"]);
        // Exact powers of ten stay on their ticks.
        assert_eq!(
            LogScale::covering(1e-9, 1.0, 12),
            LogScale {
                lo: -9,
                hi: 0,
                stride: 1
            }
        );
        assert_eq!(
            LogScale::covering(1e-3, 1e3, 12),
            LogScale {
                lo: -3,
                hi: 3,
                stride: 1
            }
        );
        // A range within one decade spans it; a single power of ten the one above.
        assert_eq!(
            LogScale::covering(2.0, 3.0, 12),
            LogScale {
                lo: 0,
                hi: 1,
                stride: 1
            }
        );
        assert_eq!(
            LogScale::covering(1.0, 1.0, 12),
            LogScale {
                lo: 0,
                hi: 1,
                stride: 1
            }
        );
        // Fewer ticks allowed: every second power, still covering the data.
        let s = LogScale::covering(3e-9, 1.0, 6);
        assert_eq!(
            s,
            LogScale {
                lo: -10,
                hi: 0,
                stride: 2
            }
        );
        assert_eq!(labels(s), ["1e-10", "1e-8", "1e-6", "1e-4", "1e-2", "1"]);
        for (lo, hi, max) in [(5e-324, f64::MAX, 10), (1e-300, 1e300, 3), (1e-16, 1.0, 2)] {
            let s = LogScale::covering(lo, hi, max);
            assert!(s.exponents().count() <= max, "{lo} {hi} {max}: {s:?}");
            assert!(
                s.frac(lo.log10()) >= 0.0 && s.frac(hi.log10()) <= 1.0,
                "{s:?}"
            );
        }
    }

    #[test]
    fn linear_line_axes_are_nice() {
        let labels = |s: NiceScale| {
            (0..=s.ticks)
                .map(|i| s.label(s.tick(i)))
                .collect::<Vec<_>>()
        };
        // Iterations 1..=287 start at 0.
        let s = NiceScale::covering(1.0, 287.0, 8);
        assert_eq!(labels(s), ["0", "50", "100", "150", "200", "250", "300"]);
        assert_eq!(
            labels(NiceScale::covering(0.0, 1.0, 5)),
            ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]
        );
        // Data far from 0, or on both sides of it.
        assert_eq!(
            labels(NiceScale::covering(1000.0, 1010.0, 5)),
            ["1000", "1002", "1004", "1006", "1008", "1010"]
        );
        assert_eq!(
            labels(NiceScale::covering(-0.3, 0.7, 5)),
            ["-0.50", "-0.25", "0", "0.25", "0.50", "0.75"]
        );
        // A single value: from 0 to it (or 0..1 for 0).
        assert_eq!(
            labels(NiceScale::covering(5.0, 5.0, 5)),
            ["0", "1", "2", "3", "4", "5"]
        );
        assert_eq!(
            labels(NiceScale::covering(0.0, 0.0, 5)),
            ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]
        );
        assert_eq!(
            labels(NiceScale::covering(-8.0, -2.0, 5)),
            ["-8", "-6", "-4", "-2", "0"]
        );
        for (lo, hi, max) in [
            (-3.0, 7.0, 5),
            (0.1, 0.13, 4),
            (-f64::MAX, f64::MAX, 5),
            (1e-320, 2e-320, 5),
            (123456.0, 123457.0, 8),
        ] {
            let s = NiceScale::covering(lo, hi, max);
            assert!(s.ticks >= 1 && s.ticks <= max, "{lo} {hi}: {s:?}");
            assert!(
                s.frac(lo) >= -1e-9 && s.frac(hi) <= 1.0 + 1e-9,
                "{lo} {hi}: {s:?}"
            );
        }
    }

    /// Rows of column `x` (below the legend) that have `color`.
    fn rows_with(pixels: &[u8], width: u32, x: u32, color: Rgb) -> Vec<u32> {
        (60..pixels.len() as u32 / 3 / width)
            .filter(|&y| {
                let i = ((y * width + x) * 3) as usize;
                pixels[i..i + 3] == color
            })
            .collect()
    }

    #[test]
    fn line_pixels_lie_between_the_points() {
        // A horizontal line: the same two rows in every column between the points.
        let chart = one_line(vec![(0.0, 0.5), (100.0, 0.5)]);
        let (w, _, pixels) = decode(&chart.render_png(800, 450).expect("render"));
        let rows = rows_with(&pixels, w, 400, PALETTE[0]);
        assert_eq!(rows.len(), LINE_WIDTH as usize, "{rows:?}");
        assert_eq!(rows[1], rows[0] + 1);
        for x in [200, 300, 500, 600, 700] {
            assert_eq!(rows_with(&pixels, w, x, PALETTE[0]), rows, "column {x}");
        }
        // log10(0.5) is 70% of the way up the axis from 0.1 (the x axis) to 1 (a grid
        // line), in a column off the vertical grid lines.
        let x = (300..500)
            .find(|&x| rows_with(&pixels, w, x, GRID).len() == 1)
            .expect("a column without a vertical grid line");
        let top = rows_with(&pixels, w, x, GRID)[0] as f64;
        let bottom = rows_with(&pixels, w, x, AXIS)[0] as f64;
        let expected = bottom - (0.5f64.log10() + 1.0) * (bottom - top);
        let centre = rows[1] as f64; // the pen covers the row above its centre too
        assert!((centre - expected).abs() <= 1.0, "{rows:?}: {top} {bottom}");
        // A falling line crosses the middle column once, two pixels thick or more.
        let chart = one_line(vec![(0.0, 1.0), (10.0, 1e-8)]);
        let (w, _, pixels) = decode(&chart.render_png(800, 450).expect("render"));
        let rows = rows_with(&pixels, w, 400, PALETTE[0]);
        assert!(rows.len() >= 2, "{rows:?}");
        assert!(rows.windows(2).all(|p| p[1] == p[0] + 1), "{rows:?}");
        // In the lower half of the plot: the line falls from 1 towards 1e-8 but the
        // middle column is at 1e-4 and the axis spans 1e-8..1.
        assert!(rows[0] > 150 && rows[0] < 350, "{rows:?}");
    }

    #[test]
    fn line_chart_output_is_deterministic() {
        let a = line_example().render_png(1024, 576).expect("render");
        let b = line_example().render_png(1024, 576).expect("render");
        assert_eq!(a, b);
        let mut moved = line_example();
        moved.series[0].points[100].1 *= 10.0;
        assert_ne!(a, moved.render_png(1024, 576).expect("render"));
    }

    #[test]
    fn line_chart_odd_inputs_do_not_panic() {
        let mut chart = line_example();
        chart.title = "é∑ unicode ".repeat(40);
        chart.x_label = "x".repeat(500);
        chart.y_label = "y".repeat(500);
        chart.series[0].name = "series ".repeat(40);
        for (w, h) in [
            (1, 1),
            (10, 10),
            (64, 48),
            (120, 90),
            (300, 200),
            (2000, 200),
        ] {
            let _ = chart.render_png(w, h);
        }
        assert!(chart.render_png(1200, 700).is_ok());
        let cases = [
            vec![(3.0, 1e-3)],
            vec![(0.0, 1e-300), (1.0, 1e300)],
            vec![(5.0, 5e-324), (5.0, f64::MAX)],
            vec![(-f64::MAX, 1.0), (f64::MAX, 2.0)],
            vec![(1e9, 1.0), (1e9 + 1.0, 0.9)],
            (0..5000)
                .map(|i| (i as f64, 1.0 / (1.0 + i as f64)))
                .collect(),
        ];
        for points in cases {
            let mut c = one_line(points.clone());
            c.reference_line = Some((1e-8, "tolerance".into()));
            assert!(c.render_png(800, 450).is_ok(), "{:?}", &points[..1]);
            c.log_y = false;
            c.reference_line = Some((-1e300, "low".into()));
            assert!(c.render_png(800, 450).is_ok(), "{:?}", &points[..1]);
        }
        let many = LineChart {
            series: (0..12)
                .map(|i| LineSeries {
                    name: format!("series {i}"),
                    points: history(50 + 20 * i, 0.9, 20),
                })
                .collect(),
            ..line_example()
        };
        assert!(many.render_png(1024, 576).is_ok());
    }

    #[test]
    fn line_chart_writes_a_file() {
        // FERROCUDA_LINE_PLOT_EXAMPLE=/tmp/linechart.png keeps an example to look at.
        let keep = std::env::var_os("FERROCUDA_LINE_PLOT_EXAMPLE");
        let path = keep
            .clone()
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("ferrocuda_line_{}.png", std::process::id()))
            });
        line_example().write_png(&path, 1024, 576).expect("write");
        let bytes = std::fs::read(&path).expect("read back");
        let (w, h, _) = decode(&bytes);
        assert_eq!((w, h), (1024, 576));
        if keep.is_none() {
            let _ = std::fs::remove_file(&path);
        }
        let err = line_example()
            .write_png(Path::new("/proc/ferrocuda/nope/x.png"), 100, 100)
            .unwrap_err();
        assert!(err.to_string().contains("plot"), "{err}");
    }

    #[test]
    fn writes_a_file() {
        // FERROCUDA_PLOT_EXAMPLE=/tmp/example_chart.png keeps an example to look at.
        let keep = std::env::var_os("FERROCUDA_PLOT_EXAMPLE");
        let path = keep
            .clone()
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("ferrocuda_plot_{}.png", std::process::id()))
            });
        example().write_png(&path, 1024, 576).expect("write");
        let bytes = std::fs::read(&path).expect("read back");
        assert_eq!(decode(&bytes).0, 1024);
        if keep.is_none() {
            let _ = std::fs::remove_file(&path);
        }
        let err = example()
            .write_png(Path::new("/proc/ferrocuda/nope/x.png"), 100, 100)
            .unwrap_err();
        assert!(err.to_string().contains("plot"), "{err}");
    }
}
