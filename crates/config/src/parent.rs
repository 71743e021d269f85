//! config::parent -- where a signed zone's DS check finds the parent's servers: a list of
//! addresses (`parent_agents = ["ADDR:PORT", ...]`, BIND's `parental-agents`, Knot's
//! `parent` of a `submission`), or the parent zone's NS set looked up at each check
//! through `parent_resolvers` (`parent_agents = "resolve"`, as BIND 9.20's `checkds yes`
//! does without parental agents); and the check that the two keys go together.

use super::{Config, ConfigError};
use serde::{Deserialize, Deserializer};
use std::net::SocketAddr;
use std::path::Path;

/// A zone's `parent_agents`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParentAgents {
    /// These servers, asked as they are (empty: none configured).
    Listed(Vec<SocketAddr>),
    /// The servers of the parent zone's NS set, found through the zone's
    /// `parent_resolvers` anew at each check.
    Resolve,
}

impl Default for ParentAgents {
    fn default() -> Self {
        Self::Listed(Vec::new())
    }
}

impl ParentAgents {
    /// True when no server is named and none is to be looked up.
    pub fn is_empty(&self) -> bool {
        matches!(self, Self::Listed(v) if v.is_empty())
    }

    /// The servers listed (none for `"resolve"`).
    pub fn listed(&self) -> &[SocketAddr] {
        match self {
            Self::Listed(v) => v,
            Self::Resolve => &[],
        }
    }
}

/// `parent_agents`: an array of `"ADDR:PORT"` or `"ADDR"` (port 53), or `"resolve"`.
pub(super) fn agents<'de, D: Deserializer<'de>>(d: D) -> Result<ParentAgents, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        List(Vec<String>),
        Word(String),
    }
    match Raw::deserialize(d)? {
        Raw::Word(w) if w == "resolve" => Ok(ParentAgents::Resolve),
        Raw::Word(w) => Err(format!(
            "{w:?}: expected an array of \"ADDR:PORT\" or \"ADDR\", or \"resolve\""
        )),
        Raw::List(list) => list
            .iter()
            .map(|s| super::validate::parse_agent(s))
            .collect::<Result<_, _>>()
            .map(ParentAgents::Listed),
    }
    .map_err(serde::de::Error::custom)
}

/// `parent_agents = "resolve"` needs resolvers to ask, and `parent_resolvers` is read
/// with it only (else an operator would believe the NS set is looked up).
pub(super) fn check(config: &Config, path: &Path) -> Result<(), ConfigError> {
    for (i, z) in config.zones.iter().enumerate() {
        let resolve = z.parent_agents == ParentAgents::Resolve;
        let message = match (resolve, z.parent_resolvers.is_empty()) {
            (true, true) => {
                "parent_agents = \"resolve\" needs parent_resolvers: the resolvers \
                 (\"ADDR:PORT\" or \"ADDR\") the parent's NS set is looked up through"
            }
            (false, false) => {
                "parent_resolvers is only read with parent_agents = \"resolve\" (the \
                 parent's servers are then looked up through them)"
            }
            _ => continue,
        };
        return Err(ConfigError {
            path: path.into(),
            position: None,
            key: Some(format!(
                "zone[{i}].{}",
                if resolve {
                    "parent_agents"
                } else {
                    "parent_resolvers"
                }
            )),
            message: message.into(),
        });
    }
    Ok(())
}
