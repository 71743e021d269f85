//! DNS wire format for shardns: names, messages, records, EDNS and presentation format.
//!
//! Bytes in, values out, and back: this crate never opens a socket or a file, reads a clock,
//! spawns a thread or logs. The query path ([`Query`], read once per query, and
//! [`MessageWriter`]) works on caller-owned buffers and does not allocate; [`Message`] is the general, owning parse for tests, tools and the resolver.
//!
//! Every fallible function returns [`Error`]; the variants a query's parse can return carry
//! no heap data.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod edns;
mod error;
mod header;
pub mod message;
pub mod name;
pub mod proxy;
pub mod query;
pub mod rdata;
pub mod text;
pub mod tsig;
pub mod types;
pub mod update;
pub mod writer;

pub use error::{Error, NameKind};
pub use message::{Header, Message, Question, Record};
pub use name::{Name, NameBuf, NameRef};
pub use query::{Query, Transport};
pub use types::{Class, Opcode, RType, Rcode};
pub use writer::{MessageWriter, Section};
