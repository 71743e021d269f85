//! catalog -- catalog zones (RFC 9432, version 2): what a catalog zone lists, read from a
//! built [`Zone`] ([`interpret`]), and the text of a catalog made from a list of members
//! ([`produce`]). No I/O: the server's secondary role turns members into zones, its
//! producer serves what [`produce`] writes.
//!
//! What a consumer must do with a catalog it cannot use (RFC 9432 §5) is split in two:
//! a catalog that is wrong as a whole (no version property, a version other than "2", two
//! versions, one member zone listed under two member IDs) is an [`Error`], and the consumer
//! keeps the members of the version it had; a member that is wrong on its own (more than
//! one PTR, a member name that is the root or inside the catalog itself) is left out and
//! said so in [`Catalog::ignored`], the others are used.

use crate::error::Error;
use crate::Zone;
use shardns_wire::{Name, NameRef, RType};
use std::collections::HashMap;
use std::fmt::Write as _;

/// One member zone of a catalog (RFC 9432 §4.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member ID: the label under `zones.<catalog>`, lower-cased.
    pub id: Vec<u8>,
    /// The member zone's name (the PTR's target).
    pub zone: Name,
    /// The `group` property (§4.3.2): which configuration the consumer applies (one
    /// character-string of UTF-8 text; anything else is left out).
    pub group: Option<String>,
    /// The change-of-ownership property (§4.3.1): the catalog the member moves to.
    pub coo: Option<Name>,
}

/// What a catalog lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// The members, in the zone's node order.
    pub members: Vec<Member>,
    /// Members and properties left out, each with why (for the log).
    pub ignored: Vec<String>,
}

/// The label text of `label` as it appears in a name (escaped).
fn label_text(label: &[u8]) -> String {
    let mut s = String::new();
    let _ = shardns_wire::name::write_label(label, &mut s);
    s
}

/// The character-strings of a TXT rdata (`None` if malformed; a stored zone never is).
fn txt_strings(rdata: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < rdata.len() {
        let n = rdata[at] as usize;
        out.push(rdata.get(at + 1..at + 1 + n)?);
        at += 1 + n;
    }
    Some(out)
}

/// Reads what the catalog `zone` lists (RFC 9432 §4). Records the consumer does not use
/// (the `ext` properties, anything else) are passed over, as §3 asks.
pub fn interpret(zone: &Zone) -> Result<Catalog, Error> {
    if zone.is_unavailable() {
        return Err(Error::Unavailable);
    }
    let apex = zone.apex();
    let version = Name::from_text("version", Some(apex)).map_err(|_| Error::NoVersion)?;
    let zones = Name::from_text("zones", Some(apex)).map_err(|_| Error::NoVersion)?;
    let versions: Vec<&[u8]> = zone
        .find(version.as_ref())
        .and_then(|n| n.rrset(RType::TXT))
        .map(|s| s.rdatas().collect())
        .unwrap_or_default();
    match versions.as_slice() {
        [] => return Err(Error::NoVersion),
        [one] => {
            let text: Vec<u8> = txt_strings(one).unwrap_or_default().concat();
            if text != b"2" {
                return Err(Error::BadVersion(String::from_utf8_lossy(&text).into()));
            }
        }
        more => return Err(Error::ManyVersions(more.len())),
    }
    let mut catalog = Catalog::default();
    // Properties seen before or after their member's node: by member ID.
    let mut groups: HashMap<Vec<u8>, Option<String>> = HashMap::new();
    let mut coos: HashMap<Vec<u8>, Name> = HashMap::new();
    let mut by_zone: HashMap<Name, Vec<u8>> = HashMap::new();
    let zones_ref = zones.as_ref();
    for id in 0..zone.node_count() as u32 {
        let node = zone.node(id);
        let name = node.name();
        let Some(depth) = name.strip_suffix(&zones_ref) else {
            continue;
        };
        match depth {
            1 => {
                let Some(ptrs) = node.rrset(RType::PTR) else {
                    continue;
                };
                let member_id = name.first_label().to_ascii_lowercase();
                let shown = label_text(&member_id);
                let targets: Vec<&[u8]> = ptrs.rdatas().collect();
                if targets.len() != 1 {
                    catalog.ignored.push(format!(
                        "member {shown}: {} PTR records (exactly one expected); left out",
                        targets.len()
                    ));
                    continue;
                }
                let Ok(target) = NameRef::from_wire(targets[0]) else {
                    catalog.ignored.push(format!(
                        "member {shown}: a PTR that is not a name; left out"
                    ));
                    continue;
                };
                if target.is_root() || target.ends_with(&apex) {
                    catalog.ignored.push(format!(
                        "member {shown}: {target} cannot be a member zone (the root, or inside the catalog); left out"
                    ));
                    continue;
                }
                let member = target.to_name();
                if let Some(first) = by_zone.get(&member) {
                    let mut ids = [label_text(first), shown];
                    ids.sort();
                    return Err(Error::Duplicate { zone: member, ids });
                }
                by_zone.insert(member.clone(), member_id.clone());
                catalog.members.push(Member {
                    id: member_id,
                    zone: member,
                    group: None,
                    coo: None,
                });
            }
            2 => {
                let property = name.first_label().to_ascii_lowercase();
                let Some(member_id) = name.parent().map(|p| p.first_label().to_ascii_lowercase())
                else {
                    continue;
                };
                match property.as_slice() {
                    b"group" => {
                        let Some(txt) = node.rrset(RType::TXT) else {
                            continue;
                        };
                        let values: Vec<&[u8]> = txt.rdatas().collect();
                        let one = match values.as_slice() {
                            [one] => txt_strings(one).filter(|s| s.len() == 1),
                            _ => None,
                        };
                        let group = match one.map(|s| std::str::from_utf8(s[0])) {
                            Some(Ok(text)) => Some(text.to_string()),
                            Some(Err(_)) => {
                                catalog.ignored.push(format!(
                                    "member {}: a group that is not UTF-8 text; the default template used",
                                    label_text(&member_id)
                                ));
                                None
                            }
                            None => {
                                catalog.ignored.push(format!(
                                    "member {}: {} group values (one string expected); the default template used",
                                    label_text(&member_id),
                                    values.len()
                                ));
                                None
                            }
                        };
                        groups.insert(member_id, group);
                    }
                    b"coo" => {
                        let target = node
                            .rrset(RType::PTR)
                            .and_then(|s| s.rdatas().next())
                            .and_then(|r| NameRef::from_wire(r).ok());
                        if let Some(t) = target {
                            coos.insert(member_id, t.to_name());
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for m in &mut catalog.members {
        m.group = groups.remove(&m.id).flatten();
        m.coo = coos.remove(&m.id);
    }
    Ok(catalog)
}

/// The member ID a producer gives `zone` (RFC 9432 §4.1 suggests a hash of the member's
/// name): 64-bit FNV-1a of its lower-cased wire form, in hex. The same name gets the same
/// ID in every version, so a member's state on the consumers survives a change elsewhere.
pub fn member_id(zone: NameRef<'_>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in zone.as_wire() {
        h ^= u64::from(b.to_ascii_lowercase());
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The zone text of a catalog at `apex` with `serial`, listing `members` (each with its
/// group, if any): SOA and NS as §4 wants them (`invalid.`, never queried), version "2",
/// one PTR per member under its [`member_id`]. A group longer than a character-string
/// (255 octets) is left out (the config refuses one).
pub fn produce(apex: NameRef<'_>, serial: u32, members: &[(Name, Option<String>)]) -> String {
    let mut text = String::with_capacity(128 + members.len() * 96);
    let _ = writeln!(
        text,
        "$ORIGIN {apex}\n@ 0 IN SOA invalid. invalid. {serial} 3600 600 2147483646 0\n\
         @ 0 IN NS invalid.\nversion 0 IN TXT \"2\""
    );
    for (zone, group) in members {
        let id = member_id(zone.as_ref());
        let _ = writeln!(text, "{id}.zones 0 IN PTR {zone}");
        if let Some(g) = group.as_ref().filter(|g| g.len() <= 255) {
            let _ = write!(text, "group.{id}.zones 0 IN TXT ");
            let _ = shardns_wire::text::write_quoted(g.as_bytes(), &mut text);
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests;
