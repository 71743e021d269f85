//! acl -- who may do what to a zone, from the configuration: transfers (`allow_transfer`,
//! `transfer_key`) today. Built whole at start and at every reload that reads the config,
//! published to the workers behind an `ArcSwap` ([`crate::Plane::transfer_acl`]), and read
//! by the control plane for the key a NOTIFY is signed with.

use shardns_config::{AclEntry, Config};
use shardns_wire::tsig::Key;
use shardns_wire::{Name, NameRef};
use std::collections::HashMap;
use std::net::IpAddr;

/// The transfer ACL of every configured zone (and of the embedded one), replaced as a
/// whole on reload. A hash lookup per transfer query, whatever the number of zones.
#[derive(Debug, Default)]
pub struct TransferAcl {
    /// Per configured zone with a policy of its own, by the apex's hash (looked up without
    /// making a name): the apex, the addresses, and the TSIG key a transfer must carry.
    zones: HashMap<u64, Vec<Policy>>,
    default: Vec<AclEntry>,
    default_key: Option<Name>,
    /// Every `[[key]]`: a signed request is checked against these.
    keys: Vec<Key>,
    /// Some client may transfer some zone (read per UDP batch, so computed once).
    anyone: bool,
}

impl TransferAcl {
    /// The ACL the configuration gives.
    pub fn new(config: &Config) -> Self {
        let default = config.server.allow_transfer.clone();
        let default_key = config.server.transfer_key.clone();
        let mut zones: HashMap<u64, Vec<Policy>> = HashMap::new();
        for z in &config.zones {
            if z.allow_transfer.is_none() && z.transfer_key.is_none() {
                continue;
            }
            let policy = Policy {
                apex: z.name.clone(),
                acl: z.allow_transfer.clone().unwrap_or_else(|| default.clone()),
                key: z.transfer_key.clone().or_else(|| default_key.clone()),
            };
            let same = zones.entry(z.name.as_ref().hash_ci()).or_default();
            // A later table for the same apex replaces the earlier one.
            same.retain(|p| p.apex != policy.apex);
            same.push(policy);
        }
        let anyone = !default.is_empty() || zones.values().flatten().any(|p| !p.acl.is_empty());
        Self {
            zones,
            default,
            default_key,
            keys: config.keys.iter().map(|k| k.0.clone()).collect(),
            anyone,
        }
    }

    /// The zone's addresses and required key: its own, else the server's defaults.
    pub fn policy(&self, apex: NameRef<'_>) -> (&[AclEntry], Option<&Name>) {
        let own = self
            .zones
            .get(&apex.hash_ci())
            .and_then(|same| same.iter().find(|p| p.apex.as_ref().eq_ci(&apex)));
        match own {
            Some(p) => (&p.acl, p.key.as_ref()),
            None => (&self.default, self.default_key.as_ref()),
        }
    }

    /// The key transfers of the zone at `apex` must be signed with, if any (NOTIFY of it
    /// is signed with it too).
    pub fn key_for(&self, apex: NameRef<'_>) -> Option<&Key> {
        let name = self.policy(apex).1?;
        self.keys
            .iter()
            .find(|k| k.name.as_ref().eq_ci(&name.as_ref()))
    }

    /// Every `[[key]]`, for checking signed queries.
    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// True if some client may transfer some zone.
    pub fn allows_anyone(&self) -> bool {
        self.anyone
    }

    /// True if `ip` may transfer the zone at `apex`.
    pub fn allows(&self, apex: NameRef<'_>, ip: IpAddr) -> bool {
        self.policy(apex).0.iter().any(|a| a.contains(ip))
    }
}

/// One zone's own transfer policy.
#[derive(Debug)]
struct Policy {
    apex: Name,
    acl: Vec<AclEntry>,
    key: Option<Name>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_by_zone_with_the_servers_default() {
        let mut c = Config::default();
        c.server.allow_transfer = vec!["10.0.0.0/8".parse().unwrap()];
        let mut z = shardns_config::ZoneConfig::new("a.test".parse().unwrap(), "f".into());
        z.allow_transfer = Some(vec!["127.0.0.2".parse().unwrap()]);
        c.zones.push(z);
        let acl = TransferAcl::new(&c);
        let a: Name = "A.TEST.".parse().unwrap();
        let other: Name = "example.test.".parse().unwrap();
        assert!(acl.allows(a.as_ref(), "127.0.0.2".parse().unwrap()));
        assert!(!acl.allows(a.as_ref(), "10.1.2.3".parse().unwrap()));
        assert!(acl.allows(other.as_ref(), "10.1.2.3".parse().unwrap()));
        assert!(!acl.allows(other.as_ref(), "127.0.0.1".parse().unwrap()));
        assert!(acl.allows_anyone());
        assert!(!TransferAcl::default().allows(a.as_ref(), "127.0.0.1".parse().unwrap()));
        assert!(!TransferAcl::default().allows_anyone());
    }
}
