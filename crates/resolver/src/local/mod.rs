//! Local zones and data, client access control and views: what the resolver answers, refuses
//! or drops by itself before the cache, Unbound's `local-zone`, `local-data`,
//! `access-control`, `view:` and `access-control-view`.
//!
//! Owns: [`Local`] (the global zones, the views and the client rules, built once from the
//! configuration), [`ZoneKind`] and [`Access`] (Unbound's zone types and access actions, by
//! their Unbound names), [`LocalRecord`] (one `local_data` record), [`Prefix`] (a client
//! address prefix) and what a lookup says ([`LocalAnswer`], [`Verdict`]).
//! Never: I/O, logging (an `inform` zone's match is returned for the caller to log),
//! parsing of record text (the configuration crate does it).
//!
//! A lookup first compares the query name's top label with the zones' (a scan of a few
//! short slices), then walks the name from its top label down, one hash lookup per label,
//! and stops at the first name that is neither a zone nor above one: a name outside every
//! local zone costs the scan alone (20 ns with the default zones, `benches/cache_hit.rs`).

mod access;
mod answer;
mod defaults;
mod zones;

#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::str::FromStr;

use shardns_wire::{MessageWriter, Name, NameRef, RType, Rcode};

pub use access::{Access, Prefix};
use zones::LocalZones;

/// A local zone's type: what its names get (Unbound's `local-zone` types, same names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ZoneKind {
    /// `deny`: local data answered, every other query dropped.
    Deny,
    /// `refuse`: local data answered, every other query REFUSED.
    Refuse,
    /// `static`: local data answered, every other query NXDOMAIN or NODATA (with the apex
    /// SOA if local data has one).
    Static,
    /// `transparent`: local data answered, NODATA for a local name without the type, other
    /// names resolved.
    Transparent,
    /// `typetransparent`: local data answered, everything else resolved.
    TypeTransparent,
    /// `redirect`: every name at and below the apex answered with the apex's data.
    Redirect,
    /// `inform`: as `transparent`, and the client logged.
    Inform,
    /// `inform_deny`: as `deny`, and the client logged.
    InformDeny,
    /// `inform_redirect`: as `redirect`, and the client logged.
    InformRedirect,
    /// `always_transparent`: local data ignored, resolved.
    AlwaysTransparent,
    /// `always_refuse`: local data ignored, REFUSED.
    AlwaysRefuse,
    /// `always_nxdomain`: local data ignored, NXDOMAIN.
    AlwaysNxdomain,
    /// `always_nodata`: local data ignored, NODATA.
    AlwaysNodata,
    /// `always_deny`: local data ignored, dropped.
    AlwaysDeny,
    /// `always_null`: local data answered, every other A question 0.0.0.0 and AAAA
    /// question ::, other types NODATA.
    AlwaysNull,
    /// `noview`: in a view, the name is looked up in the global zones instead.
    NoView,
    /// `nodefault`: no zone; only turns off the default zone of that name.
    NoDefault,
}

impl ZoneKind {
    const NAMES: [(&'static str, ZoneKind); 17] = [
        ("deny", ZoneKind::Deny),
        ("refuse", ZoneKind::Refuse),
        ("static", ZoneKind::Static),
        ("transparent", ZoneKind::Transparent),
        ("typetransparent", ZoneKind::TypeTransparent),
        ("redirect", ZoneKind::Redirect),
        ("inform", ZoneKind::Inform),
        ("inform_deny", ZoneKind::InformDeny),
        ("inform_redirect", ZoneKind::InformRedirect),
        ("always_transparent", ZoneKind::AlwaysTransparent),
        ("always_refuse", ZoneKind::AlwaysRefuse),
        ("always_nxdomain", ZoneKind::AlwaysNxdomain),
        ("always_nodata", ZoneKind::AlwaysNodata),
        ("always_deny", ZoneKind::AlwaysDeny),
        ("always_null", ZoneKind::AlwaysNull),
        ("noview", ZoneKind::NoView),
        ("nodefault", ZoneKind::NoDefault),
    ];

    /// The Unbound name of the type.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    /// Local data is not looked at (the `always_` types).
    fn ignores_data(self) -> bool {
        matches!(
            self,
            ZoneKind::AlwaysTransparent
                | ZoneKind::AlwaysRefuse
                | ZoneKind::AlwaysNxdomain
                | ZoneKind::AlwaysNodata
                | ZoneKind::AlwaysDeny
        )
    }

    fn redirects(self) -> bool {
        matches!(self, ZoneKind::Redirect | ZoneKind::InformRedirect)
    }

    fn informs(self) -> bool {
        matches!(
            self,
            ZoneKind::Inform | ZoneKind::InformDeny | ZoneKind::InformRedirect
        )
    }
}

impl FromStr for ZoneKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                let all: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                format!("unknown local zone type {s:?} (one of {})", all.join(", "))
            })
    }
}

/// One local record (class IN): `local_data`, or a default zone's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalRecord {
    /// Owner name.
    pub owner: Name,
    /// TTL in answers.
    pub ttl: u32,
    /// Type.
    pub rtype: RType,
    /// Rdata, uncompressed wire form.
    pub rdata: Vec<u8>,
}

/// One set of local zones and data: the global one, or a view's.
#[derive(Clone, Debug, Default)]
pub struct ZoneSetConfig {
    /// `local_zone`: (apex, type).
    pub zones: Vec<(Name, ZoneKind)>,
    /// `local_data` (and `local_data_ptr`, already turned into PTR records).
    pub data: Vec<LocalRecord>,
    /// Add Unbound's default zones (localhost, the loopback reverse zones, the RFC 6761
    /// and RFC 6303 names) that no zone here names (a view with zones of its own gets them
    /// too, as in Unbound).
    pub defaults: bool,
}

/// A view: a named set of local zones chosen by client address.
#[derive(Clone, Debug)]
pub struct ViewConfig {
    /// The view's name (`access_control_view` refers to it).
    pub name: String,
    /// Its zones and data.
    pub zones: ZoneSetConfig,
    /// A name matching no zone of the view is looked up in the global zones (Unbound's
    /// `view-first`).
    pub view_first: bool,
}

/// What [`Local::new`] is built from.
#[derive(Clone, Debug, Default)]
pub struct LocalConfig {
    /// The global zones and data.
    pub global: ZoneSetConfig,
    /// The views.
    pub views: Vec<ViewConfig>,
    /// Client prefixes and their access; longest prefix wins.
    pub access: Vec<(Prefix, Access)>,
    /// Client prefixes and the view (by name) their queries use; longest prefix wins.
    pub access_view: Vec<(Prefix, String)>,
    /// What a client that no prefix of `access` matches gets.
    pub default_access: Access,
}

struct View {
    zones: LocalZones,
    /// The view has neither zones nor data of its own: the global ones serve it.
    empty: bool,
    view_first: bool,
}

/// Local zones and data, access control and views, built once; `Send + Sync`.
pub struct Local {
    global: LocalZones,
    views: Vec<View>,
    access: access::Rules<Access>,
    access_view: access::Rules<usize>,
    default_access: Access,
}

impl core::fmt::Debug for Local {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Local")
            .field("global_zones", &self.global.zone_count())
            .field("views", &self.views.len())
            .finish()
    }
}

/// What the resolver does with a query the local zones looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not local: resolve it (or answer from the cache).
    Resolve,
    /// Send nothing.
    Drop,
    /// Answer REFUSED.
    Refuse,
    /// The answer is written (authoritative, with this rcode); `truncated`: it did not fit
    /// and was rolled back to the question.
    Answered {
        /// NOERROR or NXDOMAIN.
        rcode: Rcode,
        /// Set TC.
        truncated: bool,
    },
}

/// A lookup's result: the verdict and, for an `inform` zone, its apex (to log the client).
#[derive(Clone, Copy, Debug)]
pub struct LocalAnswer<'a> {
    /// What to do.
    pub verdict: Verdict,
    /// The `inform`, `inform_deny` or `inform_redirect` zone that matched.
    pub inform: Option<NameRef<'a>>,
}

impl Local {
    /// Builds the zones (names and data checked), the views and the rules. Errors name
    /// what is wrong: a view named twice, an `access_view` naming no view, local data
    /// above its zone's apex in a redirect zone, a CNAME beside other data.
    pub fn new(config: &LocalConfig) -> Result<Self, String> {
        let global = LocalZones::build(&config.global)?;
        let mut views = Vec::with_capacity(config.views.len());
        for (i, v) in config.views.iter().enumerate() {
            if config.views[..i].iter().any(|o| o.name == v.name) {
                return Err(format!("view {:?} is defined twice", v.name));
            }
            let zones =
                LocalZones::build(&v.zones).map_err(|e| format!("view {:?}: {e}", v.name))?;
            views.push(View {
                empty: v.zones.zones.is_empty() && v.zones.data.is_empty(),
                zones,
                view_first: v.view_first,
            });
        }
        let mut access_view = Vec::with_capacity(config.access_view.len());
        for (prefix, name) in &config.access_view {
            let i = config
                .views
                .iter()
                .position(|v| &v.name == name)
                .ok_or_else(|| format!("access_control_view names no view: {name:?}"))?;
            access_view.push((*prefix, i));
        }
        Ok(Self {
            global,
            views,
            access: access::Rules::new(&config.access),
            access_view: access::Rules::new(&access_view),
            default_access: config.default_access,
        })
    }

    /// The access a client has: its longest matching prefix's, else the default.
    pub fn access(&self, client: IpAddr) -> Access {
        self.access.find(client).unwrap_or(self.default_access)
    }

    /// Nothing local to look up: no zone (global or view) at all.
    pub fn has_zones(&self) -> bool {
        self.global.zone_count() > 0 || self.views.iter().any(|v| v.zones.zone_count() > 0)
    }

    /// Looks `qname`/`qtype` (class IN) up for `client` in its view's zones (or the global
    /// ones) and, if they answer, writes the answer after the question already in `w`.
    pub fn answer<'s>(
        &'s self,
        client: Option<IpAddr>,
        qname: NameRef<'_>,
        qtype: RType,
        w: &mut MessageWriter<'_>,
    ) -> LocalAnswer<'s> {
        let view = client
            .and_then(|ip| self.access_view.find(ip))
            .and_then(|i| self.views.get(i));
        let mut zones = &self.global;
        let mut fallback = false;
        if let Some(v) = view.filter(|v| !v.empty) {
            zones = &v.zones;
            fallback = v.view_first;
        }
        let mut found = zones.find(qname);
        if std::ptr::eq(zones, &self.global) {
            // Already the global set.
        } else if matches!(found, Some(z) if z.kind == ZoneKind::NoView)
            || (found.is_none() && fallback)
        {
            zones = &self.global;
            found = zones.find(qname);
        }
        let Some(zone) = found.filter(|z| z.kind != ZoneKind::NoView) else {
            return LocalAnswer {
                verdict: Verdict::Resolve,
                inform: None,
            };
        };
        let inform = zone.kind.informs().then(|| zone.apex.as_ref());
        LocalAnswer {
            verdict: zones.answer(zone, qname, qtype, w),
            inform,
        }
    }
}
