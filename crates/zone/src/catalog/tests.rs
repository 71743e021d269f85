use super::*;
use crate::{load_zone_text, ScanOptions};
use std::path::Path;

fn zone(body: &str) -> Zone {
    let apex: Name = "cat.example.".parse().unwrap();
    let text =
        format!("$TTL 0\n@ SOA invalid. invalid. 1 3600 600 2147483646 0\n@ NS invalid.\n{body}");
    load_zone_text(
        text.as_bytes(),
        Path::new("<test>"),
        &ScanOptions::new(apex),
    )
    .unwrap()
    .0
}

fn names(c: &Catalog) -> Vec<String> {
    c.members.iter().map(|m| m.zone.to_string()).collect()
}

#[test]
fn members_with_group_and_coo() {
    let c = interpret(&zone(
        "version TXT \"2\"\n\
         a1.zones PTR one.test.\n\
         group.a1.zones TXT \"blue\"\n\
         B2.zones PTR Two.Test.\n\
         coo.b2.zones PTR other-cat.example.\n\
         ext.a1.zones TXT \"ignored\"\n\
         unrelated TXT \"ignored too\"\n",
    ))
    .unwrap();
    assert_eq!(names(&c), ["one.test.", "Two.Test."]);
    assert_eq!(c.members[0].group.as_deref(), Some("blue"));
    assert_eq!(c.members[0].coo, None);
    assert_eq!(c.members[1].id, b"b2");
    assert_eq!(c.members[1].group, None);
    assert_eq!(
        c.members[1].coo.as_ref().map(|n| n.to_string()).as_deref(),
        Some("other-cat.example.")
    );
    assert!(c.ignored.is_empty(), "{:?}", c.ignored);
}

#[test]
fn versions() {
    assert_eq!(
        interpret(&zone("a.zones PTR one.test.\n")),
        Err(Error::NoVersion)
    );
    assert_eq!(
        interpret(&zone("version TXT \"1\"\na.zones PTR one.test.\n")),
        Err(Error::BadVersion("1".into()))
    );
    assert_eq!(
        interpret(&zone("version TXT \"2\"\nversion TXT \"1\"\n")),
        Err(Error::ManyVersions(2))
    );
    // An empty catalog is a catalog.
    assert_eq!(interpret(&zone("version TXT \"2\"\n")).unwrap().members, []);
    assert_eq!(
        interpret(&Zone::unavailable("cat.example.".parse().unwrap())),
        Err(Error::Unavailable)
    );
}

#[test]
fn a_member_listed_twice_rejects_the_catalog() {
    let e = interpret(&zone(
        "version TXT \"2\"\na.zones PTR one.test.\nb.zones PTR ONE.test.\n",
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "member zone ONE.test. is listed twice, as a and b"
    );
}

#[test]
fn bad_members_are_left_out_and_the_rest_kept() {
    let c = interpret(&zone(
        "version TXT \"2\"\n\
         two.zones PTR x.test.\ntwo.zones PTR y.test.\n\
         root.zones PTR .\n\
         inside.zones PTR m.cat.example.\n\
         self.zones PTR cat.example.\n\
         ok.zones PTR fine.test.\n\
         group.ok.zones TXT \"a\"\ngroup.ok.zones TXT \"b\"\n\
         deep.ok.zones.zones PTR no.test.\n",
    ))
    .unwrap();
    assert_eq!(names(&c), ["fine.test."]);
    assert_eq!(c.members[0].group, None);
    assert_eq!(c.ignored.len(), 5, "{:?}", c.ignored);
    assert!(c.ignored.iter().any(|s| s.contains("2 PTR records")));
    assert!(c.ignored.iter().any(|s| s.contains("2 group values")));
}

#[test]
fn a_group_must_be_one_string_of_text() {
    let c = interpret(&zone(
        "version TXT \"2\"\n\
         a.zones PTR a.test.\ngroup.a.zones TXT \"x\" \"y\"\n\
         b.zones PTR b.test.\ngroup.b.zones TXT \"\\255\\254\"\n\
         c.zones PTR c.test.\ngroup.c.zones TXT \"\u{e9}t\u{e9}\"\n",
    ))
    .unwrap();
    let groups: Vec<Option<&str>> = c.members.iter().map(|m| m.group.as_deref()).collect();
    assert_eq!(groups, [None, None, Some("\u{e9}t\u{e9}")]);
    assert_eq!(c.ignored.len(), 2, "{:?}", c.ignored);
    assert!(c.ignored.iter().any(|s| s.contains("not UTF-8")));
}

#[test]
fn produced_catalog_reads_back() {
    let members: Vec<(Name, Option<String>)> = vec![
        ("one.test.".parse().unwrap(), None),
        ("two.test.".parse().unwrap(), Some("blue \"x\"".into())),
    ];
    let apex: Name = "cat.example.".parse().unwrap();
    let text = produce(apex.as_ref(), 7, &members);
    let (z, _) =
        load_zone_text(text.as_bytes(), Path::new("<p>"), &ScanOptions::new(apex)).unwrap();
    assert_eq!(z.serial(), 7);
    let c = interpret(&z).unwrap();
    let got: Vec<(Name, Option<String>)> = c
        .members
        .iter()
        .map(|m| (m.zone.clone(), m.group.clone()))
        .collect();
    let mut want = members.clone();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    let mut got = got;
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want);
    assert_eq!(
        String::from_utf8(
            c.members
                .iter()
                .find(|m| m.zone == members[0].0)
                .unwrap()
                .id
                .clone()
        )
        .unwrap(),
        member_id(members[0].0.as_ref())
    );
}

#[test]
fn member_ids_are_stable_and_case_blind() {
    let a: Name = "Example.COM.".parse().unwrap();
    let b: Name = "example.com.".parse().unwrap();
    assert_eq!(member_id(a.as_ref()), member_id(b.as_ref()));
    assert_eq!(member_id(b.as_ref()).len(), 16);
    assert_ne!(
        member_id(b.as_ref()),
        member_id("example.net.".parse::<Name>().unwrap().as_ref())
    );
}
