//! Presentation-format tokens, shared by the zone-file scanner and the rdata parsers.

use core::fmt;

/// One whitespace-separated token of a record's text, with escapes left in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    /// The token's bytes, without surrounding quotes; `\X` and `\DDD` escapes are not decoded.
    pub text: &'a [u8],
    /// True if the token was written in double quotes.
    pub quoted: bool,
}

impl<'a> Token<'a> {
    /// An unquoted token.
    pub fn plain(text: &'a [u8]) -> Self {
        Self { text, quoted: false }
    }
}

/// Why presentation-format text was rejected; the message is for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError(pub String);

impl TextError {
    /// Builds an error from anything printable.
    pub fn new(msg: impl fmt::Display) -> Self {
        Self(msg.to_string())
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TextError {}
