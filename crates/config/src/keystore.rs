//! config::keystore -- the `[[keystore]]` tables: where the DNSSEC keys of the zones that
//! name one are made, kept and used: a PKCS#11 token (an HSM; Knot's `keystore` with
//! `backend: pkcs11`, BIND 9.20's `key-store` with `pkcs11-uri`). A zone without
//! `keystore` keeps its keys in files in `server.key_directory`, as before.

use crate::{Config, ConfigError};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One `[[keystore]]`: `name`, `pkcs11_uri` (RFC 7512: `token=`, `serial=` or `slot-id=`
/// pick the token; `pin-value=` or `pin-source=` give the user PIN) and `module` (the
/// PKCS#11 library, e.g. `/usr/lib/softhsm/libsofthsm2.so`).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct KeystoreConfig {
    /// What `[[zone]] keystore` names.
    pub name: String,
    /// The token and its PIN.
    pub pkcs11_uri: String,
    /// The PKCS#11 module (a shared library), an absolute path.
    pub module: PathBuf,
}

/// Never prints the URI, which may hold the PIN.
impl std::fmt::Debug for KeystoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeystoreConfig")
            .field("name", &self.name)
            .field("module", &self.module)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The `[[keystore]]` named `name`.
    pub fn keystore(&self, name: &str) -> Option<&KeystoreConfig> {
        self.keystores.iter().find(|k| k.name == name)
    }
}

/// Keystores with distinct names, a URI that names a token, an absolute module path; a
/// zone's `keystore` names one of them.
pub(crate) fn check(config: &Config, path: &Path) -> Result<(), ConfigError> {
    let error = |key: String, message: String| ConfigError {
        path: path.into(),
        position: None,
        key: Some(key),
        message,
    };
    for (i, k) in config.keystores.iter().enumerate() {
        if config.keystores[..i].iter().any(|o| o.name == k.name) {
            let message = format!("a second keystore named {:?}", k.name);
            return Err(error(format!("keystore[{i}].name"), message));
        }
        if let Err(e) = shardns_dnssec::pkcs11::TokenUri::parse(&k.pkcs11_uri) {
            return Err(error(format!("keystore[{i}].pkcs11_uri"), e.to_string()));
        }
        if !k.module.is_absolute() {
            let message = format!(
                "{}: the module must be an absolute path",
                k.module.display()
            );
            return Err(error(format!("keystore[{i}].module"), message));
        }
    }
    for (i, z) in config.zones.iter().enumerate() {
        let Some(name) = &z.keystore else { continue };
        if config.keystore(name).is_none() {
            let message = format!("zone {}: no [[keystore]] named {name:?}", z.name);
            return Err(error(format!("zone[{i}].keystore"), message));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Config;
    use std::path::Path;

    const KEYSTORE: &str = "[server]\nkey_directory = \"/k\"\n[[keystore]]\nname = \"hsm\"\n\
        pkcs11_uri = \"pkcs11:token=shardns;pin-value=1234\"\n\
        module = \"/usr/lib/softhsm/libsofthsm2.so\"\n";

    fn parse(extra: &str) -> Result<Config, String> {
        Config::from_toml(&format!("{KEYSTORE}{extra}"), Path::new("t.toml"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_zone_names_its_keystore() {
        let c = parse(
            "[[zone]]\nname = \"a.test\"\nfile = \"/a\"\ndnssec = true\nkeystore = \"hsm\"\n",
        )
        .unwrap();
        assert_eq!(c.zones[0].keystore.as_deref(), Some("hsm"));
        let k = c.keystore("hsm").unwrap();
        assert_eq!(k.module, Path::new("/usr/lib/softhsm/libsofthsm2.so"));
        assert!(!format!("{k:?}").contains("1234"), "the PIN is not printed");
        let c = parse("[[zone]]\nname = \"b.test\"\nfile = \"/b\"\ndnssec = true\n").unwrap();
        assert_eq!(c.zones[0].keystore, None, "key files by default");
    }

    #[test]
    fn bad_keystores_are_refused() {
        let e =
            parse("[[zone]]\nname = \"a.test\"\nfile = \"/a\"\nkeystore = \"nope\"\n").unwrap_err();
        assert!(
            e.contains("zone[0].keystore") && e.contains("no [[keystore]] named \"nope\""),
            "{e}"
        );
        let e = parse(
            "[[keystore]]\nname = \"hsm\"\npkcs11_uri = \"pkcs11:token=x\"\nmodule = \"/m.so\"\n",
        )
        .unwrap_err();
        assert!(e.contains("keystore[1].name"), "{e}");
        let e = parse("[[keystore]]\nname = \"b\"\npkcs11_uri = \"token=x\"\nmodule = \"/m.so\"\n")
            .unwrap_err();
        assert!(e.contains("keystore[1].pkcs11_uri"), "{e}");
        let e = parse(
            "[[keystore]]\nname = \"b\"\npkcs11_uri = \"pkcs11:token=x\"\nmodule = \"m.so\"\n",
        )
        .unwrap_err();
        assert!(e.contains("keystore[1].module"), "{e}");
        let e = parse("[[keystore]]\nname = \"b\"\npkcs11_uri = \"pkcs11:token=x\"\n").unwrap_err();
        assert!(e.contains("module"), "{e}");
    }
}
