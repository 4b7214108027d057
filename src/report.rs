//! Plain-text rendering shared by the library's reports (their `to_text` and summaries).
//! Markdown tables and charts are the applications' business (`ferrocuda-bench`).

/// Renders rows as an aligned plain-text table (first column left, others right).
///
/// ```
/// let t = ferrocuda::report::table(&["n", "ms"], &[vec!["1024".into(), "0.5".into()]]);
/// assert_eq!(t, "n      ms\n----  ---\n1024  0.5");
/// ```
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = line(headers.to_vec());
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    for row in rows {
        out.push('\n');
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}
