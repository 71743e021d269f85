//! The batch reads the TSIG verdict its job carries: it never verifies the MAC again.

use super::*;
use shardns_wire::tsig::{Algorithm, Key};
use shardns_wire::update::Update;
use shardns_wire::RType;
use shardns_zone::load_zone_text;
use shardns_zone::scan::ScanOptions;
use std::path::Path;

const TEXT: &str = "$ORIGIN t.\n$TTL 300\n@ SOA ns host 1 3600 600 86400 300\n@ NS ns\n\
                    ns A 192.0.2.53\n";
const NOW: u64 = 1_800_000_000;

fn key(secret: &[u8]) -> Key {
    Key {
        name: "k.".parse().unwrap(),
        algorithm: Algorithm::HmacSha256,
        secret: secret.to_vec(),
    }
}

/// A config whose zone `t.` lets key `k.` change anything; no `[[key]]` at all, so a batch
/// that verified a TSIG itself would find no key (BADKEY).
fn config() -> Config {
    let mut zone = ZoneConfig::new("t.".parse().unwrap(), "t.zone".into());
    zone.update_policy = vec!["grant k. zone ANY".into()];
    let mut config = Config::default();
    config.zones.push(zone);
    config
}

/// The answer of a batch over `t.` to `message` carrying the verdict `tsig`.
fn answer(message: &[u8], tsig: Tsig) -> Vec<u8> {
    let apex: Name = "t.".parse().unwrap();
    let zone = load_zone_text(TEXT.as_bytes(), Path::new("t"), &ScanOptions::new(apex))
        .unwrap()
        .0;
    let set = ZoneSet::new(vec![zone]);
    let config = config();
    let mut batch = Batch {
        config: &config,
        set: &set,
        latest: HashMap::new(),
        touched: HashMap::new(),
        policies: HashMap::new(),
        catalog_member: &|_| false,
        logged: 0,
        signed: Default::default(),
    };
    let job = Job {
        message: message.to_vec(),
        peer: "192.0.2.1".parse().unwrap(),
        operator: false,
        tsig,
        reply: Box::new(|_| {}),
    };
    batch.one(&job, NOW).expect("an answer")
}

fn rcode(answer: &[u8]) -> u8 {
    answer[3] & 0x0f
}

#[test]
fn the_carried_verdict_decides_not_a_second_verification() {
    let k = key(b"0123456789abcdef0123456789abcdef");
    let owner: Name = "new.t.".parse().unwrap();
    let mut update = Update::new("t.".parse::<Name>().unwrap().as_ref(), 7);
    update.add(owner.as_ref(), RType::A, 300, &[192, 0, 2, 9]);
    // Signed with another secret: its MAC verifies with no key this test knows.
    let forged = update.finish(Some(&key(b"not the secret, not the secret!!")), NOW);
    let forged = forged.unwrap();
    let sig = tsig::read(forged.message()).unwrap().unwrap();

    // The worker said it verified as `k.`: the batch applies it and signs with `k.`.
    let mut request = update.finish(Some(&k), NOW).unwrap();
    let ok = answer(forged.message(), Tsig::signed(sig.clone(), Ok(k.clone())));
    assert_eq!(rcode(&ok), 0, "NOERROR by the carried key, {ok:?}");
    assert_eq!(u16::from_be_bytes([ok[10], ok[11]]), 1, "signed (its TSIG)");
    // And signed as a TSIG over the request's MAC is: with the genuine request the client
    // reads it as the answer to its own.
    let good = tsig::read(request.message()).unwrap().unwrap();
    let ok = answer(request.message(), Tsig::signed(good.clone(), Ok(k.clone())));
    assert_eq!(request.response(&ok, NOW).unwrap(), Some(Rcode::NOERROR));

    // A genuine signature the worker found BADSIG: NOTAUTH, not applied.
    let refused = answer(
        request.message(),
        Tsig::signed(good, Err(Refusal::Unsigned(tsig::BADSIG))),
    );
    assert_eq!(rcode(&refused), 9, "NOTAUTH");
    // Malformed: FORMERR; unsigned: no grant for an address, REFUSED.
    assert_eq!(rcode(&answer(request.message(), Tsig::Malformed)), 1);
    assert_eq!(rcode(&answer(request.message(), Tsig::Unsigned)), 5);
}
