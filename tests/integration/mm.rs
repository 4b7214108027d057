//! The Matrix Market reader on hostile input: endless and binary streams, sizes that
//! overflow or exceed memory, wrong entry counts, symmetric files that list both
//! triangles, one pass over a stream; and a property test (random and mutated files never
//! panic, valid random matrices round-trip).

use crate::common;

use std::io::{BufReader, Read};

use common::{out_of_host_memory, random_coo};
use ferrocuda::Complex;
use ferrocuda::sparse::mm::{self, MmFormat, MmMatrix, MmObject};
use ferrocuda::sparse::{Coo, Csr, SparseError};
use proptest::prelude::*;

const COORD: &str = "%%MatrixMarket matrix coordinate real general\n";

/// The line and reason of a parse error of `read` (whatever the file holds).
fn parse_err(text: &[u8]) -> (usize, String) {
    match mm::read(text) {
        Err(SparseError::Parse { line, reason }) => (line, reason),
        other => panic!("expected a parse error for {text:?}, got {other:?}"),
    }
}

/// An endless stream of one byte, read through a buffer: `/dev/zero` and friends.
fn endless(byte: u8) -> BufReader<std::io::Repeat> {
    BufReader::new(std::io::repeat(byte))
}

#[test]
fn endless_and_binary_streams_stop_at_their_line() {
    // /dev/zero: NUL bytes on line 1, refused after at most one bounded line.
    match mm::read(endless(0)) {
        Err(SparseError::Parse { line: 1, reason }) => {
            assert!(
                reason.contains("0x00") && reason.contains("binary"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    // One endless text line: the bound is named.
    match mm::read_coo::<f64, _>(endless(b'a')) {
        Err(SparseError::Parse { line: 1, reason }) => {
            assert!(reason.contains(&mm::MAX_LINE_BYTES.to_string()), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // ... also after a valid start (a comment that never ends).
    let start = format!("{COORD}% a comment ").into_bytes();
    let stream = BufReader::new(start.as_slice().chain(std::io::repeat(b'x')));
    match mm::read(stream) {
        Err(SparseError::Parse { line: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
    // Binary garbage in an entry line, invalid UTF-8, a gzip file.
    let (line, why) = parse_err(format!("{COORD}2 2 1\n1 1\0 2\n").as_bytes());
    assert_eq!(line, 3, "{why}");
    assert!(why.contains("byte 4 is 0x00"), "{why}");
    let mut bad = format!("{COORD}1 1 1\n1 1 ").into_bytes();
    bad.extend([0xff, 0xfe, b'\n']);
    let (line, why) = parse_err(&bad);
    assert_eq!(line, 3);
    assert!(why.contains("UTF-8"), "{why}");
    let (line, why) = parse_err(&[0x1f, 0x8b, 0x08, 0x00, b'\n']);
    assert_eq!(line, 1);
    assert!(why.contains("gzip"), "{why}");
    // A comment in Latin-1 is a comment; Windows line ends and tabs are text.
    let mut latin1 = format!("{COORD}% auteur: Ren").into_bytes();
    latin1.extend([0xe9, b'\n']);
    latin1.extend(b"1 1 1\n1 1 2\n");
    assert_eq!(
        mm::read_csr::<f64, _>(latin1.as_slice()).unwrap().values(),
        [2.0]
    );
    let a = mm::read_csr::<f64, _>(
        "%%MatrixMarket matrix coordinate real general\r\n2 2 1\r\n2\t1\t4.5\r\n".as_bytes(),
    )
    .unwrap();
    assert_eq!(a.values(), [4.5]);
}

#[test]
fn sizes_that_overflow_never_panic() {
    for (size, what) in [
        ("99999999999999999999999 1 0", "too large"),
        (
            "4294967296 1 0",
            "exceeds the largest supported dimension 4294967295",
        ),
        ("-1 2 0", "not a non-negative integer"),
        ("2 2 -5", "not a non-negative integer"),
        ("1 1 1e3", "not a non-negative integer"),
    ] {
        let (line, why) = parse_err(format!("{COORD}{size}\n").as_bytes());
        assert_eq!(line, 2, "{size}: {why}");
        assert!(why.contains(what), "{size}: {why}");
    }
    let (line, why) = parse_err(format!("{COORD}3 3 1\n18446744073709551616 1 1\n").as_bytes());
    assert_eq!(line, 3);
    assert!(
        why.contains("row index 18446744073709551616 is out of range 1..=3"),
        "{why}"
    );
    let (_, why) = parse_err(format!("{COORD}3 3 1\n1 -2 1\n").as_bytes());
    assert!(why.contains("column index: \"-2\""), "{why}");
}

#[test]
fn claimed_sizes_are_checked_before_anything_is_allocated() {
    // The largest dimensions with one entry: read as one triplet, instantly.
    let a = mm::read_coo::<f64, _>(
        format!("{COORD}4294967295 4294967295 1\n4294967295 1 2.5\n").as_bytes(),
    )
    .unwrap();
    assert_eq!(
        (a.n_rows(), a.n_cols(), a.nnz()),
        (4294967295, 4294967295, 1)
    );
    // ... whose dense form is refused with the bytes (no capacity overflow, no abort).
    let obj = mm::read(format!("{COORD}4294967295 4294967295 1\n1 1 1\n").as_bytes()).unwrap();
    let (what, requested) = out_of_host_memory(obj.into_dense::<f64>());
    assert!(what.contains("4294967295 x 4294967295"), "{what}");
    assert_eq!(requested, 4294967295u128 * 4294967295 * 8);
    // More entries than positions (general, symmetric, skew-symmetric).
    for (banner, size, positions) in [
        ("real general", "2 3 7", "only 6 positions"),
        (
            "real symmetric",
            "3 3 7",
            "only 6 positions in one triangle",
        ),
        ("real skew-symmetric", "3 3 4", "only 3 positions"),
        ("complex hermitian", "2 2 4", "only 3 positions"),
    ] {
        let text = format!("%%MatrixMarket matrix coordinate {banner}\n{size}\n");
        let (line, why) = parse_err(text.as_bytes());
        assert_eq!(line, 2, "{banner}: {why}");
        assert!(why.contains(positions), "{banner}: {why}");
    }
    // An entry count no machine can hold: refused with the bytes, naming the size line.
    let n = 4294967295u128 * 4294967295;
    let text = format!("{COORD}4294967295 4294967295 {n}\n");
    let e = mm::read(text.as_bytes()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("the {n} entries announced on line 2")),
        "{msg}"
    );
    assert!(msg.contains(&(n * 16).to_string()), "{msg}");
    // The crate's error is the same kind as from every other module.
    let e: ferrocuda::Error = e.into();
    assert!(matches!(e, ferrocuda::Error::OutOfHostMemory { .. }), "{e}");
    // A 35-byte array file announcing 10^10 values (80 GB): refused where that is more
    // than this process may allocate, else read to its end having allocated only for the
    // one value it has; one announcing 2^64 values is refused everywhere.
    let small = "%%MatrixMarket matrix array real general\n100000 100000\n1\n";
    match mm::read(small.as_bytes()) {
        Err(SparseError::Parse { line: 3, reason }) => assert!(
            reason.contains("end of file after 1 values") && reason.contains("10000000000"),
            "{reason}"
        ),
        other => {
            let (what, requested) = out_of_host_memory(other);
            assert!(
                what.contains("100000 x 100000 array announced on line 2"),
                "{what}"
            );
            assert_eq!(requested, 80_000_000_000);
        }
    }
    let huge = "%%MatrixMarket matrix array complex general\n4294967296 4294967296\n1 0\n";
    let (what, _) = out_of_host_memory(mm::read(huge.as_bytes()));
    assert!(
        what.contains("4294967296 x 4294967296 array announced on line 2"),
        "{what}"
    );
}

#[test]
fn symmetric_files_list_one_triangle() {
    let sym = |body: &str| format!("%%MatrixMarket matrix coordinate real symmetric\n{body}");
    // Both (2,1) and (1,2): refused, naming both lines.
    let (line, why) = parse_err(sym("2 2 2\n2 1 1.5\n% c\n1 2 1.5\n").as_bytes());
    assert_eq!(line, 5, "{why}");
    assert!(
        why.contains("(1, 2) lies above") && why.contains("line 3 listed (2, 1) below"),
        "{why}"
    );
    // The upper triangle alone is mirrored like the lower one.
    let lower = mm::read_csr::<f64, _>(sym("3 3 3\n2 1 1.5\n3 3 2\n3 2 -1\n").as_bytes()).unwrap();
    let upper = mm::read_csr::<f64, _>(sym("3 3 3\n1 2 1.5\n3 3 2\n2 3 -1\n").as_bytes()).unwrap();
    assert_eq!(lower, upper);
    assert_eq!(
        lower.to_dense().unwrap(),
        [0.0, 1.5, 0.0, 1.5, 0.0, -1.0, 0.0, -1.0, 2.0]
    );
    // Skew-symmetric: no diagonal entry, not even a zero.
    let (line, why) = parse_err(
        "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 3\n2 2 0\n".as_bytes(),
    );
    assert_eq!(line, 4);
    assert!(
        why.contains("diagonal entry (2, 2) in a skew-symmetric file"),
        "{why}"
    );
    // Hermitian: real diagonal only; the mirror is the conjugate.
    let (line, why) = parse_err(
        "%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 2 0\n2 2 1 0.5\n"
            .as_bytes(),
    );
    assert_eq!(line, 4);
    assert!(why.contains("imaginary part 0.5"), "{why}");
    let h = mm::read_csr::<Complex<f64>, _>(
        "%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 2 0\n2 1 1 2\n".as_bytes(),
    )
    .unwrap();
    assert_eq!(
        h.to_dense().unwrap(),
        [
            Complex::new(2.0, 0.0),
            Complex::new(1.0, -2.0),
            Complex::new(1.0, 2.0),
            Complex::new(0.0, 0.0)
        ]
    );
}

#[test]
fn errors_say_what_the_file_is_and_what_was_expected() {
    let array = "%%MatrixMarket matrix array real general\n2 1\n1\n2\n";
    let e = mm::read_coo::<f64, _>(array.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Matrix Market line 1") && e.contains("`array` (a dense matrix or vector)"),
        "{e}"
    );
    assert!(
        e.contains("a sparse matrix (`coordinate`) is expected"),
        "{e}"
    );
    assert!(!e.contains("read_"), "names a library function: {e}");
    let e = mm::read_dense::<f64, _>(format!("{COORD}1 1 0\n").as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`coordinate` (a sparse matrix)") && !e.contains("read_"),
        "{e}"
    );
    let e = mm::read_coo::<f64, _>(
        "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n".as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("complex values") && e.contains("real (f64) matrix is expected"),
        "{e}"
    );
    let e =
        mm::read_dense::<f64, _>("%%MatrixMarket matrix array real symmetric\n1 1\n1\n".as_bytes())
            .unwrap_err()
            .to_string();
    assert!(e.contains("symmetry `symmetric` are not supported"), "{e}");
    let (_, why) = parse_err(format!("{COORD}1 1 1\n1 1 1 2\n").as_bytes());
    assert!(
        why.contains("an entry of a `real` file has 1 value(s), found 2"),
        "{why}"
    );
    assert_eq!(parse_err(b"").0, 0);
    assert!(
        mm::read(&b""[..])
            .unwrap_err()
            .to_string()
            .starts_with("Matrix Market file: empty file")
    );
}

/// A reader that hands out at most one byte per call and can be read only once: a pipe.
struct Pipe<'a>(&'a [u8]);

impl Read for Pipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((&b, rest)), Some(slot)) => {
                *slot = b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[test]
fn read_takes_any_object_from_one_pass_over_a_stream() {
    let complex =
        "%%MatrixMarket matrix coordinate complex general\n% c\n2 3 2\n1 3 1 -2\n2 1 0.5 0\n";
    let obj = mm::read(BufReader::with_capacity(1, Pipe(complex.as_bytes()))).unwrap();
    assert!(obj.is_complex());
    assert_eq!(
        (obj.shape(), obj.header().format),
        ((2, 3), MmFormat::Coordinate)
    );
    let coo = obj.clone().into_coo::<Complex<f32>>().unwrap();
    assert_eq!(
        coo,
        mm::read_coo::<Complex<f32>, _>(complex.as_bytes()).unwrap()
    );
    assert!(obj.clone().into_coo::<f64>().is_err());
    assert!(
        obj.clone()
            .into_array::<Complex<f64>>()
            .unwrap_err()
            .to_string()
            .contains("`coordinate`")
    );
    let dense = obj.into_dense::<Complex<f64>>().unwrap();
    assert_eq!((dense.n_rows, dense.n_cols), (2, 3));
    assert_eq!(dense.values[4], Complex::new(1.0, -2.0)); // (0, 2), column-major
    // A real vector, read into f32 with the parser's rounding and into complex.
    let vector = "%%MatrixMarket matrix array integer general\n3 1\n1\n-7\n16777217\n";
    let obj = mm::read(BufReader::with_capacity(1, Pipe(vector.as_bytes()))).unwrap();
    assert!(!obj.is_complex());
    let v32 = obj.clone().into_array::<f32>().unwrap();
    assert_eq!(
        v32.values,
        mm::read_dense::<f32, _>(vector.as_bytes()).unwrap().2
    );
    assert!(
        obj.clone()
            .into_csr::<f64>()
            .unwrap_err()
            .to_string()
            .contains("`array`")
    );
    match obj.into_matrix::<Complex<f64>>().unwrap() {
        MmMatrix::Array(a) => assert_eq!(a.values[1], Complex::new(-7.0, 0.0)),
        other => panic!("{other:?}"),
    }
    // Duplicates of a coordinate file are summed in the dense form.
    let obj = mm::read(format!("{COORD}1 3 3\n1 2 1\n1 2 0.5\n1 1 3\n").as_bytes()).unwrap();
    assert_eq!(obj.into_dense::<f64>().unwrap().values, [3.0, 1.5, 0.0]);
}

// --- property tests ---------------------------------------------------------------

/// A random valid coordinate or array file, and what reading it must give.
fn valid_file() -> impl Strategy<Value = (Vec<u8>, Csr<f64>)> {
    (0usize..7, 0usize..7, any::<u64>(), 0.0f64..1.0).prop_map(|(m, n, seed, p)| {
        // At most one entry per position (duplicates summed), as the size line allows.
        let csr = Csr::from(&random_coo::<f64>(m, n, p, seed));
        let mut buf = Vec::new();
        mm::write_coo(&mut buf, &Coo::from(&csr)).expect("write");
        (buf, csr)
    })
}

/// Mutations of a valid file: a byte replaced, a byte inserted, a cut, a line doubled.
fn mutate(mut bytes: Vec<u8>, kind: u8, at: usize, byte: u8) -> Vec<u8> {
    let i = if bytes.is_empty() {
        0
    } else {
        at % bytes.len()
    };
    match kind % 4 {
        0 if !bytes.is_empty() => bytes[i] = byte,
        1 => bytes.insert(i, byte),
        2 => bytes.truncate(i),
        _ => {
            let line: Vec<u8> = bytes[i..]
                .iter()
                .copied()
                .take_while(|&b| b != b'\n')
                .collect();
            bytes.splice(i..i, line.into_iter().chain([b'\n']));
        }
    }
    bytes
}

/// Converts what was read into every form, where its shape is small: a valid file may
/// announce billions of rows (whose row offsets or dense form a big machine would then
/// really allocate, which is no test of the parser).
fn convert_small(read: Result<MmObject, SparseError>) {
    if let Ok(obj) = read {
        let (r, c) = obj.shape();
        if r <= 1 << 16 && (r as u128) * (c as u128) <= 1 << 20 {
            let _ = obj.clone().into_csr::<Complex<f64>>();
            let _ = obj.clone().into_array::<f32>();
            let _ = obj.into_dense::<f64>();
        }
    }
}

/// Pieces to build hostile headers from.
fn header_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("%%MatrixMarket matrix coordinate real general".to_string()),
        Just("%%MatrixMarket matrix coordinate complex hermitian".to_string()),
        Just("%%MatrixMarket matrix coordinate pattern symmetric".to_string()),
        Just("%%MatrixMarket matrix coordinate integer skew-symmetric".to_string()),
        Just("%%MatrixMarket matrix array real general".to_string()),
        Just("%%MatrixMarket matrix array complex general".to_string()),
        Just("%%matrixmarket MATRIX Coordinate REAL General".to_string()),
        "[a-z%% ]{0,30}",
    ]
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..5).prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        Just("4294967295".to_string()),
        Just("18446744073709551615".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("-1".to_string()),
        Just("nan".to_string()),
        Just("-inf".to_string()),
        Just("1e308".to_string()),
        "[0-9a-z.+-]{0,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn valid_random_matrices_round_trip((bytes, want) in valid_file()) {
        let got = mm::read(bytes.as_slice()).expect("valid file").into_csr::<f64>().expect("csr");
        prop_assert_eq!(got, want);
    }

    #[test]
    fn mutated_files_never_panic(
        (bytes, _) in valid_file(),
        edits in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<u8>()), 1..4),
    ) {
        let bytes = edits.into_iter().fold(bytes, |b, (k, at, byte)| mutate(b, k, at, byte));
        convert_small(mm::read(bytes.as_slice()));
        let _ = mm::read_coo::<f64, _>(bytes.as_slice());
        let _ = mm::read_dense::<Complex<f32>, _>(bytes.as_slice());
    }

    #[test]
    fn hostile_headers_and_lines_never_panic(
        banner in header_piece(),
        size in proptest::collection::vec(number(), 0..4),
        entries in proptest::collection::vec(proptest::collection::vec(number(), 0..5), 0..6),
        raw in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut text = format!("{banner}\n{}\n", size.join(" "));
        for e in &entries {
            text.push_str(&e.join(" "));
            text.push('\n');
        }
        let mut bytes = text.into_bytes();
        for bytes in [bytes.clone(), { bytes.extend(&raw); bytes }, raw] {
            convert_small(mm::read(bytes.as_slice()));
        }
    }
}
