//! parent::task -- what the parent's DS check looks for, from the zone's keys and CDS mode
//! at a moment (no I/O): a new KSK or CSK waiting for its DS ([`Goal::Submit`]), keys
//! withdrawn whose DS should be gone ([`Goal::Withdraw`], the last step of double-DS), an
//! algorithm rollover's old algorithm to leave the DS set before its keys leave the zone
//! ([`Goal::OldAlgorithm`]), or
//! no DS at all (`delete-dnssec`: [`Goal::Insecure`]); and whether the answers of the
//! parent's servers meet it. Also the DS set the parent is to hold then, for the push.

use shardns_dnssec::keys::KeyMeta;
use shardns_dnssec::roll::{self, KeyState};
use shardns_dnssec::{ds_rdata, CdsPublish, DigestType, Role};
use shardns_wire::{rdata, Name, RType};
use std::collections::BTreeSet;

/// One key as the check sees it: its times and its DNSKEY rdata.
#[derive(Debug, Clone)]
pub(super) struct KeyView {
    pub meta: KeyMeta,
    pub dnskey: Vec<u8>,
}

/// What every server of the parent must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Goal {
    /// A DS of the new key `tag` (the old key's may still be there: double-DS).
    Submit { tag: u16, dnskey: Vec<u8> },
    /// A DS of one of the keys in `current`, and none of the withdrawn keys `gone`.
    Withdraw {
        gone: Vec<(u16, Vec<u8>)>,
        current: Vec<Vec<u8>>,
    },
    /// An algorithm rollover's DS change: a DS of one of the keys in `current`, and none of
    /// the old algorithms `algorithms` (the old keys `old`, whose DNSKEYs stay until then).
    OldAlgorithm {
        old: Vec<u16>,
        algorithms: Vec<u8>,
        current: Vec<Vec<u8>>,
    },
    /// No DS at all (RFC 8078: the zone goes insecure).
    Insecure,
    /// A DS of one of the keys in `current`, nothing else asked (with a push only: the
    /// first DS of a zone, or one given back after going insecure).
    Present { current: Vec<Vec<u8>> },
}

/// A check to make: its goal, and the DS set (rdata) the parent is to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Want {
    pub goal: Goal,
    pub ds: Vec<Vec<u8>>,
}

/// What the check already confirmed, kept across restarts (`parent::Done`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Confirmed {
    /// Withdrawn keys whose DS every server was seen without.
    pub withdrawn: BTreeSet<u16>,
    /// Every server was seen with no DS while the mode was `delete-dnssec`.
    pub insecure: bool,
}

/// A KSK or CSK, not a ZSK.
fn signs_keys(m: &KeyMeta) -> bool {
    m.role != Role::Zsk
}

/// The keys whose DS the parent is to hold at `now`: those `shardns key ds` prints (in
/// their CDS window, waiting for their DS, or confirmed and published), not past their
/// CDS window (an algorithm rollover's old key, published until its DS is gone).
fn at_parent(m: &KeyMeta, now: u64) -> bool {
    signs_keys(m)
        && m.sync_delete.is_none_or(|t| t > now)
        && (m.has_cds(now)
            || roll::key_state(m, now) == KeyState::DsPending
            || (m.is_published(now) && m.ds_publish.is_some_and(|t| t <= now)))
}

/// The check due for keys `keys` in the CDS mode `mode` at `now`, with `done` already
/// confirmed; `None` when there is nothing to wait for. `digest`: of the DS pushed.
pub(super) fn want(
    apex: &Name,
    keys: &[KeyView],
    mode: CdsPublish,
    digest: DigestType,
    done: &Confirmed,
    now: u64,
) -> Option<Want> {
    if mode == CdsPublish::DeleteDnssec {
        return (!done.insecure).then(|| Want {
            goal: Goal::Insecure,
            ds: Vec::new(),
        });
    }
    let mut ds: Vec<Vec<u8>> = keys
        .iter()
        .filter(|k| at_parent(&k.meta, now))
        .filter_map(|k| ds_rdata(apex.as_ref(), &k.dnskey, digest))
        .collect();
    ds.sort();
    let pending = keys
        .iter()
        .find(|k| signs_keys(&k.meta) && roll::key_state(&k.meta, now) == KeyState::DsPending);
    if let Some(k) = pending {
        let goal = Goal::Submit {
            tag: k.meta.tag,
            dnskey: k.dnskey.clone(),
        };
        return Some(Want { goal, ds });
    }
    let current: Vec<Vec<u8>> = keys
        .iter()
        .filter(|k| at_parent(&k.meta, now))
        .map(|k| k.dnskey.clone())
        .collect();
    // An algorithm rollover past its DS change: the old algorithm's DS must go before its
    // DNSKEYs do (RFC 6781 §4.1.4), whatever `done` says (its keys are still published).
    let old: Vec<&KeyView> = keys
        .iter()
        .filter(|k| roll::algorithm::waits_for_old_ds(&k.meta, now))
        .collect();
    if !old.is_empty() && !current.is_empty() {
        let mut algorithms: Vec<u8> = old.iter().map(|k| k.meta.algorithm.number()).collect();
        algorithms.sort_unstable();
        algorithms.dedup();
        let goal = Goal::OldAlgorithm {
            old: old.iter().map(|k| k.meta.tag).collect(),
            algorithms,
            current,
        };
        return Some(Want { goal, ds });
    }
    let gone: Vec<(u16, Vec<u8>)> = keys
        .iter()
        .filter(|k| signs_keys(&k.meta) && k.meta.sync_delete.is_some_and(|t| t <= now))
        .filter(|k| !done.withdrawn.contains(&k.meta.tag))
        .map(|k| (k.meta.tag, k.dnskey.clone()))
        .collect();
    (!gone.is_empty() && !current.is_empty()).then_some(Want {
        goal: Goal::Withdraw { gone, current },
        ds,
    })
}

/// With a push and nothing else to wait for: the parent is to serve a DS of a key it is to
/// hold, pushed if it does not (`None` without such a key).
pub(super) fn present(apex: &Name, keys: &[KeyView], digest: DigestType, now: u64) -> Option<Want> {
    let current: Vec<&KeyView> = keys.iter().filter(|k| at_parent(&k.meta, now)).collect();
    let mut ds: Vec<Vec<u8>> = current
        .iter()
        .filter_map(|k| ds_rdata(apex.as_ref(), &k.dnskey, digest))
        .collect();
    ds.sort();
    (!current.is_empty()).then(|| Want {
        goal: Goal::Present {
            current: current.iter().map(|k| k.dnskey.clone()).collect(),
        },
        ds,
    })
}

/// True if the DS `ds` (rdata) is of the key `dnskey` (rdata) of `apex`: its digest,
/// of the type it names, is the key's.
pub(super) fn ds_matches(apex: &Name, ds: &[u8], dnskey: &[u8]) -> bool {
    let digest = match ds.get(3) {
        Some(1) => DigestType::Sha1,
        Some(2) => DigestType::Sha256,
        Some(4) => DigestType::Sha384,
        _ => return false,
    };
    ds_rdata(apex.as_ref(), dnskey, digest).is_some_and(|mine| mine == ds)
}

/// True if the DS set a server answered meets `goal`.
pub(super) fn meets(apex: &Name, goal: &Goal, set: &[Vec<u8>]) -> bool {
    let has = |key: &[u8]| set.iter().any(|ds| ds_matches(apex, ds, key));
    match goal {
        Goal::Submit { dnskey, .. } => has(dnskey),
        Goal::Withdraw { gone, current } => {
            current.iter().any(|k| has(k)) && !gone.iter().any(|(_, k)| has(k))
        }
        Goal::OldAlgorithm {
            algorithms,
            current,
            ..
        } => {
            // A DS of any key of an old algorithm, ours or not: a DS whose algorithm has no
            // DNSKEY would be left (dnsviz's MISSING_SEP_FOR_ALG).
            let old_alg = |ds: &Vec<u8>| ds.get(2).is_some_and(|a| algorithms.contains(a));
            current.iter().any(|k| has(k)) && !set.iter().any(old_alg)
        }
        Goal::Insecure => set.is_empty(),
        Goal::Present { current } => current.iter().any(|k| has(k)),
    }
}

/// A DS set as the log shows it: `tag alg digest-type` each, or "no DS".
pub(super) fn describe(set: &[Vec<u8>]) -> String {
    if set.is_empty() {
        return "no DS".into();
    }
    let one = |ds: &Vec<u8>| {
        let mut text = String::new();
        match rdata::fmt_text(RType::DS, ds, &mut text) {
            Ok(()) => text
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            Err(_) => "(unreadable)".into(),
        }
    };
    format!("DS {}", set.iter().map(one).collect::<Vec<_>>().join(", "))
}

impl Goal {
    /// What is waited for, in the log's words.
    pub(super) fn what(&self) -> String {
        match self {
            Self::Submit { tag, .. } => format!("the DS of the new key {tag}"),
            Self::Withdraw { gone, .. } => format!(
                "the DS of withdrawn key(s) {} to be gone",
                gone.iter()
                    .map(|(t, _)| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Self::OldAlgorithm {
                old, algorithms, ..
            } => format!(
                "the DS of the old algorithm {} to be gone (algorithm rollover: the DNSKEY of \
                 key(s) {} stays until then)",
                algorithms
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
                old.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Self::Insecure => "no DS at all (delete-dnssec)".into(),
            Self::Present { .. } => "a DS of the current key".into(),
        }
    }
}
