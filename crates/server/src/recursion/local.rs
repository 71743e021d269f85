//! recursion::local -- the resolver's local zones, client access rules and views as the
//! worker applies them to a query (the lookups themselves are `shardns_resolver::local`'s),
//! and their build from `[resolver]`.

use std::net::IpAddr;
use std::sync::Arc;

use shardns_config::{AclEntry, ResolverConfig};
use shardns_resolver::local::{
    Access, Local, LocalConfig, LocalRecord, Prefix, Verdict, ViewConfig, ZoneKind, ZoneSetConfig,
};
use shardns_wire::{MessageWriter, NameRef, RType, Rcode};

use crate::stats::WorkerStats;

fn prefix(a: &AclEntry) -> Prefix {
    Prefix {
        addr: a.addr,
        len: a.len,
    }
}

fn zone_set(
    zones: &[shardns_config::local::LocalZone],
    data: &[shardns_config::local::LocalData],
    ptr: &[shardns_config::local::LocalDataPtr],
    defaults: bool,
) -> Result<ZoneSetConfig, String> {
    let record = |d: &shardns_config::local::LocalData| LocalRecord {
        owner: d.owner.clone(),
        ttl: d.ttl,
        rtype: d.rtype,
        rdata: d.rdata.clone(),
    };
    Ok(ZoneSetConfig {
        zones: zones
            .iter()
            .map(|z| Ok((z.name.clone(), z.kind.parse::<ZoneKind>()?)))
            .collect::<Result<_, String>>()?,
        data: data
            .iter()
            .chain(ptr.iter().map(|p| &p.0))
            .map(record)
            .collect(),
        defaults,
    })
}

/// The local zones, access rules and views of `[resolver]`; `None` when there are none of
/// them (no zone, default ones included, no access rule, no view): the worker then checks
/// `resolver.allow` alone and never looks a name up.
pub(crate) fn build(r: &ResolverConfig) -> Result<Option<Arc<Local>>, String> {
    let global = zone_set(
        &r.local_zone,
        &r.local_data,
        &r.local_data_ptr,
        r.local_zone_defaults,
    )?;
    let mut views = Vec::with_capacity(r.view.len());
    for v in &r.view {
        views.push(ViewConfig {
            name: v.name.clone(),
            // As Unbound, a view's zones include the default ones (its own nodefault lines
            // and zones of the same name replace them; the global ones do not).
            zones: zone_set(
                &v.local_zone,
                &v.local_data,
                &v.local_data_ptr,
                r.local_zone_defaults,
            )?,
            view_first: v.view_first,
        });
    }
    // `allow` entries are `allow` rules; an access_control rule for the same prefix wins.
    let mut access: Vec<(Prefix, Access)> =
        r.allow.iter().map(|a| (prefix(a), Access::Allow)).collect();
    for rule in &r.access_control {
        access.push((prefix(&rule.prefix), rule.action.parse()?));
    }
    let config = LocalConfig {
        global,
        views,
        access,
        access_view: r
            .access_control_view
            .iter()
            .map(|a| (prefix(&a.prefix), a.view.clone()))
            .collect(),
        default_access: Access::Refuse,
    };
    let local = Local::new(&config)?;
    let none = !local.has_zones() && r.access_control.is_empty() && r.view.is_empty();
    Ok((!none).then(|| Arc::new(local)))
}

/// What the worker does with a query after its client's access and the local zones.
pub(crate) enum Step {
    /// Go on: recursion (RD set, or set by `allow_setrd`) or the cache (`allow_snoop`).
    Go {
        /// Treat the query as if RD were set.
        rd: bool,
        /// Answer from the cache only: no RD, client with `allow_snoop`.
        snoop: bool,
    },
    /// Send nothing.
    Drop,
    /// Refuse it as the server refuses what it does not serve (client access `refuse`).
    Refuse,
    /// Answer with this rcode, after what the writer holds: local data, a local zone's
    /// REFUSED (authoritative, `aa`, as Unbound), or REFUSED to a query without RD.
    Answered {
        rcode: Rcode,
        truncated: bool,
        aa: bool,
    },
}

/// Applies Unbound's order: `deny`/`refuse` clients first, then the local zones (for every
/// other client, RD or not), then `deny_non_local`/`refuse_non_local`, then RD.
pub(crate) fn step(
    local: &Local,
    client: IpAddr,
    rd: bool,
    qname: NameRef<'_>,
    qtype: RType,
    w: &mut MessageWriter<'_>,
    stats: &WorkerStats,
) -> Step {
    let access = local.access(client);
    match access {
        Access::Deny => {
            stats.resolver_dropped.add(1);
            return Step::Drop;
        }
        Access::Refuse => {
            stats.resolver_refused.add(1);
            return Step::Refuse;
        }
        _ => {}
    }
    let found = local.answer(Some(client), qname, qtype, w);
    if let Some(zone) = found.inform {
        tracing::info!("local zone {zone} inform: {client} asked {qname} {qtype}");
    }
    match found.verdict {
        Verdict::Resolve => {}
        Verdict::Drop => {
            stats.resolver_dropped.add(1);
            return Step::Drop;
        }
        Verdict::Refuse => {
            stats.resolver_local.add(1);
            return Step::Answered {
                rcode: Rcode::REFUSED,
                truncated: false,
                aa: true,
            };
        }
        Verdict::Answered { rcode, truncated } => {
            stats.resolver_local.add(1);
            return Step::Answered {
                rcode,
                truncated,
                aa: true,
            };
        }
    }
    match access {
        Access::DenyNonLocal => {
            stats.resolver_dropped.add(1);
            Step::Drop
        }
        Access::RefuseNonLocal => {
            stats.resolver_refused.add(1);
            Step::Refuse
        }
        Access::AllowSetRd => Step::Go {
            rd: true,
            snoop: false,
        },
        Access::AllowSnoop => Step::Go { rd, snoop: !rd },
        _ if rd => Step::Go { rd, snoop: false },
        // Not a recursive query, and no cache snooping: REFUSED, with RA as Unbound.
        _ => Step::Answered {
            rcode: Rcode::REFUSED,
            truncated: false,
            aa: false,
        },
    }
}
