//! `--device`: where a command computes. One option, before or after the subcommand:
//! `cpu`, `gpu` (GPU 0, or the GPU named before the subcommand), or a GPU ordinal `N`
//! (also spelt `gpu:N`); `ferrocuda --device 1 solve ... --device gpu` and
//! `ferrocuda solve ... --device 1` both solve on GPU 1.

use serde::Serialize;

use ferrocuda::gpu::{self, Gpu};
use ferrocuda::{Error, Result};

/// `--device` as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// `cpu`.
    Cpu,
    /// `gpu`.
    Gpu,
    /// `N` or `gpu:N`.
    Ordinal(usize),
}

/// The value parser of `--device`.
pub fn parse_device(s: &str) -> std::result::Result<DeviceChoice, String> {
    let t = s.trim().to_ascii_lowercase();
    match t.as_str() {
        "cpu" => return Ok(DeviceChoice::Cpu),
        "gpu" => return Ok(DeviceChoice::Gpu),
        _ => {}
    }
    let n = t.strip_prefix("gpu:").unwrap_or(&t);
    if n.starts_with('-') {
        return Err(format!(
            "{s}: a GPU ordinal is 0 or more (cpu, gpu, N or gpu:N)"
        ));
    }
    n.parse::<usize>()
        .map(DeviceChoice::Ordinal)
        .map_err(|_| format!("{s:?} is not cpu, gpu, a GPU ordinal N or gpu:N"))
}

/// The `--device` option of a subcommand.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DeviceArg {
    /// Where to compute: cpu, gpu (GPU 0, or the GPU named before the subcommand), or a
    /// GPU ordinal N (also gpu:N) [default: cpu].
    #[arg(long = "device", value_name = "cpu|gpu|N", value_parser = parse_device)]
    pub device: Option<DeviceChoice>,
}

/// Where a command computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// The CPU (all cores unless a command says otherwise).
    Cpu,
    /// The GPU of this ordinal.
    Gpu(usize),
}

impl Serialize for Where {
    /// `"cpu"` or `"gpu"` (the reports' `device`).
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Where {
    /// `cpu` or `gpu`.
    pub fn name(self) -> &'static str {
        match self {
            Where::Cpu => "cpu",
            Where::Gpu(_) => "gpu",
        }
    }

    /// `--device` given `before` and `after` the subcommand, `default` where neither
    /// says. The word (`cpu`, `gpu`) after the subcommand wins; two different ordinals
    /// are an error.
    pub fn resolve(
        before: Option<DeviceChoice>,
        after: Option<DeviceChoice>,
        default: Where,
    ) -> Result<Where> {
        let ordinal = |c: Option<DeviceChoice>| match c {
            Some(DeviceChoice::Ordinal(n)) => Some(n),
            _ => None,
        };
        let ordinal = match (ordinal(before), ordinal(after)) {
            (Some(a), Some(b)) if a != b => {
                return Err(Error::InvalidArgument {
                    op: "--device",
                    reason: format!(
                        "--device {a} before the subcommand and --device {b} after it name different GPUs"
                    ),
                });
            }
            (a, b) => b.or(a),
        };
        let word = [after, before]
            .into_iter()
            .flatten()
            .find(|c| !matches!(c, DeviceChoice::Ordinal(_)));
        Ok(match (word, ordinal) {
            (Some(DeviceChoice::Cpu), _) => Where::Cpu,
            (_, Some(n)) => Where::Gpu(n),
            (Some(_), None) => Where::Gpu(match default {
                Where::Gpu(n) => n,
                Where::Cpu => 0,
            }),
            (None, None) => default,
        })
    }

    /// The GPU, opened (an error where there is none).
    pub fn open(self) -> Result<Option<Gpu>> {
        match self {
            Where::Cpu => Ok(None),
            Where::Gpu(n) => gpu::open(n).map(Some),
        }
    }

    /// For the benchmarks, the tour and the probe, whose GPU part is optional: the GPU,
    /// or why there is none (`--device cpu`, no device). Other errors are errors.
    pub fn open_optional(self) -> Result<(Option<Gpu>, Option<String>)> {
        match self {
            Where::Cpu => Ok((None, Some("--device cpu: the GPU part is skipped".into()))),
            Where::Gpu(n) => match gpu::open(n) {
                Ok(g) => Ok((Some(g), None)),
                Err(e) if e.is_no_device() => Ok((None, Some(e.to_string()))),
                Err(e) => Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeviceChoice::*;

    #[test]
    fn before_and_after_combine() {
        let r = |b, a| Where::resolve(b, a, Where::Cpu).unwrap();
        assert_eq!(r(None, None), Where::Cpu);
        assert_eq!(r(Some(Ordinal(1)), Some(Gpu)), Where::Gpu(1));
        assert_eq!(r(None, Some(Ordinal(2))), Where::Gpu(2));
        assert_eq!(r(None, Some(Gpu)), Where::Gpu(0));
        assert_eq!(r(Some(Ordinal(1)), Some(Cpu)), Where::Cpu);
        assert_eq!(r(Some(Gpu), None), Where::Gpu(0));
        assert!(Where::resolve(Some(Ordinal(1)), Some(Ordinal(2)), Where::Cpu).is_err());
        assert_eq!(
            Where::resolve(None, None, Where::Gpu(0)).unwrap(),
            Where::Gpu(0)
        );
    }

    #[test]
    fn values_parse_with_their_own_messages() {
        assert_eq!(parse_device("GPU"), Ok(Gpu));
        assert_eq!(parse_device("gpu:3"), Ok(Ordinal(3)));
        assert_eq!(parse_device("7"), Ok(Ordinal(7)));
        assert!(parse_device("-1").unwrap_err().contains("0 or more"));
        assert!(parse_device("tpu").unwrap_err().contains("not cpu, gpu"));
    }
}
