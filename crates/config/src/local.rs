//! config::local -- the resolver's local zones and data, client access control and views:
//! `resolver.local_zone`, `local_data`, `local_data_ptr`, `local_zone_defaults`,
//! `access_control`, `access_control_view` and the `[[resolver.view]]` tables (Unbound's
//! `local-zone`, `local-data`, `local-data-ptr`, `access-control`, `access-control-view`
//! and `view:`). Each entry is parsed as it is read; the views' names are checked after the whole file is read.

use std::net::IpAddr;
use std::path::Path;
use std::str::FromStr;

use serde::Deserialize;
use shardns_wire::{Name, RType};
use shardns_zone::scan::{scan_text, ScanOptions};

use super::validate::from_strs;
use super::{AclEntry, Config, ConfigError};

/// Unbound's local zone types we serve (`local_zone = ["NAME TYPE"]`).
pub const LOCAL_ZONE_TYPES: [&str; 17] = [
    "deny",
    "refuse",
    "static",
    "transparent",
    "typetransparent",
    "redirect",
    "inform",
    "inform_deny",
    "inform_redirect",
    "always_transparent",
    "always_refuse",
    "always_nxdomain",
    "always_nodata",
    "always_deny",
    "always_null",
    "noview",
    "nodefault",
];

/// Unbound's access-control actions we serve (`access_control = ["PREFIX ACTION"]`).
pub const ACCESS_ACTIONS: [&str; 7] = [
    "allow",
    "deny",
    "refuse",
    "allow_snoop",
    "allow_setrd",
    "deny_non_local",
    "refuse_non_local",
];

/// `"NAME TYPE"`: a local zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalZone {
    /// The apex.
    pub name: Name,
    /// The type, one of [`LOCAL_ZONE_TYPES`] (lower case).
    pub kind: String,
}

impl FromStr for LocalZone {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut f = s.split_whitespace();
        let (Some(name), Some(kind), None) = (f.next(), f.next(), f.next()) else {
            return Err(format!("expected \"NAME TYPE\", got {s:?}"));
        };
        let name = absolute(name)?;
        let kind = kind.to_ascii_lowercase();
        if !LOCAL_ZONE_TYPES.contains(&kind.as_str()) {
            return Err(format!(
                "unknown local zone type {kind:?} (one of {})",
                LOCAL_ZONE_TYPES.join(", ")
            ));
        }
        Ok(Self { name, kind })
    }
}

fn absolute(name: &str) -> Result<Name, String> {
    let name = if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    };
    name.parse::<Name>()
        .map_err(|e| format!("bad name {name:?}: {e}"))
}

/// `"OWNER [TTL] [IN] TYPE RDATA"`: one local record in zone-file form (relative names are
/// taken as absolute; TTL 3600 when absent, as Unbound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalData {
    /// Owner name.
    pub owner: Name,
    /// TTL.
    pub ttl: u32,
    /// Type.
    pub rtype: RType,
    /// Rdata, uncompressed wire form.
    pub rdata: Vec<u8>,
}

impl FromStr for LocalData {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        // One line, no directive: `$INCLUDE` would read a file.
        if s.contains(['\n', '\r']) || s.trim_start().starts_with('$') {
            return Err(format!("one record on one line expected, got {s:?}"));
        }
        let opts = ScanOptions::new(Name::root());
        let scanned = scan_text(s.as_bytes(), Path::new("local_data"), &opts)
            .map_err(|e| format!("bad record {s:?}: {e}"))?;
        let mut out = None;
        for chunk in &scanned.chunks {
            for item in &chunk.items {
                if out.is_some() {
                    return Err(format!("one record expected, got {s:?}"));
                }
                if item.class != shardns_wire::Class::IN {
                    return Err(format!("only class IN is served locally: {s:?}"));
                }
                out = Some(Self {
                    owner: chunk.owner(item).to_name(),
                    ttl: item.ttl,
                    rtype: item.rtype,
                    rdata: chunk.rdata(item).to_vec(),
                });
            }
        }
        out.ok_or_else(|| format!("no record in {s:?}"))
    }
}

/// `"ADDR NAME"`: a PTR record for the address's reverse name (Unbound's
/// `local-data-ptr`), TTL 3600.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDataPtr(pub LocalData);

impl FromStr for LocalDataPtr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut f = s.split_whitespace();
        let (Some(addr), Some(target), None) = (f.next(), f.next(), f.next()) else {
            return Err(format!("expected \"ADDR NAME\", got {s:?}"));
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|e| format!("bad address {addr:?}: {e}"))?;
        let owner = match addr {
            IpAddr::V4(v4) => {
                let o = v4.octets();
                format!("{}.{}.{}.{}.in-addr.arpa.", o[3], o[2], o[1], o[0])
            }
            IpAddr::V6(v6) => {
                let mut n = String::new();
                for b in v6.octets().iter().rev() {
                    n.push_str(&format!("{:x}.{:x}.", b & 0xf, b >> 4));
                }
                n + "ip6.arpa."
            }
        };
        let target = absolute(target)?;
        format!("{owner} 3600 IN PTR {target}").parse().map(Self)
    }
}

/// `"PREFIX ACTION"`: what clients in a prefix may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRule {
    /// The client prefix.
    pub prefix: AclEntry,
    /// One of [`ACCESS_ACTIONS`] (lower case).
    pub action: String,
}

impl FromStr for AccessRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut f = s.split_whitespace();
        let (Some(prefix), Some(action), None) = (f.next(), f.next(), f.next()) else {
            return Err(format!("expected \"PREFIX ACTION\", got {s:?}"));
        };
        let action = action.to_ascii_lowercase();
        if !ACCESS_ACTIONS.contains(&action.as_str()) {
            return Err(format!(
                "unknown access action {action:?} (one of {})",
                ACCESS_ACTIONS.join(", ")
            ));
        }
        Ok(Self {
            prefix: prefix.parse()?,
            action,
        })
    }
}

/// `"PREFIX VIEW"`: the view clients in a prefix use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessView {
    /// The client prefix.
    pub prefix: AclEntry,
    /// A `[[resolver.view]]`'s name.
    pub view: String,
}

impl FromStr for AccessView {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut f = s.split_whitespace();
        let (Some(prefix), Some(view), None) = (f.next(), f.next(), f.next()) else {
            return Err(format!("expected \"PREFIX VIEW\", got {s:?}"));
        };
        Ok(Self {
            prefix: prefix.parse()?,
            view: view.to_string(),
        })
    }
}

/// `[[resolver.view]]`: local zones and data for the clients `access_control_view` sends
/// here (Unbound's `view:`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ViewConfig {
    /// The view's name.
    pub name: String,
    /// As `resolver.local_zone`.
    #[serde(deserialize_with = "from_strs")]
    pub local_zone: Vec<LocalZone>,
    /// As `resolver.local_data`.
    #[serde(deserialize_with = "from_strs")]
    pub local_data: Vec<LocalData>,
    /// As `resolver.local_data_ptr`.
    #[serde(deserialize_with = "from_strs")]
    pub local_data_ptr: Vec<LocalDataPtr>,
    /// A name no zone of the view holds is looked up in the global zones (Unbound's
    /// `view-first`; off by default).
    pub view_first: bool,
}

/// Views named once each, with a name; `access_control_view` names only those.
pub(crate) fn check(config: &Config, path: &Path) -> Result<(), ConfigError> {
    let error = |key: String, message: String| ConfigError {
        path: path.into(),
        position: None,
        key: Some(key),
        message,
    };
    let r = &config.resolver;
    for (i, v) in r.view.iter().enumerate() {
        if v.name.is_empty() {
            return Err(error(format!("resolver.view[{i}].name"), "missing".into()));
        }
        if r.view[..i].iter().any(|o| o.name == v.name) {
            let message = format!("a second view named {:?}", v.name);
            return Err(error(format!("resolver.view[{i}].name"), message));
        }
    }
    for (i, a) in r.access_control_view.iter().enumerate() {
        if !r.view.iter().any(|v| v.name == a.view) {
            let message = format!("no [[resolver.view]] named {:?}", a.view);
            return Err(error(format!("resolver.access_control_view[{i}]"), message));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml(text, Path::new("/etc/shardns/shardns.toml"))
    }

    #[test]
    fn local_zones_data_access_and_views_parse() {
        let c = parse(
            r#"
[resolver]
local_zone = ["example.com static", "ads.example REDIRECT"]
local_data = ["www.example.com. 300 IN A 192.0.2.1", "example.com. TXT \"two words\"", "ads.example A 127.0.0.1"]
local_data_ptr = ["192.0.2.1 www.example.com", "2001:db8::1 v6.example.com."]
local_zone_defaults = false
access_control = ["10.0.0.0/8 allow_snoop", "0.0.0.0/0 refuse", "::/0 deny"]
access_control_view = ["10.1.0.0/16 inside"]

[[resolver.view]]
name = "inside"
local_zone = ["example.com transparent"]
local_data = ["www.example.com. A 10.1.0.1"]
view_first = true
"#,
        )
        .unwrap();
        let r = &c.resolver;
        assert_eq!(r.local_zone[1].kind, "redirect");
        assert_eq!(r.local_data[0].ttl, 300);
        assert_eq!(r.local_data[1].ttl, 3600);
        assert_eq!(r.local_data[1].rdata, b"\x09two words");
        assert_eq!(r.local_data[2].owner, "ads.example.".parse().unwrap());
        let odd: LocalData = "t.lan. TXT \"$5 (or so); really\"".parse().unwrap();
        assert_eq!(odd.rdata, b"\x12$5 (or so); really");
        assert_eq!(
            r.local_data_ptr[0].0.owner,
            "1.2.0.192.in-addr.arpa.".parse().unwrap()
        );
        let v6 = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.";
        assert_eq!(r.local_data_ptr[1].0.owner, v6.parse().unwrap());
        assert!(!r.local_zone_defaults);
        assert_eq!(r.access_control[0].action, "allow_snoop");
        assert_eq!(r.access_control[0].prefix.len, 8);
        assert_eq!(r.view[0].name, "inside");
        assert!(r.view[0].view_first);
        assert_eq!(r.view[0].local_data[0].ttl, 3600);
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        for (text, want) in [
            (
                "local_zone = [\"example.com stattic\"]",
                "unknown local zone type",
            ),
            ("local_zone = [\"example.com\"]", "expected \"NAME TYPE\""),
            (
                "local_data = [\"www.example.com. A 300.1.1.1\"]",
                "bad record",
            ),
            (
                "local_data = [\"a. A 192.0.2.1\\nb. A 192.0.2.2\"]",
                "one record",
            ),
            ("local_data = [\"a. CH TXT x\"]", "only IN"),
            (
                "local_data = [\"$INCLUDE /etc/passwd\"]",
                "one record on one line",
            ),
            ("local_data_ptr = [\"192.0.2.300 x.\"]", "bad address"),
            (
                "access_control = [\"10.0.0.0/8 permit\"]",
                "unknown access action",
            ),
            (
                "access_control = [\"10.0.0.0/33 allow\"]",
                "bad prefix length",
            ),
            (
                "access_control_view = [\"10.0.0.0/8 nope\"]",
                "no [[resolver.view]]",
            ),
        ] {
            let e = parse(&format!("[resolver]\n{text}\n")).unwrap_err();
            assert!(e.message.contains(want), "{text}: {e}");
        }
        let twice = "[[resolver.view]]\nname = \"a\"\n[[resolver.view]]\nname = \"a\"\n";
        assert!(parse(twice).unwrap_err().message.contains("second view"));
    }
}
