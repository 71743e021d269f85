//! signing::offline -- an offline KSK (`offline_ksk = true`, Knot's `offline-ksk`): the
//! files and steps around `shardns_dnssec::offline`.
//!
//! - [`pregenerate`]: the ZSKs of a span of time made ahead, their times set as the
//!   policy's pre-publication rollover would set them (`roll::tick` run from key event to
//!   key event), so the server never makes a key on its own in this mode.
//! - [`make_ksr`] / [`parse_ksr`]: the key signing request, text; [`sign_ksr`]: the KSK
//!   side's answer, the signed key response (SKR), text; [`import_skr`]: the server's
//!   check of an SKR and its copy in `KEYDIR/state/<zone>.skr`, which the signer reads.
//! - `sign` (the module below): the signer in this mode.
//!
//! The text of both documents is a zone file with directives in comments (so any zone
//! tool reads the records), one record a line, times `YYYYMMDDHHMMSS` UTC:
//!
//! ```text
//! ;; shardns-ksr example.          (or shardns-skr)
//! ;; ttl 3600                      (KSR only: the TTL of the key RRsets)
//! ;; period 20261128040000 20261128050000
//! example. 3600 IN DNSKEY 256 3 13 ...
//! ;; end
//! ```

use super::{store_error, write_atomic};
use shardns_dnssec::keys::{format_time, parse_time};
use shardns_dnssec::offline::{self, Request, RequestPeriod, Response, ResponsePeriod, SignKsr};
use shardns_dnssec::roll::{self, RollKind, RollTimings};
use shardns_dnssec::{Algorithm, KeyStore, Role, StoredKey};
use shardns_wire::{Name, RType, Record};
use shardns_zone::ScanOptions;
use std::fmt::Write as _;
use std::path::Path;

mod pregenerated;
pub(super) mod sign;

pub use pregenerated::Pregenerated;

/// The ZSKs of the zone in `store`; any other key there is an error (the KSK is offline).
pub fn zsks_only(apex: &Name, keys: Vec<StoredKey>) -> Result<Vec<StoredKey>, String> {
    if let Some(k) = keys.iter().find(|k| k.meta.role != Role::Zsk) {
        return Err(format!(
            "zone {apex}: offline_ksk: the key directory holds {} {} ({}); with an offline \
             KSK it holds ZSKs only: move that key to the KSK's machine",
            k.meta.role, k.meta.tag, k.stem
        ));
    }
    Ok(keys)
}

/// Makes the zone's ZSKs from `from` to `to` as `timings` (its `zsk_lifetime` and waits)
/// roll them: a first ZSK of `algorithm` at `from` if it has none, then a successor
/// whenever a lifetime is up. Returns the new keys' tags and times, one line each.
pub fn pregenerate(
    apex: &Name,
    key_dir: &Path,
    algorithm: Algorithm,
    timings: &RollTimings,
    from: u64,
    to: u64,
) -> Result<String, String> {
    if timings.zsk_lifetime.is_none_or(|l| l == 0) {
        return Err("a ZSK lifetime is needed to pregenerate".into());
    }
    let store = KeyStore::open(key_dir).map_err(|e| store_error(&e))?;
    let mut keys = zsks_only(apex, store.load(apex).map_err(|e| store_error(&e))?)?;
    let mut out = String::new();
    let made = |key: &StoredKey, out: &mut String| {
        let m = &key.meta;
        let t = |t: Option<u64>| t.map_or("-".into(), format_time);
        let _ = writeln!(
            out,
            "ZSK {} published {} active {} ({})",
            m.tag,
            t(m.publish),
            t(m.activate),
            key.stem
        );
    };
    if keys.is_empty() {
        let key = store
            .make(apex, algorithm, Role::Zsk, from)
            .map_err(|e| store_error(&e))?;
        store.save_new(&key).map_err(|e| store_error(&e))?;
        made(&key, &mut out);
        keys.push(key);
    }
    let mut now = from;
    while now < to {
        let mut metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
        let mut tick = roll::tick(&mut metas, timings, now);
        while let Some(new) = tick.new_key.take().filter(|n| n.kind == RollKind::Zsk) {
            let mut key = store
                .make(apex, new.algorithm, Role::Zsk, now)
                .map_err(|e| store_error(&e))?;
            roll::schedule_new(&mut key.meta, RollKind::Zsk, timings, now);
            store.save_new(&key).map_err(|e| store_error(&e))?;
            made(&key, &mut out);
            metas.push(key.meta.clone());
            keys.push(key);
            tick = roll::tick(&mut metas, timings, now);
        }
        for i in tick.changed {
            keys[i].meta = metas[i].clone();
            store.save(&keys[i]).map_err(|e| store_error(&e))?;
        }
        match roll::next_event(&metas, timings, now) {
            Some(next) => now = next,
            None => break,
        }
    }
    if out.is_empty() {
        out = format!("zone {apex}: the ZSKs reach {} already\n", format_time(to));
    }
    let text = Pregenerated {
        dnskey_ttl: Some(timings.dnskey_ttl),
        max_ttl: Some(timings.max_ttl),
        propagation: Some(timings.propagation),
    }
    .write();
    write_atomic(&super::state_path(key_dir, apex, "pregenerated"), |w| {
        std::io::Write::write_all(w, text.as_bytes())
    })?;
    Ok(out)
}

/// What the zone's TTLs, as signed now, break of the waits the ZSKs were pregenerated
/// with (`state/<zone>.pregenerated`): a DNSKEY TTL above theirs (a new ZSK would sign
/// before every cache has it), a largest TTL above theirs (an old ZSK would go while
/// caches hold its signatures). One line each, for the log; nothing if they fit or the
/// ZSKs were not pregenerated here.
pub(super) fn timing_warnings(
    apex: &Name,
    key_dir: &Path,
    key_ttl: u32,
    max_ttl: u32,
) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(super::state_path(key_dir, apex, "pregenerated")) else {
        return Vec::new();
    };
    let planned = Pregenerated::parse(&text);
    let mut out = Vec::new();
    for (what, flag, served, planned) in [
        ("DNSKEY TTL", "--dnskey-ttl", key_ttl, planned.dnskey_ttl),
        ("largest TTL", "--max-ttl", max_ttl, planned.max_ttl),
    ] {
        if let Some(planned) = planned.filter(|&p| u64::from(served) > p) {
            out.push(format!(
                "zone {apex}: its {what} is {served} s, the ZSKs were pregenerated for \
                 {planned} s: their rollovers wait too little; pregenerate with {flag} {served} \
                 (for the ZSKs not made yet) or lower the TTL"
            ));
        }
    }
    out
}

/// The KSR of the zone's ZSKs in `key_dir` from `from` to `to`, the key RRsets' TTL
/// `ttl`, as text.
pub fn make_ksr(
    apex: &Name,
    key_dir: &Path,
    from: u64,
    to: u64,
    ttl: u32,
) -> Result<String, String> {
    let store = KeyStore::open(key_dir).map_err(|e| store_error(&e))?;
    let keys = zsks_only(apex, store.load(apex).map_err(|e| store_error(&e))?)?;
    let periods = offline::zsk_periods(&keys, from, to).map_err(|e| e.to_string())?;
    Ok(write_ksr(&Request {
        zone: apex.clone(),
        ttl,
        periods,
    }))
}

/// A KSR as text ([`parse_ksr`] reads it back the same).
pub fn write_ksr(request: &Request) -> String {
    let (apex, ttl) = (&request.zone, request.ttl);
    let mut text = format!(";; shardns-ksr {apex}\n;; ttl {ttl}\n");
    for p in &request.periods {
        let _ = writeln!(
            text,
            ";; period {} {}",
            format_time(p.from),
            format_time(p.to)
        );
        for z in &p.zsks {
            let _ = writeln!(text, "{}", record(apex, RType::DNSKEY, ttl, z.clone()));
        }
    }
    text.push_str(";; end\n");
    text
}

fn record(apex: &Name, rtype: RType, ttl: u32, rdata: Vec<u8>) -> Record {
    Record {
        owner: apex.clone(),
        rtype,
        class: shardns_wire::Class::IN,
        ttl,
        rdata,
    }
}

/// A document read: its kind's zone, its `ttl` directive, and its periods' records.
struct Document {
    zone: Name,
    ttl: Option<u32>,
    periods: Vec<(u64, u64, Vec<Record>)>,
}

/// The record lines of one period, for the zone file reader, and the file's line number
/// of each (the reader counts the period's lines from 1).
#[derive(Default)]
struct Body {
    text: String,
    lines: Vec<usize>,
}

impl Body {
    /// The file's line of the reader's line `l` (1-based).
    fn file_line(&self, l: u32) -> Option<usize> {
        (l as usize)
            .checked_sub(1)
            .and_then(|i| self.lines.get(i))
            .copied()
    }
}

/// Reads a KSR or SKR (`kind`: `shardns-ksr` or `shardns-skr`): the directives, then each
/// period's records with the zone file reader. Any other line or a missing `;; end` (a
/// cut file) is an error with its line number.
fn parse(kind: &str, text: &str, file: &Path) -> Result<Document, String> {
    let at = |n: usize, why: &str| format!("{}:{}: {why}", file.display(), n + 1);
    let mut lines = text.lines().enumerate();
    let zone: Name = lines
        .by_ref()
        .find(|(_, l)| !l.trim().is_empty())
        .and_then(|(_, l)| l.strip_prefix(&format!(";; {kind} ")))
        .and_then(|z| z.trim().parse().ok())
        .ok_or_else(|| {
            at(
                0,
                &format!("not a {kind} file (its first line is `;; {kind} ZONE`)"),
            )
        })?;
    let opts = ScanOptions::new(zone.clone());
    let (mut ttl, mut periods, mut body, mut ended) = (None, Vec::new(), Body::default(), false);
    let flush = |periods: &mut Vec<(u64, u64, Vec<Record>)>, body: &mut Body| {
        let Some(last) = periods.last_mut() else {
            return Ok(());
        };
        let scanned =
            shardns_zone::scan::scan_text(body.text.as_bytes(), file, &opts).map_err(|e| {
                // The reader's complaints, at the file's lines.
                let diags = e
                    .diagnostics()
                    .iter()
                    .map(|d| match body.file_line(d.line) {
                        Some(n) => format!("{}:{n}: {}", d.file.display(), d.message),
                        None => d.to_string(),
                    });
                match diags.collect::<Vec<_>>() {
                    found if found.is_empty() => e.to_string(),
                    found => found.join("\n"),
                }
            })?;
        // A record given twice is one (RFC 2181 §5), as the signer's RRsets have it.
        let mut records: Vec<Record> = Vec::new();
        for r in super::to_list(scanned.chunks).to_records() {
            if !records.contains(&r) {
                records.push(r);
            }
        }
        last.2 = records;
        *body = Body::default();
        Ok::<(), String>(())
    };
    for (n, line) in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [";;", "end"] => {
                flush(&mut periods, &mut body)?;
                ended = true;
                break;
            }
            [";;", "ttl", t] => ttl = Some(t.parse().map_err(|_| at(n, "a bad TTL"))?),
            [";;", "period", a, b] => {
                flush(&mut periods, &mut body)?;
                let (a, b) = parse_time(a)
                    .zip(parse_time(b))
                    .ok_or_else(|| at(n, "a period's times are YYYYMMDDHHMMSS"))?;
                periods.push((a, b, Vec::new()));
            }
            [] => {}
            // A directive misspelt is no comment: a period line taken as one would add
            // its records to the period before.
            [";;", d, ..] if ["end", "ttl", "period", kind].contains(d) => {
                return Err(at(n, &format!("a bad `;; {d}` line")))
            }
            [w, ..] if w.starts_with(';') => {}
            // `$INCLUDE` would make the reader open a file the sender names (on the KSK's
            // machine, for a KSR), `$ORIGIN` and `$TTL` change what later lines mean.
            [w, ..] if w.starts_with('$') => {
                return Err(at(
                    n,
                    &format!("{w}: a {kind} holds records only, no zone file directive"),
                ))
            }
            _ if periods.is_empty() => return Err(at(n, "a record before the first period")),
            _ => {
                body.text.push_str(line);
                body.text.push('\n');
                body.lines.push(n + 1);
            }
        }
    }
    if !ended {
        return Err(format!(
            "{}: no `;; end` line: the file is cut short",
            file.display()
        ));
    }
    Ok(Document { zone, ttl, periods })
}

/// Reads a KSR: DNSKEY records of the zone's apex only, with the `ttl` directive's TTL.
pub fn parse_ksr(text: &str, file: &Path) -> Result<Request, String> {
    let doc = parse("shardns-ksr", text, file)?;
    let ttl = doc
        .ttl
        .ok_or_else(|| format!("{}: no `;; ttl N` line", file.display()))?;
    let mut periods = Vec::new();
    for (from, to, records) in doc.periods {
        if let Some(r) = records.iter().find(|r| {
            r.rtype != RType::DNSKEY
                || r.owner != doc.zone
                || r.ttl != ttl
                || r.class != shardns_wire::Class::IN
        }) {
            return Err(format!(
                "{}: period {}: a KSR holds the apex's DNSKEY records (class IN, TTL {ttl}) \
                 only, not `{r}`",
                file.display(),
                format_time(from)
            ));
        }
        let mut zsks: Vec<Vec<u8>> = records.into_iter().map(|r| r.rdata).collect();
        zsks.sort();
        periods.push(RequestPeriod { from, to, zsks });
    }
    Ok(Request {
        zone: doc.zone,
        ttl,
        periods,
    })
}

/// The KSK side: the KSR `text` signed with the zone's KSKs in `key_dir`, as SKR text;
/// with `keystore`, the keys whose private half is on that PKCS#11 token (their
/// `.pkcs11` files in `key_dir`) sign there.
pub fn sign_ksr(
    text: &str,
    file: &Path,
    key_dir: &Path,
    keystore: Option<&super::Keystore>,
    how: &SignKsr,
) -> Result<String, String> {
    let request = parse_ksr(text, file)?;
    let token = keystore.map(super::Keystore::open).transpose()?;
    let store = KeyStore::open(key_dir)
        .map_err(|e| store_error(&e))?
        .with_token(token);
    let keys = store.load(&request.zone).map_err(|e| store_error(&e))?;
    if keystore.is_none() {
        // Without its token such a key loads without its private half: say so, rather
        // than the signing's failure.
        if let Some(k) = keys
            .iter()
            .find(|k| k.meta.role == Role::Ksk && k.key.is_detached())
        {
            return Err(format!(
                "KSK {} ({}.pkcs11) is on a PKCS#11 token: give its --keystore and --config",
                k.meta.tag, k.stem
            ));
        }
    }
    if !keys.iter().any(|k| k.meta.role == Role::Ksk) {
        return Err(format!(
            "no KSK of {} in {}",
            request.zone,
            key_dir.display()
        ));
    }
    let response = offline::sign_request(&request, &keys, how).map_err(|e| e.to_string())?;
    Ok(write_skr(&response))
}

/// An SKR as text.
pub fn write_skr(response: &Response) -> String {
    let mut text = format!(";; shardns-skr {}\n", response.zone);
    for p in &response.periods {
        let _ = writeln!(
            text,
            ";; period {} {}",
            format_time(p.from),
            format_time(p.to)
        );
        for r in &p.records {
            let _ = writeln!(text, "{r}");
        }
    }
    text.push_str(";; end\n");
    text
}

/// Reads an SKR (checked by [`import_skr`], not here).
pub fn parse_skr(text: &str, file: &Path) -> Result<Response, String> {
    let doc = parse("shardns-skr", text, file)?;
    Ok(Response {
        zone: doc.zone,
        periods: doc
            .periods
            .into_iter()
            .map(|(from, to, records)| ResponsePeriod { from, to, records })
            .collect(),
    })
}

/// Where the next KSR starts by default (as Knot's `generate-ksr` without a start): the end
/// of the SKR imported, if that is after `now`; else `now`.
pub fn next_ksr_start(apex: &Name, key_dir: &Path, now: u64) -> u64 {
    let path = skr_path(key_dir, apex);
    let end = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| parse_skr(&text, &path).ok())
        .map_or(0, |skr| skr.end());
    end.max(now)
}

/// A line for `shardns key list`: the span of the SKR imported and how long it has left
/// (empty without one).
pub fn skr_summary(apex: &Name, key_dir: &Path, now: u64) -> String {
    let path = skr_path(key_dir, apex);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return String::new();
    };
    match parse_skr(&text, &path) {
        Ok(skr) if skr.end() > now => format!(
            "offline KSK: SKR imported from {} to {} ({} periods; ends in {} s: import the \
             next one before)\n",
            format_time(skr.periods.first().map_or(0, |p| p.from)),
            format_time(skr.end()),
            skr.periods.len(),
            skr.end() - now
        ),
        Ok(skr) => format!(
            "offline KSK: the SKR imported ended at {}: the zone is not signed again until \
             a new one is imported\n",
            format_time(skr.end())
        ),
        Err(e) => format!("offline KSK: {e}\n"),
    }
}

/// The imported SKR of `apex`: `KEYDIR/state/<zone>.skr`.
pub(super) fn skr_path(key_dir: &Path, apex: &Name) -> std::path::PathBuf {
    super::state_path(key_dir, apex, "skr")
}

/// Checks the SKR `text` against the zone's ZSKs in `key_dir` (see
/// `shardns_dnssec::offline::check_response`) and keeps it for the signer; the zone must
/// then be reloaded. Returns what was imported, one line.
pub fn import_skr(
    apex: &Name,
    key_dir: &Path,
    text: &str,
    file: &Path,
    now: u64,
) -> Result<String, String> {
    let response = parse_skr(text, file)?;
    if response.zone != *apex {
        return Err(format!(
            "{}: an SKR of {}, not {apex}",
            file.display(),
            response.zone
        ));
    }
    let store = KeyStore::open(key_dir).map_err(|e| store_error(&e))?;
    let keys = zsks_only(apex, store.load(apex).map_err(|e| store_error(&e))?)?;
    let from = response.periods.first().map_or(0, |p| p.from);
    let expected = offline::zsk_periods(&keys, from, response.end())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    offline::check_response(&response, &expected)
        .map_err(|e| format!("{}: refused: {e}", file.display()))?;
    if response.end() <= now {
        return Err(format!(
            "{}: refused: it ended at {}",
            file.display(),
            format_time(response.end())
        ));
    }
    let path = skr_path(key_dir, apex);
    let merged = merge(&path, response, now)?;
    write_atomic(&path, |w| {
        std::io::Write::write_all(w, write_skr(&merged.0).as_bytes())
    })?;
    Ok(format!(
        "zone {apex}: SKR imported: {} periods from {} to {}{}; run `shardns reload {apex}`\n",
        merged.0.periods.len(),
        format_time(merged.0.periods.first().map_or(from, |p| p.from)),
        format_time(merged.0.end()),
        merged.1
    ))
}

/// The SKR kept at `path` (if any) with `new` over it, as Knot's `import-skr` does: the
/// kept periods from `new`'s start on are replaced, those before it kept (the one that
/// straddles it cut there; those over by `now` dropped), so the next SKR can be imported
/// while the current one still serves. A gap between what is kept and `new` is refused.
/// Also says, as a clause, what was kept.
fn merge(path: &Path, mut new: Response, now: u64) -> Result<(Response, String), String> {
    let start = new.periods.first().map_or(0, |p| p.from);
    let old = match std::fs::read_to_string(path) {
        Ok(text) => parse_skr(&text, path)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((new, String::new())),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut kept: Vec<ResponsePeriod> = old
        .periods
        .into_iter()
        .filter(|p| p.to > now && p.from < start)
        .collect();
    if let Some(last) = kept.last_mut() {
        last.to = last.to.min(start);
        if last.to < start {
            return Err(format!(
                "refused: the SKR imported before ends at {}, this one starts at {}: no key \
                 RRsets in between",
                format_time(last.to),
                format_time(start)
            ));
        }
    }
    let said = match kept.first() {
        Some(p) => format!(
            " (the one imported before kept from {})",
            format_time(p.from)
        ),
        None => String::new(),
    };
    kept.append(&mut new.periods);
    new.periods = kept;
    Ok((new, said))
}

#[cfg(test)]
mod tests;
