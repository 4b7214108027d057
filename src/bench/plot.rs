//! A small, dependency-light PNG bar-chart renderer for the benchmark reports
//! (`docs/results/*.png`).
//!
//! A [`BarChart`] draws grouped vertical bars: one bar per series in every group, one
//! colour per series (a fixed colour-blind-friendly palette, Okabe & Ito), a legend, a
//! y axis from 0 to a rounded maximum with 4 to 6 labelled ticks and light grid lines,
//! the group labels under the x axis (wrapped, then truncated when too long), the title
//! on top, value labels above the bars where they fit, and an optional dashed
//! horizontal reference line with its label (for instance "copy bandwidth").
//!
//! Text comes from the public-domain 8x8 bitmap font of the `font8x8` crate, drawn at
//! twice its size where the image leaves room; pixels are encoded with the pure-Rust
//! `png` crate. No system font, no C library and no GPU is involved, so charts render
//! the same everywhere.
//!
//! ```no_run
//! use ferrocuda::bench::plot::{BarChart, BarGroup};
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

use crate::error::{Error, Result};

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

/// Largest accepted width or height, in pixels.
const MAX_SIDE: u32 = 8192;
/// Most lines a group label wraps into.
const MAX_LABEL_LINES: usize = 3;

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
        let png = self.render_png(width, height)?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                invalid(format!("cannot create directory {}: {e}", parent.display()))
            })?;
        }
        std::fs::write(path, png)
            .map_err(|e| invalid(format!("cannot write {}: {e}", path.display())))
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
        let (values, reference) = self.validated()?;
        let (w, h) = (width as i32, height as i32);

        // Text scale: 2x (16-pixel glyphs) where the image has room for it.
        let big = if w >= 480 && h >= 320 { 2 } else { 1 };
        let pad = 6 + 4 * big;
        let gap = 4 + 2 * big;

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
        let tick_w = tick_labels
            .iter()
            .map(|l| text_width(l, big))
            .max()
            .unwrap_or(0);
        let y_label_w = if self.y_label.trim().is_empty() {
            0
        } else {
            8 * big + gap
        };
        let plot_left = pad + y_label_w + tick_w + 4 + gap;
        let plot_right = w - pad - big;
        let plot_w = plot_right - plot_left;
        if plot_w < 16 {
            return Err(invalid(format!(
                "image size {width}x{height} is too narrow for the chart"
            )));
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
        let mut y = pad;
        let title_scale = if text_width(&self.title, big) <= w - 2 * pad {
            big
        } else {
            1
        };
        let title = truncate(&self.title, ((w - 2 * pad) / 8).max(0) as usize);
        let title_y = y;
        if !title.is_empty() {
            y += 8 * title_scale + gap + big;
        }
        // A legend at 2x that needs more than two rows (or a quarter of the height)
        // is drawn at 1x.
        let mut legend = layout_legend(&self.series, big, w - 2 * pad, 4 * gap);
        if big == 2 && (legend.rows > 2 || legend.rows * legend.row_h > h / 4) {
            legend = layout_legend(&self.series, 1, w - 2 * pad, 4 * gap);
        }
        let legend_y = y;
        y += legend.rows * legend.row_h + gap;
        let plot_top = y + 8 * value_scale + 4;
        let plot_h = plot_bottom - plot_top;
        if plot_h < 16 {
            return Err(invalid(format!(
                "image size {width}x{height} is too short for the chart"
            )));
        }
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
        for (i, label) in tick_labels.iter().enumerate() {
            let ty = y_of(i as f64 * scale.step);
            if i > 0 {
                c.fill_rect(plot_left + 1, ty, plot_w, 1, GRID);
            }
            c.fill_rect(plot_left - 4, ty, 4, 1, AXIS);
            let lw = text_width(label, big);
            c.text(plot_left - 4 - gap - lw, ty - 4 * big, label, big, TEXT);
        }

        // Y label, vertical, centred on the plot area.
        if y_label_w > 0 {
            let s = if text_width(&self.y_label, big) <= plot_h {
                big
            } else {
                1
            };
            let label = truncate(&self.y_label, (plot_h / (8 * s)).max(0) as usize);
            let len = text_width(&label, s);
            c.text_vertical(pad, plot_top + (plot_h - len) / 2, &label, s, TEXT);
        }

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

        // Axes.
        c.fill_rect(plot_left, plot_top, 1, plot_h + 1, AXIS);
        c.fill_rect(plot_left, plot_bottom, plot_w + 1, 1, AXIS);

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
            let thick = big;
            let (dash, space) = (6 * big, 4 * big);
            let mut x = plot_left + 1;
            while x <= plot_right {
                c.fill_rect(
                    x,
                    ry - thick / 2,
                    dash.min(plot_right + 1 - x),
                    thick,
                    REFERENCE,
                );
                x += dash + space;
            }
            let s = if text_width(label, big) <= plot_w - 8 {
                big
            } else {
                1
            };
            let label = truncate(label, ((plot_w - 8) / (8 * s)).max(0) as usize);
            if !label.is_empty() {
                let lw = text_width(&label, s);
                let lx = plot_right - 4 - lw;
                let mut ly = ry - thick / 2 - 8 * s - 4;
                if ly < plot_top - 8 * value_scale {
                    ly = ry + thick + 3;
                }
                c.fill_rect(lx - 3, ly - 2, lw + 6, 8 * s + 4, BACKGROUND);
                c.text(lx, ly, &label, s, REFERENCE);
            }
        }

        // Title and legend last, on top of everything.
        if !title.is_empty() {
            let tw = text_width(&title, title_scale);
            c.text((w - tw) / 2, title_y, &title, title_scale, TEXT);
        }
        legend.draw(&mut c, w, legend_y);

        Ok(c)
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

/// Y range from 0 to `max = ticks * step`, with a 1, 2, 2.5 or 5 times a power of ten
/// `step` and 3 to 5 steps (4 to 6 labelled ticks, 0 included).
#[derive(Debug, Clone, Copy)]
struct NiceScale {
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
            step,
            ticks,
            max,
            unit,
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
        if v == 0.0 {
            return "0".into();
        }
        if self.max >= 1e13 {
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

/// Legend entries (swatch + name) placed in centred rows.
struct Legend {
    /// Per row: entries as (series index, x offset from the row start, name), and the
    /// row width.
    row_items: Vec<(LegendRow, i32)>,
    rows: i32,
    row_h: i32,
    scale: i32,
}

/// Lays the legend out in rows at most `avail` pixels wide, `spacing` pixels between
/// entries.
fn layout_legend(series: &[String], scale: i32, avail: i32, spacing: i32) -> Legend {
    let swatch = 8 * scale;
    let gap = legend_text_offset(scale) - swatch;
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
    }
}

/// Distance from a legend swatch's left edge to its name.
fn legend_text_offset(scale: i32) -> i32 {
    12 * scale + 2
}

impl Legend {
    fn draw(&self, c: &mut Canvas, width: i32, top: i32) {
        let swatch = 8 * self.scale;
        let text_x = legend_text_offset(self.scale);
        for (r, (items, row_w)) in self.row_items.iter().enumerate() {
            let x0 = (width - row_w) / 2;
            let y = top + r as i32 * self.row_h;
            for (i, dx, name) in items {
                c.fill_rect(x0 + dx, y, swatch, swatch, PALETTE[i % 8]);
                c.text(x0 + dx + text_x, y, name, self.scale, TEXT);
            }
        }
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
