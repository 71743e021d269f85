//! [`WireError`], why wire data could not be read: the one error of the parsers in
//! `message`, `rdata`, `edns`, `tsig` and `query`. A leaf: it names only [`NameError`].

use crate::name::NameError;
use core::fmt;

/// Why a message could not be parsed. Every variant means FORMERR to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// The data ends before the field being read.
    ShortInput,
    /// A bad name.
    Name(NameError),
    /// Record data whose length or content does not fit its type.
    BadRdata,
    /// Bytes left after the last section.
    TrailingData,
    /// More than one OPT record, or one outside the additional section or not at the root.
    BadOpt,
}

impl From<NameError> for WireError {
    fn from(e: NameError) -> Self {
        Self::Name(e)
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ShortInput => f.write_str("message truncated"),
            Self::Name(e) => write!(f, "bad name: {e}"),
            Self::BadRdata => f.write_str("malformed record data"),
            Self::TrailingData => f.write_str("trailing data after the message"),
            Self::BadOpt => f.write_str("misplaced or duplicate OPT record"),
        }
    }
}

impl std::error::Error for WireError {}
