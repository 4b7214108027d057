//! Splitting one PTX file into smaller ones by kernel entry (the domain modules).
//!
//! The kernel crate is compiled once per PTX module (fat LTO, one `.s` file); this cuts
//! that text at its top-level items: the header (`.version`, `.target`,
//! `.address_size`), variables (`.global`, `.const`, `.shared`, `.extern .shared`),
//! functions (`.func`, declarations and definitions) and kernel entries (`.entry`). A
//! part keeps the header, the entries it is asked for, and every function and variable
//! that these reach, transitively (a name used in a kept item keeps the item of that
//! name), in their original order, so each part is complete PTX on its own.
//!
//! Used by `build.rs` and, through `#[path]`, by the tests, which check the parts. Only
//! `std`; anything it does not understand is an error, never silently dropped.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

/// What a top-level item of PTX is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `.version`, `.target` or `.address_size`.
    Header,
    /// A kernel entry point (`.entry`).
    Entry,
    /// A device function, declared or defined (`.func`).
    Func,
    /// A variable in global, constant or shared memory.
    Var,
}

/// One top-level item: its kind, its name (empty for the header) and its text (with
/// the comment lines before it).
#[derive(Debug, Clone)]
pub struct Item<'a> {
    pub kind: Kind,
    pub name: &'a str,
    pub text: &'a str,
}

/// The text of `line` before a `//` comment.
fn code(line: &str) -> &str {
    line.split_once("//").map_or(line, |(c, _)| c)
}

/// The first line of `text` with code, without its comment, trimmed.
fn first_code_line(text: &str) -> &str {
    text.lines()
        .map(|l| code(l).trim())
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// Whether `c` may appear in a PTX identifier.
fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The identifier at the start of `s` (after blanks).
fn leading_ident(s: &str) -> &str {
    let s = s.trim_start();
    let end = s.find(|c: char| !ident_char(c)).unwrap_or(s.len());
    &s[..end]
}

/// Every identifier in `text` (comments removed) that is not a register (`%r1`) or a
/// directive/type (`.u64`).
pub fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.lines().flat_map(|line| {
        let line = code(line);
        let mut out = Vec::new();
        // (start of the current identifier, whether it follows `%` or `.`)
        let mut current: Option<(usize, bool)> = None;
        let mut prev = ' ';
        for (i, c) in line.char_indices() {
            match (current, ident_char(c)) {
                (None, true) => current = Some((i, prev == '%' || prev == '.')),
                (Some((s, skip)), false) => {
                    if !skip {
                        out.push(&line[s..i]);
                    }
                    current = None;
                }
                _ => {}
            }
            prev = c;
        }
        if let Some((s, false)) = current {
            out.push(&line[s..]);
        }
        out.into_iter()
    })
}

/// The name declared by the first code line(s) of an item of `kind`.
fn item_name(kind: Kind, text: &str) -> Result<&str, String> {
    let first = first_code_line(text);
    let name = match kind {
        Kind::Header => "",
        Kind::Entry => {
            let at = first.find(".entry").map_or(0, |i| i + ".entry".len());
            leading_ident(&first[at..])
        }
        Kind::Func => {
            // After `.func`, an optional return-parameter group `( ... )`, then the name;
            // the group may span lines, so look at the code of the whole item.
            let body: String = text.lines().map(code).collect::<Vec<_>>().join("\n");
            let at = body.find(".func").map_or(0, |i| i + ".func".len());
            let mut rest = body[at..].trim_start();
            if rest.starts_with('(') {
                let close = rest
                    .find(')')
                    .ok_or_else(|| format!("unclosed return parameter: {first}"))?;
                rest = &rest[close + 1..];
            }
            let n = leading_ident(rest);
            // Borrow from `text`, not the joined copy.
            return text
                .find(n)
                .filter(|_| !n.is_empty())
                .map(|i| &text[i..i + n.len()])
                .ok_or_else(|| format!("a .func without a name: {first}"));
        }
        Kind::Var => first
            .split_whitespace()
            .find(|t| !t.starts_with('.') && !t.starts_with(|c: char| c.is_ascii_digit()))
            .map_or("", |t| {
                let end = t.find(|c: char| !ident_char(c)).unwrap_or(t.len());
                &t[..end]
            }),
    };
    if kind != Kind::Header && name.is_empty() {
        return Err(format!("a top-level PTX item without a name: {first}"));
    }
    Ok(name)
}

/// The kind of an item whose first code line is `line`, or `None` for an unknown one.
fn kind_of(line: &str) -> Option<Kind> {
    let t = line.trim_start();
    if [".version", ".target", ".address_size"]
        .iter()
        .any(|d| t.starts_with(d))
    {
        return Some(Kind::Header);
    }
    let words: Vec<&str> = t.split_whitespace().take(3).collect();
    let mut w = words
        .iter()
        .copied()
        .skip_while(|w| matches!(*w, ".visible" | ".weak" | ".extern" | ".common"));
    match w.next()? {
        s if s == ".entry" || s.starts_with(".entry") => Some(Kind::Entry),
        s if s == ".func" || s.starts_with(".func") => Some(Kind::Func),
        ".global" | ".const" | ".shared" => Some(Kind::Var),
        _ => None,
    }
}

/// Cuts `ptx` into its top-level items, in order. Errors: unbalanced braces, text
/// after the last item, a top-level directive this does not know.
pub fn parse(ptx: &str) -> Result<Vec<Item<'_>>, String> {
    let mut items = Vec::new();
    let mut depth: i64 = 0;
    // Byte offset where the current item (its leading comments included) starts.
    let mut start: Option<usize> = None;
    let mut kind: Option<Kind> = None;
    let mut offset = 0;
    for (no, line) in ptx.split_inclusive('\n').enumerate() {
        let line_start = offset;
        offset += line.len();
        let c = code(line).trim();
        if kind.is_none() {
            if c.is_empty() {
                // A blank or comment line between items: part of the next item.
                if start.is_none() && !line.trim().is_empty() {
                    start = Some(line_start);
                }
                continue;
            }
            start.get_or_insert(line_start);
            kind =
                Some(kind_of(c).ok_or_else(|| {
                    format!("line {}: unknown top-level PTX directive: {c}", no + 1)
                })?);
        }
        for ch in c.chars() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
        }
        if depth < 0 {
            return Err(format!("line {}: unbalanced '}}'", no + 1));
        }
        let ends =
            depth == 0 && (c.ends_with(';') || c.ends_with('}') || kind == Some(Kind::Header));
        if ends {
            let k = kind.take().expect("an item is open");
            let text = &ptx[start.take().expect("an item is open")..offset];
            items.push(Item {
                kind: k,
                name: item_name(k, text)?,
                text,
            });
        }
    }
    if let Some(k) = kind {
        return Err(format!(
            "the PTX ends inside a {k:?} item (unbalanced braces or a missing ';')"
        ));
    }
    Ok(items)
}

/// The entry names of `ptx`, in order.
pub fn entry_names(ptx: &str) -> Result<Vec<&str>, String> {
    Ok(parse(ptx)?
        .into_iter()
        .filter(|i| i.kind == Kind::Entry)
        .map(|i| i.name)
        .collect())
}

/// The PTX of the entries `keep` picks, with the header and every function and variable
/// they reach. Errors: as [`parse`], or no header.
pub fn extract(ptx: &str, keep: impl Fn(&str) -> bool) -> Result<String, String> {
    let items = parse(ptx)?;
    // Functions and variables by name (a function may be declared, then defined).
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        if matches!(item.kind, Kind::Func | Kind::Var) {
            by_name.entry(item.name).or_default().push(i);
        }
    }
    let mut kept = vec![false; items.len()];
    let mut work: Vec<usize> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.kind {
            Kind::Header => kept[i] = true,
            Kind::Entry if keep(item.name) => {
                kept[i] = true;
                work.push(i);
            }
            _ => {}
        }
    }
    if !items.iter().any(|i| i.kind == Kind::Header) {
        return Err("the PTX has no .version/.target/.address_size header".into());
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    while let Some(i) = work.pop() {
        for name in identifiers(items[i].text) {
            if name != items[i].name
                && seen.insert(name)
                && let Some(found) = by_name.get(name)
            {
                for &j in found {
                    if !kept[j] {
                        kept[j] = true;
                        work.push(j);
                    }
                }
            }
        }
    }
    let mut out = String::with_capacity(ptx.len() / 4);
    for (item, _) in items.iter().zip(&kept).filter(|(_, k)| **k) {
        out.push_str(item.text);
        if !item.text.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// Checks that `ptx` stands on its own: it parses (balanced braces, known directives),
/// has exactly one `.version`, `.target` and `.address_size`, at least one entry, and
/// defines every function it calls and every name of `known` (functions and variables
/// of the PTX it was cut from) that it uses.
pub fn check_complete(ptx: &str, known: &BTreeSet<&str>) -> Result<(), String> {
    let items = parse(ptx)?;
    for d in [".version", ".target", ".address_size"] {
        let n = items
            .iter()
            .filter(|i| i.kind == Kind::Header && first_code_line(i.text).starts_with(d))
            .count();
        if n != 1 {
            return Err(format!("{n} {d} lines"));
        }
    }
    if !items.iter().any(|i| i.kind == Kind::Entry) {
        return Err("no entry".into());
    }
    let defined: BTreeSet<&str> = items.iter().map(|i| i.name).collect();
    for item in &items {
        for line in item.text.lines().map(code) {
            // `call.uni (retval0), f, (param0);`, maybe under a predicate (`@%p1 call`).
            let mut inst = line.trim_start();
            if inst.starts_with('@') {
                inst = inst
                    .split_once(char::is_whitespace)
                    .map_or("", |(_, r)| r)
                    .trim_start();
            }
            if inst.starts_with("call") {
                let rest = inst.trim_start_matches(|c: char| c != ' ' && c != '\t');
                let mut rest = rest.trim_start();
                if rest.starts_with('(') {
                    rest = rest[rest.find(')').map_or(0, |i| i + 1)..]
                        .trim_start()
                        .trim_start_matches(',');
                }
                let callee = leading_ident(rest);
                if !callee.is_empty() && !defined.contains(callee) {
                    return Err(format!("{} calls {callee}, which is not here", item.name));
                }
            }
        }
        for name in identifiers(item.text) {
            if known.contains(name) && !defined.contains(name) {
                return Err(format!("{} uses {name}, which is not here", item.name));
            }
        }
    }
    Ok(())
}
