//! secondary::catalog -- the consumer of catalog zones (RFC 9432): a secondary zone with
//! `catalog = "consume"` is read as a catalog each time a new version of it is served
//! (and from its copy at start), and its members become secondary zones of their own, set
//! up by a `[[template]]` (the member's `group` names it, else the catalog's first one).
//!
//! Each new catalog version is compared with the members the thread has for that catalog:
//! members added get a slot (a stand-in until their first transfer, or their copy kept on
//! disk), members gone lose theirs (the zone is removed from the set and its copy deleted),
//! members whose group changed move to the new template, a member whose ID changed is
//! transferred anew (RFC 9432 §5.6). Only what changed is handed to the main thread, which
//! swaps those zones alone into the set. A version that cannot be used (no or another
//! version property, a member listed twice) changes nothing: the members of the version
//! before stay, and the log says why. A member that is also a configured zone, or already a
//! member of another catalog, is left to its owner (§5.4), with a log line, unless its owner
//! names this catalog in the member's `coo` property: then it moves here (§5.5), keeping
//! its data, set up by this catalog's templates.

use super::{Flags, SecondaryZone, Slot, Thread};
use shardns_config::{AclEntry, Config, PrimaryTls, ZoneConfig};
use shardns_wire::tsig::Key;
use shardns_wire::Name;
use shardns_zone::catalog::{self, Member};
use shardns_zone::{Zone, ZoneChange};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tracing::{error, info, warn};

/// How the members of one consumed catalog are set up.
#[derive(Debug, Clone, PartialEq)]
pub struct Consumer {
    /// The first is the default; a member's group picks the one of the same name.
    templates: Vec<Template>,
}

/// One `[[template]]`, with the catalog's primaries and key where it has none.
#[derive(Debug, Clone, PartialEq)]
struct Template {
    name: String,
    primaries: Vec<SocketAddr>,
    key: Option<Key>,
    tls: Option<PrimaryTls>,
    /// A path with `{zone}` for the member's name.
    file: Option<String>,
    /// Whose updates to the members are forwarded to their primaries.
    forwarding: Vec<AclEntry>,
}

/// What a slot brought by a catalog remembers of it.
#[derive(Debug, Clone)]
pub(super) struct MemberOf {
    catalog: Name,
    id: Vec<u8>,
    group: Option<String>,
    /// The catalog its owner says it moves to (the `coo` property, RFC 9432 §5.5).
    coo: Option<Name>,
}

impl MemberOf {
    /// The catalog's apex.
    pub(super) fn catalog(&self) -> &Name {
        &self.catalog
    }
}

impl Consumer {
    /// The member setup of the catalog zone `zone` (`key`: its primary key).
    pub fn new(config: &Config, zone: &ZoneConfig, key: &Option<Key>) -> Self {
        let from_catalog = Template {
            name: String::new(),
            primaries: zone.primary.clone(),
            key: key.clone(),
            tls: zone.primary_tls.clone(),
            file: None,
            forwarding: Vec::new(),
        };
        let mut templates: Vec<Template> = zone
            .catalog_templates
            .iter()
            .filter_map(|n| config.templates.iter().find(|t| &t.name == n))
            .map(|t| Template {
                name: t.name.clone(),
                primaries: if t.primary.is_empty() {
                    zone.primary.clone()
                } else {
                    t.primary.clone()
                },
                key: match &t.primary_key {
                    Some(_) => super::key_named(config, t.primary_key.as_ref()),
                    None => key.clone(),
                },
                tls: t.primary_tls.clone().or_else(|| zone.primary_tls.clone()),
                file: t.file.clone(),
                forwarding: t.update_forwarding.clone(),
            })
            .collect();
        if templates.is_empty() {
            templates.push(from_catalog);
        }
        Consumer { templates }
    }

    /// The template for a member of `group`: the one named so, else the first.
    fn template(&self, group: Option<&str>) -> &Template {
        group
            .and_then(|g| self.templates.iter().find(|t| t.name == g))
            .unwrap_or(&self.templates[0])
    }
}

/// Where `member` keeps its copy under `pattern`: `{zone}` is its file stem (one per
/// zone, nothing a catalog could use to name another path:
/// [`shardns_wire::NameRef::file_stem`]); `None` for the root, which no catalog may bring.
fn member_file(pattern: &str, member: &Name) -> Option<PathBuf> {
    (!member.as_ref().is_root())
        .then(|| PathBuf::from(pattern.replace("{zone}", &member.as_ref().file_stem())))
}

impl Thread {
    /// Reads the catalog of slot `i` (its current version) and makes the member slots
    /// match it; then reads again, once, the catalogs some of its members now say they
    /// move to (their version may have listed them before the move was said).
    pub(super) fn apply_catalog(&mut self, i: usize) {
        for target in self.apply_one_catalog(i) {
            if let Some(&t) = self.by_name.get(&target) {
                if self.slots[t].zone.catalog.is_some() {
                    let _ = self.apply_one_catalog(t);
                }
            }
        }
    }

    /// [`Thread::apply_catalog`] without the second reading; returns the catalogs members
    /// were newly told to move to.
    fn apply_one_catalog(&mut self, i: usize) -> Vec<Name> {
        let (Some(consumer), Some(zone)) = (
            self.slots[i].zone.catalog.clone(),
            self.slots[i].current.clone(),
        ) else {
            return Vec::new();
        };
        let cat = self.slots[i].zone.name.clone();
        let listed = match catalog::interpret(&zone) {
            Ok(c) => c,
            Err(e) => {
                let kept = self.members_of(&cat).len();
                self.shared
                    .plane()
                    .stats
                    .catalog_rejected
                    .fetch_add(1, Relaxed);
                error!(
                    "catalog {cat}: serial {} not used, {e}; keeping the {kept} member zones of the version before",
                    zone.serial()
                );
                return Vec::new();
            }
        };
        for note in listed.ignored.iter().take(20) {
            warn!("catalog {cat}: {note}");
        }
        if listed.ignored.len() > 20 {
            warn!(
                "catalog {cat}: {} more members or properties left out",
                listed.ignored.len() - 20
            );
        }
        let wanted: HashMap<&Name, &Member> = listed.members.iter().map(|m| (&m.zone, m)).collect();
        let mut changes = Vec::new();
        let (mut added, mut removed, mut moved, mut reset) = (0, 0, 0, 0);
        let mut migrated = 0;
        let mut told_to_move = Vec::new();
        // Members gone.
        for name in self.members_of(&cat) {
            if !wanted.contains_key(&name) {
                changes.push(self.remove_member(&name));
                removed += 1;
            }
        }
        for m in &listed.members {
            match self.by_name.get(&m.zone).copied() {
                Some(at) => {
                    let slot = &self.slots[at];
                    let Some(of) = slot.member.clone() else {
                        warn!(
                            "catalog {cat}: member {} is a configured zone; left as configured",
                            m.zone
                        );
                        continue;
                    };
                    if of.catalog != cat {
                        if of.coo.as_ref() != Some(&cat) {
                            warn!(
                                "catalog {cat}: member {} belongs to catalog {}; left there",
                                m.zone, of.catalog
                            );
                            continue;
                        }
                        // RFC 9432 §5.5: its owner said it moves here.
                        info!(
                            "catalog {cat}: member {} moves here from catalog {} (change of ownership)",
                            m.zone, of.catalog
                        );
                        if let Some(of) = &mut self.slots[at].member {
                            of.catalog = cat.clone();
                            of.coo = None;
                            of.id = m.id.clone();
                        }
                        self.move_member(at, &consumer, m);
                        migrated += 1;
                        continue;
                    }
                    if of.coo != m.coo {
                        if let Some(to) = &m.coo {
                            told_to_move.push(to.clone());
                        }
                        if let Some(of) = &mut self.slots[at].member {
                            of.coo = m.coo.clone();
                        }
                    }
                    if of.group != m.group {
                        self.move_member(at, &consumer, m);
                        moved += 1;
                    }
                    if of.id != m.id {
                        // RFC 9432 §5.6: a new member ID resets the member.
                        let slot = &mut self.slots[at];
                        info!(
                            "catalog {cat}: member {} has a new ID; transferring it anew",
                            m.zone
                        );
                        slot.force_axfr = true;
                        slot.again = slot.in_flight;
                        slot.next_check = std::time::Instant::now();
                        if let Some(of) = &mut slot.member {
                            of.id = m.id.clone();
                        }
                        reset += 1;
                    }
                }
                None if self.configured.contains(&m.zone) => {
                    warn!(
                        "catalog {cat}: member {} is a configured zone; left as configured",
                        m.zone
                    );
                }
                None => {
                    if let Some(change) = self.add_member(&cat, &consumer, m) {
                        changes.push(change);
                        added += 1;
                    }
                }
            }
        }
        let total = self.members_of(&cat).len();
        info!(
            "catalog {cat}: serial {}: {total} member zones ({added} added, {removed} removed, {moved} moved to another template, {reset} reset, {migrated} from another catalog)",
            zone.serial()
        );
        self.shared
            .plane()
            .stats
            .catalog_members
            .fetch_add(added as u64, Relaxed);
        self.shared
            .plane()
            .stats
            .catalog_members
            .fetch_sub(removed as u64, Relaxed);
        self.send(changes);
        self.count_unavailable();
        told_to_move
    }

    /// The members the thread has for the catalog at `cat`.
    fn members_of(&self, cat: &Name) -> Vec<Name> {
        self.slots
            .iter()
            .filter(|s| s.member.as_ref().is_some_and(|m| &m.catalog == cat))
            .map(|s| s.zone.name.clone())
            .collect()
    }

    /// A slot for a new member; what to serve for it now (its copy, or a stand-in).
    fn add_member(&mut self, cat: &Name, consumer: &Consumer, m: &Member) -> Option<ZoneChange> {
        let t = consumer.template(m.group.as_deref());
        let file = match &t.file {
            Some(pattern) => match member_file(pattern, &m.zone) {
                Some(f) => Some(f),
                None => {
                    warn!(
                        "catalog {cat}: member {} has a name that cannot name a file; left out",
                        m.zone
                    );
                    return None;
                }
            },
            None => None,
        };
        let zone = SecondaryZone {
            name: m.zone.clone(),
            file,
            primaries: t.primaries.clone(),
            tls: t.tls.clone(),
            key: t.key.clone(),
            catalog: None,
            // Templates do not sign: members are served as transferred.
            sign: None,
            update_forwarding: t.forwarding.clone(),
        };
        let flags = Arc::new(Flags::default());
        if let Some(inbox) = &self.shared.plane().secondary {
            inbox.add(&zone, Arc::clone(&flags), true);
        }
        let member = MemberOf {
            catalog: cat.clone(),
            id: m.id.clone(),
            group: m.group.clone(),
            coo: m.coo.clone(),
        };
        let mut slot = Slot::new(zone, flags, Some(member));
        let change = super::store::load_kept_copy(&mut slot)
            .unwrap_or_else(|| ZoneChange::Put(Arc::new(Zone::unavailable(m.zone.clone()))));
        self.by_name.insert(m.zone.clone(), self.slots.len());
        self.slots.push(slot);
        self.report(self.slots.len() - 1);
        Some(change)
    }

    /// Moves member `at` to the template of its new group (primaries, key, file).
    fn move_member(&mut self, at: usize, consumer: &Consumer, m: &Member) {
        let t = consumer.template(m.group.as_deref());
        let slot = &mut self.slots[at];
        let file = t.file.as_ref().and_then(|p| member_file(p, &m.zone));
        if file != slot.zone.file {
            if let Some(old) = &slot.zone.file {
                if super::store::check_owner(old, &m.zone).is_ok() {
                    let _ = std::fs::remove_file(old);
                }
            }
            if let (Some(new), Some(current)) = (&file, &slot.current) {
                if let Err(e) = super::store::write_copy(new, current, "moved to another group") {
                    warn!(
                        "zone {}: cannot keep its copy in {}: {e}",
                        m.zone,
                        new.display()
                    );
                }
            }
        }
        info!(
            "zone {}: group {:?} -> {:?}, template {:?}",
            m.zone,
            slot.member.as_ref().and_then(|o| o.group.clone()),
            m.group,
            t.name
        );
        slot.zone.file = file;
        slot.zone.primaries = t.primaries.clone();
        slot.zone.key = t.key.clone();
        slot.zone.tls = t.tls.clone();
        slot.zone.update_forwarding = t.forwarding.clone();
        slot.preferred = 0;
        if let Some(of) = &mut slot.member {
            of.group = m.group.clone();
        }
        if let Some(inbox) = &self.shared.plane().secondary {
            inbox.add(&slot.zone, Arc::clone(&slot.flags), true);
        }
        // The new primaries may have another version.
        slot.next_check = std::time::Instant::now();
    }

    /// Drops the member at `name`: its slot, its NOTIFY entry, its copy on disk.
    fn remove_member(&mut self, name: &Name) -> ZoneChange {
        if let Some(at) = self.by_name.remove(name) {
            let slot = self.slots.swap_remove(at);
            if let Some(moved) = self.slots.get(at) {
                self.by_name.insert(moved.zone.name.clone(), at);
            }
            if let Some(inbox) = &self.shared.plane().secondary {
                inbox.remove(name);
            }
            if let Some(path) = &slot.zone.file {
                let removed =
                    super::store::check_owner(path, name).and_then(|()| std::fs::remove_file(path));
                match removed {
                    Ok(()) => info!(
                        "zone {name}: removed from its catalog; {} deleted",
                        path.display()
                    ),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        info!("zone {name}: removed from its catalog")
                    }
                    Err(e) => warn!(
                        "zone {name}: removed from its catalog; cannot delete {}: {e}",
                        path.display()
                    ),
                }
            } else {
                info!("zone {name}: removed from its catalog");
            }
        }
        ZoneChange::Remove(name.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::member_file;
    use shardns_wire::Name;
    use std::path::PathBuf;

    #[test]
    fn templates_take_primary_tls_else_the_catalogs() {
        use super::Consumer;
        use shardns_config::{Config, PrimaryTls};
        let mut config = Config::from_toml(
            "[[zone]]\nname = \"cat.\"\nprimary = [\"127.0.0.1:853\"]\ncatalog = \"consume\"\n\
             catalog_templates = [\"own\", \"inherits\"]\n\
             [[template]]\nname = \"own\"\n[[template]]\nname = \"inherits\"\n",
            std::path::Path::new("/etc/shardns/shardns.toml"),
        )
        .unwrap();
        let tls = |name: &str| {
            let mut t = PrimaryTls::default();
            t.ca_file = Some(PathBuf::from("/ca.pem"));
            t.name = Some(name.into());
            t
        };
        config.zones[0].primary_tls = Some(tls("catalog"));
        config.templates[0].primary_tls = Some(tls("own"));
        let c = Consumer::new(&config, &config.zones[0], &None);
        assert_eq!(c.template(Some("own")).tls, Some(tls("own")));
        assert_eq!(c.template(Some("inherits")).tls, Some(tls("catalog")));
        config.zones[0].primary_tls = None;
        let c = Consumer::new(&config, &config.zones[0], &None);
        assert_eq!(c.template(Some("inherits")).tls, None);
    }

    #[test]
    fn member_files_are_one_per_zone_in_the_directory() {
        let n = |s: &str| s.parse::<Name>().unwrap();
        let f = |s: &str| member_file("/d/{zone}.zone", &n(s)).unwrap();
        assert_eq!(
            member_file("/var/lib/shardns/{zone}.zone", &n("Example.COM.")),
            Some(PathBuf::from("/var/lib/shardns/example.com.zone"))
        );
        assert_eq!(f("a\\/b.test."), PathBuf::from("/d/a%2fb.test.zone"));
        assert_ne!(f("a/b.test."), f("a_b.test."));
        assert_eq!(f("a\\ b.test."), PathBuf::from("/d/a%20b.test.zone"));
        assert_eq!(f("\\..test."), PathBuf::from("/d/%2e.test.zone"));
        assert_eq!(member_file("/d/{zone}", &Name::root()), None);
    }
}
