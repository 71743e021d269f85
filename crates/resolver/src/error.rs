//! [`Error`], the one error of this crate: a root-hints, trust-anchor or policy-zone file
//! that could not be read. A leaf, so that any module can return it without an import circle.

use core::fmt;

/// Why configuration text (root hints, trust anchors) could not be read. Resolution itself
/// never fails with an error: it answers SERVFAIL with an Extended DNS Error.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A line of a hints file ([`crate::Hints::parse`]).
    Hints {
        /// 1-based line number (0: the file as a whole).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A line of a trust-anchor file ([`crate::TrustAnchors::parse`]).
    TrustAnchor {
        /// 1-based line number (of the record's first line; 0: the file as a whole).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A record of a response policy zone that is not a valid policy
    /// ([`crate::PolicyZoneBuilder::add`]).
    Policy {
        /// 1-based line number of the record (0: not known).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Wire data or presentation-format text that could not be read.
    Wire(shardns_wire::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hints { line, message } => write!(f, "hints:{line}: {message}"),
            Self::TrustAnchor { line, message } => write!(f, "trust anchor:{line}: {message}"),
            Self::Policy { line, message } => write!(f, "policy zone:{line}: {message}"),
            Self::Wire(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Wire(e) => Some(e),
            _ => None,
        }
    }
}

impl From<shardns_wire::Error> for Error {
    fn from(e: shardns_wire::Error) -> Self {
        Self::Wire(e)
    }
}
