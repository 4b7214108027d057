//! Library and benchmark enums as command-line values. `ferrocuda` and `ferrocuda-bench`
//! do not depend on clap, so each enum that an argument takes has a clap mirror here with
//! the same variants, spelling and doc comments (the doc comments are the `--help` text of
//! each value), parsed by [`choice`] straight into the library's type.

use clap::ValueEnum;
use clap::builder::{EnumValueParser, TypedValueParser};

use ferrocuda::krylov::Preconditioner;
use ferrocuda::multigrid::{Cycle, Smoother};
use ferrocuda_bench::gmres::Peer;

/// The value parser of an argument of library type `L` spelt as its mirror `C`: the
/// possible values and their help come from `C`, the parsed value is `L::from(c)`.
pub fn choice<C, L>() -> impl TypedValueParser<Value = L>
where
    C: ValueEnum + Clone + Send + Sync + 'static,
    L: From<C> + Clone + Send + Sync + 'static,
{
    EnumValueParser::<C>::new().map(L::from)
}

/// [`Preconditioner`] on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrecondArg {
    /// None (`M = I`).
    None,
    /// Point Jacobi: the reciprocals of the diagonal ([`ferrocuda::krylov::BlockJacobi::point`]).
    Jacobi,
    /// Block Jacobi: the inverses of the diagonal blocks ([`ferrocuda::krylov::BlockJacobi::new`]).
    BlockJacobi,
    /// Block ILU(0) with the blocks of `--block-size` (1: point ILU(0);
    /// [`ferrocuda::krylov::BlockIlu0`], on the GPU [`ferrocuda::krylov::DeviceBlockIlu0`]).
    Ilu0,
}

impl From<PrecondArg> for Preconditioner {
    fn from(a: PrecondArg) -> Self {
        match a {
            PrecondArg::None => Preconditioner::None,
            PrecondArg::Jacobi => Preconditioner::Jacobi,
            PrecondArg::BlockJacobi => Preconditioner::BlockJacobi,
            PrecondArg::Ilu0 => Preconditioner::Ilu0,
        }
    }
}

/// [`Smoother`] on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SmootherArg {
    /// Block Gauss-Seidel in red-black block order (seed 003's ABL).
    Abl,
    /// Block Jacobi over all blocks, double-buffered (seed 003's SBL, deterministic).
    Sbl,
    /// Seed 003's SBL as its code ran: in place, racy on the GPU.
    SblRacy,
    /// Damped point Jacobi (`omega = 6/7` unless given).
    Jacobi,
    /// Red-black point Gauss-Seidel.
    Rbgs,
}

impl From<SmootherArg> for Smoother {
    fn from(a: SmootherArg) -> Self {
        match a {
            SmootherArg::Abl => Smoother::Abl,
            SmootherArg::Sbl => Smoother::Sbl,
            SmootherArg::SblRacy => Smoother::SblRacy,
            SmootherArg::Jacobi => Smoother::Jacobi,
            SmootherArg::Rbgs => Smoother::Rbgs,
        }
    }
}

/// [`Cycle`] on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CycleArg {
    /// V-cycle (seed 003).
    V,
    /// W-cycle.
    W,
    /// Full multigrid, then V-cycles.
    Fmg,
}

impl From<CycleArg> for Cycle {
    fn from(a: CycleArg) -> Self {
        match a {
            CycleArg::V => Cycle::V,
            CycleArg::W => Cycle::W,
            CycleArg::Fmg => Cycle::Fmg,
        }
    }
}

/// [`Peer`] on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PeerArg {
    /// CuPy's `cupyx.scipy.sparse.linalg.gmres` on the GPU.
    Cupy,
    /// SciPy's `scipy.sparse.linalg.gmres` on the CPU.
    Scipy,
}

impl From<PeerArg> for Peer {
    fn from(a: PeerArg) -> Self {
        match a {
            PeerArg::Cupy => Peer::Cupy,
            PeerArg::Scipy => Peer::Scipy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// Every mirror value maps onto the library variant of the same name (the library's
    /// `serde` spelling is the command line's), so JSON reports echo what was typed.
    fn same_names<C, L>()
    where
        C: ValueEnum + Clone,
        L: From<C> + Serialize,
    {
        for c in C::value_variants() {
            let name = c
                .to_possible_value()
                .expect("not skipped")
                .get_name()
                .to_string();
            let lib = serde_json::to_value(L::from(c.clone())).expect("serialises");
            assert_eq!(lib, serde_json::Value::String(name.clone()), "{name}");
        }
    }

    #[test]
    fn mirrors_map_onto_the_variants_of_the_same_name() {
        same_names::<PrecondArg, Preconditioner>();
        same_names::<SmootherArg, Smoother>();
        same_names::<CycleArg, Cycle>();
        same_names::<PeerArg, Peer>();
    }

    #[test]
    fn choice_parses_into_the_library_type() {
        let cmd = clap::Command::new("t").arg(
            clap::Arg::new("s")
                .long("smoother")
                .value_parser(choice::<SmootherArg, Smoother>()),
        );
        let m = cmd
            .clone()
            .try_get_matches_from(["t", "--smoother", "sbl-racy"])
            .unwrap();
        assert_eq!(m.get_one::<Smoother>("s"), Some(&Smoother::SblRacy));
        let e = cmd
            .try_get_matches_from(["t", "--smoother", "gs"])
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("possible values: abl, sbl, sbl-racy, jacobi, rbgs"),
            "{e}"
        );
    }
}
