//! pkcs11::uri -- the part of a PKCS#11 URI (RFC 7512) that picks a token and logs in:
//! `token`, `serial` and `slot-id` choose the token, `pin-value` or `pin-source` (a file
//! holding the PIN) give the user PIN. Attributes may be in the path (`;`-separated, as
//! Knot's examples write `pin-value`) or the query (`&`-separated, as RFC 7512 puts them).

use crate::error::Error;
use std::path::PathBuf;

/// What a keystore's URI says.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TokenUri {
    /// `token=`: the token's label.
    pub token: Option<String>,
    /// `serial=`: the token's serial number.
    pub serial: Option<String>,
    /// `slot-id=`: the slot's number.
    pub slot_id: Option<u64>,
    /// `pin-value=`: the user PIN.
    pub pin_value: Option<String>,
    /// `pin-source=`: a file whose first line is the user PIN.
    pub pin_source: Option<PathBuf>,
}

/// Never prints the PIN.
impl core::fmt::Debug for TokenUri {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl TokenUri {
    /// Parses `pkcs11:...`; attributes we do not use (`manufacturer`, `model`,
    /// `module-name`, ...) are accepted and ignored, as RFC 7512 §2.3 lets a consumer.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad = |what: String| Error::Token(format!("PKCS#11 URI {:?}: {what}", redact(text)));
        let rest = text
            .strip_prefix("pkcs11:")
            .ok_or_else(|| bad("does not start with pkcs11:".into()))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut uri = Self::default();
        let attrs = path
            .split(';')
            .chain(query.split('&'))
            .filter(|a| !a.is_empty());
        for attr in attrs {
            let (k, v) = attr
                .split_once('=')
                .ok_or_else(|| bad(format!("{attr:?} is not name=value")))?;
            let v = decode(v).ok_or_else(|| bad(format!("bad %-escape in {k}")))?;
            match k {
                "token" => uri.token = Some(v),
                "serial" => uri.serial = Some(v),
                "slot-id" => {
                    let n = v.parse().map_err(|_| bad(format!("slot-id {v:?}")))?;
                    uri.slot_id = Some(n);
                }
                "pin-value" => uri.pin_value = Some(v),
                "pin-source" => {
                    let file = v.strip_prefix("file:").unwrap_or(&v);
                    uri.pin_source = Some(PathBuf::from(file));
                }
                _ => {}
            }
        }
        if uri.token.is_none() && uri.serial.is_none() && uri.slot_id.is_none() {
            return Err(bad("names no token (token=, serial= or slot-id=)".into()));
        }
        Ok(uri)
    }

    /// The user PIN: `pin-value`, else the first line of `pin-source`; `None` if neither.
    pub fn pin(&self) -> Result<Option<String>, Error> {
        if let Some(p) = &self.pin_value {
            return Ok(Some(p.clone()));
        }
        let Some(file) = &self.pin_source else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(file).map_err(|e| Error::Io(file.clone(), e))?;
        Ok(Some(text.lines().next().unwrap_or("").to_string()))
    }

    /// The token as the URI names it, for messages (no PIN).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.token {
            parts.push(format!("token={t}"));
        }
        if let Some(s) = &self.serial {
            parts.push(format!("serial={s}"));
        }
        if let Some(s) = self.slot_id {
            parts.push(format!("slot-id={s}"));
        }
        format!("pkcs11:{}", parts.join(";"))
    }
}

/// `text` with the value of `pin-value` hidden, for error messages.
fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("pin-value=") {
        let (head, tail) = rest.split_at(at + "pin-value=".len());
        out.push_str(head);
        out.push_str("***");
        rest = &tail[tail.find([';', '&', '?']).unwrap_or(tail.len())..];
    }
    out.push_str(rest);
    out
}

/// RFC 3986 percent-decoding; `None` for a bad escape or a result that is not UTF-8.
fn decode(v: &str) -> Option<String> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = v.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_knot_and_rfc7512_forms() {
        let u = TokenUri::parse("pkcs11:token=shardns;pin-value=1234").unwrap();
        assert_eq!(u.token.as_deref(), Some("shardns"));
        assert_eq!(u.pin().unwrap().as_deref(), Some("1234"));
        let u = TokenUri::parse("pkcs11:token=my%20hsm;slot-id=3?pin-value=a%3Bb&module-name=x")
            .unwrap();
        assert_eq!(u.token.as_deref(), Some("my hsm"));
        assert_eq!(u.slot_id, Some(3));
        assert_eq!(u.pin_value.as_deref(), Some("a;b"));
        assert_eq!(u.describe(), "pkcs11:token=my hsm;slot-id=3");
        assert!(!format!("{u:?}").contains("a;b"));
    }

    #[test]
    fn pin_source_reads_the_first_line() {
        let dir = std::env::temp_dir().join(format!("shardns-pin-{}", std::process::id()));
        std::fs::write(&dir, "9876\nignored\n").unwrap();
        let u =
            TokenUri::parse(&format!("pkcs11:token=t?pin-source=file:{}", dir.display())).unwrap();
        let pin = u.pin();
        let _ = std::fs::remove_file(&dir);
        assert_eq!(pin.unwrap().as_deref(), Some("9876"));
    }

    #[test]
    fn rejects_and_never_echoes_the_pin() {
        for bad in [
            "token=x",
            "pkcs11:pin-value=secret1",
            "pkcs11:token=x;pin-value=secret1;slot-id=z",
            "pkcs11:token=%zz;pin-value=secret1",
            "pkcs11:token;pin-value=secret1",
        ] {
            let e = TokenUri::parse(bad).unwrap_err().to_string();
            assert!(!e.contains("secret1"), "{e}");
        }
        assert_eq!(
            redact("pkcs11:pin-value=s;token=t"),
            "pkcs11:pin-value=***;token=t"
        );
    }
}
