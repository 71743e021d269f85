//! config::catalog -- what a `[[zone]]` is to catalog zones.

use serde::Deserialize;

/// What a zone is to catalog zones (RFC 9432).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CatalogRole {
    /// A secondary zone read as a catalog: its members become secondary zones.
    Consume,
    /// A catalog made by this server of the zones that name it in `catalog_member`.
    Produce,
}
