//! multi -- the other providers' key records of a multi-signer zone (RFC 8901 §2.1.2,
//! model 2: every provider signs with its own KSK and ZSK, and publishes the ZSKs of all):
//! which DNSKEY, CDS and CDNSKEY records the signer publishes beside its own
//! ([`Foreign`]), and the zone setting that keeps them ([`DnskeyManagement`], Knot's
//! `dnskey-management`).
//!
//! The foreign records are published as given, never used to sign: they are rdata, not
//! keys. The DNSKEYs always; the CDS and CDNSKEY only beside a CDS set of our own that is
//! not the delete form, so that no CDS set we publish asks the parent to drop our DS
//! (RFC 8901 §8: every provider's CDS set names every provider's KSK). No CDS is made from
//! a foreign DNSKEY: what the parent is to hold of another provider is what that provider
//! says (its CDS and CDNSKEY), and a record made here could not be told from one given
//! when the zone's records are read back (a dynamic update signs the served records).

use crate::cds::{Rdatas, CDS_DELETE};

/// How the apex's DNSKEY, CDS and CDNSKEY RRsets are made (Knot's `dnskey-management`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DnskeyManagement {
    /// Our keys' records only; those of the zone's data are dropped (the default).
    #[default]
    Full,
    /// Our keys' records, merged with the zone's own (its file, dynamic updates): the
    /// multi-signer model.
    Incremental,
}

impl DnskeyManagement {
    /// The setting's name in the config (Knot's).
    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Incremental => "incremental",
        }
    }

    /// The setting of this name.
    pub fn from_name(s: &str) -> Option<Self> {
        [Self::Full, Self::Incremental]
            .into_iter()
            .find(|m| m.name() == s)
    }
}

/// The key records of the other providers of a zone, as its data gives them: published
/// beside ours in the apex's RRsets, never used to sign.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Foreign {
    /// DNSKEY rdatas (the other providers' ZSKs, and KSKs if given).
    pub dnskey: Rdatas,
    /// CDNSKEY rdatas (the other providers' KSKs).
    pub cdnskey: Rdatas,
    /// CDS rdatas (the other providers' KSKs).
    pub cds: Rdatas,
}

impl Foreign {
    /// True if there is nothing to publish.
    pub fn is_empty(&self) -> bool {
        self.dnskey.is_empty() && self.cdnskey.is_empty() && self.cds.is_empty()
    }

    /// Our CDNSKEY and CDS rdatas (`cdnskey`, `cds`, as [`crate::cds::apex_records`]
    /// gives them) with the foreign ones added when ours are published and are not the
    /// delete form. Duplicates are left to the caller (the signer drops them when it
    /// sorts).
    pub fn merge_cds(&self, mut cdnskey: Rdatas, mut cds: Rdatas) -> (Rdatas, Rdatas) {
        if cds.is_empty() || cds.iter().any(|c| c[..] == CDS_DELETE) {
            return (cdnskey, cds);
        }
        cdnskey.extend(self.cdnskey.iter().cloned());
        cds.extend(self.cds.iter().cloned());
        (cdnskey, cds)
    }
}

#[cfg(test)]
mod tests;
