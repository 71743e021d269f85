//! `journal`: the journal file a server reads at start (`shardns_server::journal_file`),
//! which a crash may have cut short or damaged.

use shardns_server::journal_file::{encode, parse};
use shardns_wire::Name;
use shardns_zone::xfr::diff::Diff;

/// Input: the first byte chooses what the rest is. Even: a whole journal file of
/// `diff.test.`. Odd: the same, and then the diffs it held are written anew, the file is
/// damaged at an offset (the next two bytes) in a way (the byte after) and read back.
///
/// Checks: no panic (libFuzzer's `-malloc_limit_mb` catches an allocation out of bounds:
/// nothing read is bigger than the file); a journal read is a run of diffs each starting
/// where the one before ended, the damage reported at an offset inside the file at a
/// record's start (all of it when none); what `encode` writes reads back as the same
/// diffs; and after damage, every record that ends before the damaged octet survives
/// unchanged and the damaged one and those after it are dropped.
pub fn journal(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let apex = Name::from_text("diff.test.", None).expect("apex");
    let (file, how) = if sel & 1 == 0 {
        (rest, None)
    } else if let Some((h, file)) = rest.split_first_chunk::<3>() {
        (file, Some(*h))
    } else {
        return;
    };
    let Ok((diffs, damage)) = parse(file, &apex) else {
        return;
    };
    well_formed(file, &apex, &diffs, damage.as_ref().map(|d| d.0));
    let written = encode(&apex, &diffs);
    let (again, none) = parse(&written, &apex).expect("a written journal reads");
    assert!(none.is_none(), "damage in a journal just written: {none:?}");
    assert_eq!(again, diffs, "a written journal reads back otherwise");
    let Some([hi, lo, kind]) = how else {
        return;
    };
    // Damage: cut the file there, or change that octet.
    let at = usize::from(u16::from_be_bytes([hi, lo])) % written.len();
    let mut damaged = written.clone();
    if kind & 1 == 0 {
        damaged.truncate(at);
    } else {
        damaged[at] ^= kind | 1;
    }
    let Ok((got, hurt)) = parse(&damaged, &apex) else {
        // Only the header may be hurt so that the file is not a journal at all.
        assert!(at < header_len(&apex), "a damaged record loses the file");
        return;
    };
    well_formed(&damaged, &apex, &got, hurt.as_ref().map(|d| d.0));
    // Every record wholly before the damage is intact.
    let mut end = header_len(&apex);
    let mut intact = 0;
    for d in &diffs {
        end += 12 + d.len();
        if end > at {
            break;
        }
        intact += 1;
    }
    assert!(
        got.len() >= intact,
        "{} records before the damage at {at}, {} read back",
        intact,
        got.len()
    );
    assert_eq!(
        got[..intact],
        diffs[..intact],
        "a record before the damage changed"
    );
    // A cut record is short; a changed octet fails the mark, the length or the CRC-32
    // (which catches every one-octet change).
    assert_eq!(got.len(), intact, "a damaged record was read");
}

fn header_len(apex: &Name) -> usize {
    14 + apex.as_wire().len()
}

/// The diffs read from `file` follow each other, and the damage, if any, is at the
/// start of the first record not read.
fn well_formed(file: &[u8], apex: &Name, diffs: &[Diff], damage: Option<usize>) {
    for w in diffs.windows(2) {
        assert_eq!(w[0].to(), w[1].from(), "diffs that do not follow");
    }
    let end = header_len(apex) + diffs.iter().map(|d| 12 + d.len()).sum::<usize>();
    match damage {
        Some(at) => assert!(
            at == end && at < file.len(),
            "damage at {at}, records end at {end}"
        ),
        None => assert_eq!(
            end,
            file.len(),
            "records end at {end}, not at the file's end"
        ),
    }
}
