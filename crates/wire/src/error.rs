//! [`Error`], the one error of this crate, and [`NameKind`], why a name is bad.
//!
//! A leaf module: it names only the header and the type codes a malformed query carries,
//! so every other module can return it without an import circle.
//!
//! The variants that parsing a query can return ([`Error::NotAQuery`], [`Error::Malformed`],
//! the message and name kinds) carry no heap data: a malformed query is answered without
//! allocating. Only presentation-format text and TSIG responses, never on the query path,
//! box their text; that keeps the whole enum at 24 bytes.

use crate::header::Header;
use crate::types::RType;
use core::fmt;

/// Most unsigned messages in a row between two signed ones (RFC 8945 §5.3.1: "at least
/// every 100th message"). Here, not in `tsig`, because [`Error::TooManyUnsigned`] prints it.
pub const MAX_UNSIGNED_RUN: u32 = 99;

/// Why a name could not be read or built. Carried by [`Error::Name`] (a name on its own)
/// and [`Error::BadName`] (a name inside a message); one octet, so the name parsers on the
/// query path return it in a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameKind {
    /// The name ran past the end of its buffer.
    ShortInput,
    /// A label is longer than 63 octets.
    LabelTooLong,
    /// The name is longer than 255 octets.
    NameTooLong,
    /// A label type other than a plain label or a pointer (RFC 6891 §5 retired the others).
    BadLabelType,
    /// A compression pointer that points forward, at itself, or too many times.
    BadPointer,
    /// An empty label inside a name in presentation format (`a..b`).
    EmptyLabel,
    /// A bad `\` escape in presentation format.
    BadEscape,
    /// A relative name where no origin is known.
    Relative,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ShortInput => "name runs past the end of the data",
            Self::LabelTooLong => "label longer than 63 octets",
            Self::NameTooLong => "name longer than 255 octets",
            Self::BadLabelType => "unknown label type",
            Self::BadPointer => "bad compression pointer",
            Self::EmptyLabel => "empty label",
            Self::BadEscape => "bad escape",
            Self::Relative => "relative name with no origin",
        })
    }
}

/// Why wire data or presentation-format text could not be read, or a TSIG-signed response
/// does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    // A name on its own (`Name::from_wire`, `from_text`, `NameBuf`).
    /// A bad name.
    Name(NameKind),

    // A message (FORMERR to a server).
    /// The data ends before the field being read.
    ShortInput,
    /// A bad name inside a message.
    BadName(NameKind),
    /// Record data whose length or content does not fit its type.
    BadRdata,
    /// Bytes left after the last section.
    TrailingData,
    /// More than one OPT record, or one outside the additional section or not at the root.
    BadOpt,

    // A query ([`crate::Query::parse`]).
    /// Too short for a header, or a response (QR set): no answer is sent (RFC 1035 §7.3
    /// has servers ignore what they cannot answer; answering responses invites loops).
    NotAQuery,
    /// A query whose question count is not one, or whose question or trailing sections
    /// cannot be read: a server answers FORMERR with this header (NOTIMP first if it does
    /// not implement the opcode). `qtype` is the question's type when it could be read.
    Malformed {
        /// The query's header.
        header: Header,
        /// The question's type, if the question was readable.
        qtype: Option<RType>,
    },

    // Presentation format ([`crate::text`], rdata scanning).
    /// Text that was rejected; the message is for the operator.
    Text(Box<str>),

    // The client's side of TSIG ([`crate::tsig::ResponseVerifier`]).
    /// The first response is not signed (RFC 8945 §5.3.1).
    Unsigned,
    /// More than [`MAX_UNSIGNED_RUN`] unsigned messages in a row.
    TooManyUnsigned,
    /// Signed with another key or algorithm (the key's name).
    WrongKey(Box<str>),
    /// The server answered with an unsigned TSIG error (BADSIG, BADKEY).
    ServerError(u16),
    /// The server answered with a TSIG error in a response whose MAC verifies (BADTIME,
    /// with the server's time in `other`; BADTRUNC).
    SignedError {
        /// The TSIG error.
        error: u16,
        /// Other Data.
        other: Box<[u8]>,
    },
    /// The MAC does not verify.
    BadSig,
    /// Signed outside the fudge around our clock.
    BadTime {
        /// The signature's time.
        signed: u64,
        /// Ours.
        now: u64,
    },
    /// The TSIG record is malformed or misplaced.
    BadTsig,
}

impl Error {
    /// A presentation-format error with anything printable as its message.
    pub(crate) fn text(msg: impl fmt::Display) -> Self {
        Self::Text(msg.to_string().into_boxed_str())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(k) => write!(f, "{k}"),
            Self::ShortInput => f.write_str("message truncated"),
            Self::BadName(k) => write!(f, "bad name: {k}"),
            Self::BadRdata => f.write_str("malformed record data"),
            Self::TrailingData => f.write_str("trailing data after the message"),
            Self::BadOpt => f.write_str("misplaced or duplicate OPT record"),
            Self::NotAQuery => f.write_str("not a query"),
            Self::Malformed { .. } => f.write_str("malformed query"),
            Self::Text(m) => f.write_str(m),
            Self::Unsigned => f.write_str("TSIG: the response is not signed"),
            Self::TooManyUnsigned => write!(
                f,
                "TSIG: more than {MAX_UNSIGNED_RUN} unsigned messages in a row"
            ),
            Self::WrongKey(k) => write!(f, "TSIG: signed with another key ({k})"),
            Self::ServerError(e) => write!(f, "TSIG: the server answered TSIG error {e}"),
            Self::SignedError { error, .. } => {
                write!(f, "TSIG: the server answered TSIG error {error} (signed)")
            }
            Self::BadSig => f.write_str("TSIG: the MAC does not verify (BADSIG)"),
            Self::BadTime { signed, now } => write!(
                f,
                "TSIG: signed at {signed}, {} s from our clock (BADTIME)",
                now.abs_diff(*signed)
            ),
            Self::BadTsig => f.write_str("TSIG: malformed TSIG record"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The query path returns this type: it must stay small (no `String`, no large inline
    /// payload). 24 bytes: `Malformed`'s header and qtype, or a boxed text, and the tag.
    #[test]
    fn stays_small() {
        assert!(size_of::<Error>() <= 24);
        assert_eq!(size_of::<NameKind>(), 1);
    }
}
