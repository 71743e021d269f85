//! pkcs11 -- keys on a PKCS#11 token (an HSM, or SoftHSM2): made on the token
//! (C_GenerateKeyPair, the private key `CKA_SENSITIVE` and not `CKA_EXTRACTABLE`), signing
//! there (C_Sign), the public key read from it for the DNSKEY. The private key never
//! leaves the token; the key directory keeps the key's `CKA_ID` and times
//! ([`crate::keys`]). The binding is the `cryptoki` crate: no PKCS#11 FFI of ours.
//!
//! A module is loaded and initialised (C_Initialize, OS locking) once per process and a
//! token opened and logged in once per module and URI: both are kept in process-wide
//! tables, so every signing of a zone (and every zone on the token) shares the login and
//! the sessions. The zone signer signs from several threads and a PKCS#11 session is one
//! thread's at a time: a [`Token`] keeps a pool of sessions, each signature takes one and
//! gives it back (a new one is opened when all are busy), so signing runs on as many
//! threads as the token allows. Sessions stay open, which keeps the token logged in
//! (PKCS#11 §5.6: the login lasts while the application has a session).
//!
//! ECDSA is CKM_ECDSA over the SHA-256 or SHA-384 digest computed here (aws-lc-rs), which
//! returns r | s, the RRSIG form (RFC 6605 §4); Ed25519 is CKM_EDDSA (RFC 8080); RSA is
//! CKM_SHA256_RSA_PKCS or CKM_SHA512_RSA_PKCS (RFC 5702).

use crate::alg::Algorithm;
use crate::error::Error;
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

mod uri;
pub use uri::TokenUri;

/// DER of the curves' object identifiers (CKA_EC_PARAMS): P-256, P-384 (RFC 5480 §2.1.1.1)
/// and Ed25519 (RFC 8410 §3).
const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const P384: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];
const ED25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];

/// A public key as the token gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// ECDSA or Ed25519: the DNSKEY public key field (x | y; the 32 octets).
    Field(Vec<u8>),
    /// RSA: exponent and modulus, big-endian.
    Rsa(Vec<u8>, Vec<u8>),
}

/// An open, logged-in token.
pub struct Token {
    ctx: Pkcs11,
    slot: Slot,
    name: String,
    sessions: Mutex<Vec<Session>>,
}

impl core::fmt::Debug for Token {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.name)
    }
}

/// The modules loaded, and the tokens opened, by this process.
static MODULES: Mutex<Vec<(PathBuf, Pkcs11)>> = Mutex::new(Vec::new());
static TOKENS: Mutex<Vec<(PathBuf, String, Arc<Token>)>> = Mutex::new(Vec::new());
/// The logins a token refused for a wrong PIN: module, URI and a digest of the PIN. Not
/// tried again with the same PIN (a token may lock its PIN after a few failed logins, and
/// a zone's signing is retried): a new PIN in the config or the PIN file is tried.
static WRONG_PINS: Mutex<Vec<(PathBuf, String, Vec<u8>)>> = Mutex::new(Vec::new());

fn pin_digest(pin: Option<&str>) -> Vec<u8> {
    let pin = pin.unwrap_or_default().as_bytes();
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, pin)
        .as_ref()
        .to_vec()
}

fn ck(what: &str) -> impl Fn(CkError) -> Error + '_ {
    move |e| Error::Token(format!("{what}: {e}"))
}

/// The context of `module`, loaded and initialised on first use.
fn module(path: &Path) -> Result<Pkcs11, Error> {
    let mut modules = MODULES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, ctx)) = modules.iter().find(|(p, _)| p == path) {
        return Ok(ctx.clone());
    }
    let ctx = Pkcs11::new(path).map_err(|e| {
        Error::Token(format!(
            "cannot load PKCS#11 module {}: {e}",
            path.display()
        ))
    })?;
    match ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) | Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
        Err(e) => {
            return Err(Error::Token(format!(
                "PKCS#11 module {}: C_Initialize: {e}",
                path.display()
            )))
        }
    }
    modules.push((path.to_path_buf(), ctx.clone()));
    Ok(ctx)
}

/// Finalizes and forgets the module at `path` so that the next use initializes it anew,
/// if it is loaded and none of `open` (the tokens open) is one of its tokens; whether it
/// did. A module reads its tokens when initialized: SoftHSM2 keeps a token whose
/// directory went away unreadable (CKR_GENERAL_ERROR) even once it is back, until then.
/// With another of its tokens open the module is left alone (finalizing it would end
/// that token's sessions under its signings): the token gone stays gone to this process
/// until a restart.
fn reset_module(path: &Path, open: &[(PathBuf, String, Arc<Token>)]) -> bool {
    if open.iter().any(|(m, _, _)| m == path) {
        return false;
    }
    let mut modules = MODULES.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(i) = modules.iter().position(|(p, _)| p == path) else {
        return false;
    };
    let (_, ctx) = modules.swap_remove(i);
    // Not initialized any more is as good: the next use initializes it.
    let _ = ctx.finalize();
    true
}

impl Token {
    /// The token `uri` names in `module`, logged in with the URI's PIN: the one this process
    /// has open if it still answers, else opened now. Errors say which token and why (no
    /// such token, wrong PIN, module missing).
    pub fn open(module_path: &Path, uri: &str) -> Result<Arc<Self>, Error> {
        let mut tokens = TOKENS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = tokens
            .iter()
            .position(|(m, u, _)| m == module_path && u == uri)
        {
            if tokens[i].2.ctx.get_token_info(tokens[i].2.slot).is_ok() {
                return Ok(tokens[i].2.clone());
            }
            let (_, _, stale) = tokens.swap_remove(i);
            // Its sessions are dead; closing them later, after the module is initialized
            // anew (below), could close another's session of the same handle.
            let dead = std::mem::take(
                &mut *stale
                    .sessions
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            );
            let _leaked = std::mem::ManuallyDrop::new(dead);
        }
        let parsed = TokenUri::parse(uri)?;
        let pin = parsed.pin()?;
        let refused = (
            module_path.to_path_buf(),
            uri.to_string(),
            pin_digest(pin.as_deref()),
        );
        let mut wrong = WRONG_PINS.lock().unwrap_or_else(PoisonError::into_inner);
        if wrong.contains(&refused) {
            return Err(Error::Token(format!(
                "{} in {}: wrong PIN (refused before; not tried again with the same PIN, which \
                 the token may lock: correct the PIN)",
                parsed.describe(),
                module_path.display()
            )));
        }
        let mut login = Self::login(module_path, &parsed, pin.clone());
        if matches!(&login, Err((Error::Token(m), false)) if m.contains(": no such token"))
            && reset_module(module_path, &tokens)
        {
            login = Self::login(module_path, &parsed, pin);
        }
        let token = match login {
            Ok(t) => Arc::new(t),
            Err((e, wrong_pin)) => {
                if wrong_pin {
                    wrong.push(refused);
                }
                return Err(e);
            }
        };
        tokens.push((module_path.to_path_buf(), uri.to_string(), token.clone()));
        Ok(token)
    }

    /// Opens the token and logs in; `Err` says, besides why, if the PIN was refused.
    fn login(
        module_path: &Path,
        uri: &TokenUri,
        pin: Option<String>,
    ) -> Result<Self, (Error, bool)> {
        Self::login_inner(module_path, uri, pin).map_err(|e| {
            let wrong = matches!(&e, Error::Token(m) if m.ends_with(": wrong PIN"));
            (e, wrong)
        })
    }

    fn login_inner(module_path: &Path, uri: &TokenUri, pin: Option<String>) -> Result<Self, Error> {
        let ctx = module(module_path)?;
        let name = format!("{} in {}", uri.describe(), module_path.display());
        // Every slot with a token, each read below: one that cannot be read (a token whose
        // directory went away, another's, busy) must not hide ours.
        let slots = ctx.get_slots_with_token().map_err(ck(&name))?;
        let mut found = None;
        // A token that cannot be read (another's, busy) is passed over, said if none is ours.
        let mut unreadable = String::new();
        for slot in slots {
            let info = match ctx.get_token_info(slot) {
                Ok(info) => info,
                Err(e) => {
                    unreadable = format!(" (slot {} unreadable: {e})", slot.id());
                    continue;
                }
            };
            let matches = info.token_initialized()
                && uri.token.as_deref().is_none_or(|t| info.label() == t)
                && uri
                    .serial
                    .as_deref()
                    .is_none_or(|s| info.serial_number() == s)
                && uri.slot_id.is_none_or(|n| slot.id() == n);
            if matches {
                found = Some(slot);
                break;
            }
        }
        let slot =
            found.ok_or_else(|| Error::Token(format!("{name}: no such token{unreadable}")))?;
        let session = ctx.open_rw_session(slot).map_err(ck(&name))?;
        let pin = pin.map(cryptoki::types::AuthPin::from);
        match session.login(UserType::User, pin.as_ref()) {
            Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => {}
            Err(CkError::Pkcs11(RvError::PinIncorrect, _)) => {
                return Err(Error::Token(format!("{name}: wrong PIN")))
            }
            Err(e) => return Err(Error::Token(format!("{name}: login: {e}"))),
        }
        Ok(Self {
            ctx,
            slot,
            name,
            sessions: Mutex::new(vec![session]),
        })
    }

    /// The token, for messages: its URI (no PIN) and module.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` with a session of the pool (a new one if every session is in use).
    fn with_session<T>(&self, f: impl FnOnce(&Session) -> Result<T, Error>) -> Result<T, Error> {
        let pooled = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let session = match pooled {
            Some(s) => s,
            None => self
                .ctx
                .open_rw_session(self.slot)
                .map_err(ck(&self.name))?,
        };
        let out = f(&session);
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(session);
        out
    }

    /// Makes a key pair of `algorithm` on the token (RSA: `rsa_bits`), with a new random
    /// `CKA_ID` and `label`: the private key stays on the token, sensitive and not
    /// extractable. Returns the key and its public key.
    pub fn generate(
        self: &Arc<Self>,
        algorithm: Algorithm,
        rsa_bits: u32,
        label: &str,
    ) -> Result<(TokenKey, PublicKey), Error> {
        let (mechanism, params) = match algorithm {
            Algorithm::EcdsaP256Sha256 => (Mechanism::EccKeyPairGen, P256),
            Algorithm::EcdsaP384Sha384 => (Mechanism::EccKeyPairGen, P384),
            Algorithm::Ed25519 => (Mechanism::EccEdwardsKeyPairGen, ED25519),
            Algorithm::RsaSha256 | Algorithm::RsaSha512 => (Mechanism::RsaPkcsKeyPairGen, &[][..]),
            other => return Err(Error::Unsupported(other)),
        };
        let what = format!("{}: generating a {algorithm} key", self.name);
        let (id, private) = self.with_session(|s| {
            let id = s.generate_random_vec(16).map_err(ck(&what))?;
            let common = [
                Attribute::Token(true),
                Attribute::Id(id.clone()),
                Attribute::Label(label.as_bytes().to_vec()),
            ];
            let mut public = common.to_vec();
            public.push(Attribute::Verify(true));
            if params.is_empty() {
                public.push(Attribute::ModulusBits(u64::from(rsa_bits).into()));
                public.push(Attribute::PublicExponent(vec![1, 0, 1]));
            } else {
                public.push(Attribute::EcParams(params.to_vec()));
            }
            let mut private = common.to_vec();
            private.extend([
                Attribute::Private(true),
                Attribute::Sensitive(true),
                Attribute::Extractable(false),
                Attribute::Sign(true),
            ]);
            let (_, private) = s
                .generate_key_pair(&mechanism, &public, &private)
                .map_err(ck(&what))?;
            Ok((id, private))
        })?;
        let public = self.public_key(algorithm, &id)?;
        Ok((
            TokenKey {
                token: self.clone(),
                algorithm,
                id,
                private,
            },
            public,
        ))
    }

    /// The key of `algorithm` whose objects have `CKA_ID` `id`, and its public key; an
    /// error if the token has no such private key (deleted, another
    /// token).
    pub fn find(
        self: &Arc<Self>,
        algorithm: Algorithm,
        id: &[u8],
    ) -> Result<(TokenKey, PublicKey), Error> {
        let private = self.object(ObjectClass::PRIVATE_KEY, id)?;
        let public = self.public_key(algorithm, id)?;
        Ok((
            TokenKey {
                token: self.clone(),
                algorithm,
                id: id.to_vec(),
                private,
            },
            public,
        ))
    }

    /// How the token keeps the private key with `CKA_ID` `id`, as it reports it: for
    /// operators and tests to check that a key cannot leave the token.
    pub fn protection(&self, id: &[u8]) -> Result<Protection, Error> {
        let handle = self.object(ObjectClass::PRIVATE_KEY, id)?;
        let wanted = [
            AttributeType::Sensitive,
            AttributeType::Extractable,
            AttributeType::NeverExtractable,
        ];
        let what = format!("{}: attributes of key {}", self.name, hex(id));
        let attrs = self.with_session(|s| s.get_attributes(handle, &wanted).map_err(ck(&what)))?;
        // Absent attributes count as the unsafe answer.
        let mut p = Protection {
            sensitive: false,
            extractable: true,
            never_extractable: false,
        };
        for a in attrs {
            match a {
                Attribute::Sensitive(v) => p.sensitive = v,
                Attribute::Extractable(v) => p.extractable = v,
                Attribute::NeverExtractable(v) => p.never_extractable = v,
                _ => {}
            }
        }
        Ok(p)
    }

    fn object(&self, class: ObjectClass, id: &[u8]) -> Result<ObjectHandle, Error> {
        let what = format!("{}: finding key {}", self.name, hex(id));
        self.with_session(|s| {
            let found = s
                .find_objects(&[Attribute::Class(class), Attribute::Id(id.to_vec())])
                .map_err(ck(&what))?;
            match found[..] {
                [one] => Ok(one),
                [] => Err(Error::Token(format!(
                    "{}: no {} with CKA_ID {} on the token",
                    self.name,
                    if class == ObjectClass::PRIVATE_KEY {
                        "private key"
                    } else {
                        "public key"
                    },
                    hex(id)
                ))),
                _ => Err(Error::Token(format!(
                    "{}: more than one key with CKA_ID {}",
                    self.name,
                    hex(id)
                ))),
            }
        })
    }

    /// The public key of the key `id`, read from its public key object.
    fn public_key(&self, algorithm: Algorithm, id: &[u8]) -> Result<PublicKey, Error> {
        let handle = self.object(ObjectClass::PUBLIC_KEY, id)?;
        let what = format!("{}: reading public key {}", self.name, hex(id));
        let wanted = if algorithm.is_rsa() {
            vec![AttributeType::PublicExponent, AttributeType::Modulus]
        } else {
            vec![AttributeType::KeyType, AttributeType::EcPoint]
        };
        let attrs = self.with_session(|s| s.get_attributes(handle, &wanted).map_err(ck(&what)))?;
        let (mut e, mut n, mut point) = (None, None, None);
        for a in attrs {
            match a {
                Attribute::PublicExponent(v) => e = Some(v),
                Attribute::Modulus(v) => n = Some(v),
                Attribute::EcPoint(v) => point = Some(v),
                Attribute::KeyType(t) if t != KeyType::EC && t != KeyType::EC_EDWARDS => {
                    return Err(Error::Token(format!("{what}: not an EC key")))
                }
                _ => {}
            }
        }
        let bad = || Error::Token(format!("{what}: not a {algorithm} public key"));
        if let (Some(e), Some(n)) = (e, n) {
            return Ok(PublicKey::Rsa(e, n));
        }
        let point = point.ok_or_else(bad)?;
        public_from_point(algorithm, &point)
            .map(PublicKey::Field)
            .ok_or_else(bad)
    }
}

/// The DNSKEY public key field from CKA_EC_POINT: the point (04 | x | y for ECDSA, the
/// 32 octets for Ed25519) in a DER OCTET STRING, as PKCS#11 §2.3.3 has it, or bare, as
/// some tokens give it.
fn public_from_point(algorithm: Algorithm, point: &[u8]) -> Option<Vec<u8>> {
    let len = match algorithm {
        Algorithm::EcdsaP256Sha256 => 65,
        Algorithm::EcdsaP384Sha384 => 97,
        Algorithm::Ed25519 => 32,
        _ => return None,
    };
    let raw = match point {
        [0x04, l, rest @ ..] if usize::from(*l) == len && rest.len() == len => rest,
        [0x04, 0x81, l, rest @ ..] if usize::from(*l) == len && rest.len() == len => rest,
        _ if point.len() == len => point,
        _ => return None,
    };
    match algorithm {
        Algorithm::Ed25519 => Some(raw.to_vec()),
        _ => (raw[0] == 0x04).then(|| raw[1..].to_vec()),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A private key's `CKA_SENSITIVE`, `CKA_EXTRACTABLE` and `CKA_NEVER_EXTRACTABLE`, as the
/// token reports them ([`Token::protection`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protection {
    /// `CKA_SENSITIVE`: the private value cannot be read in the clear.
    pub sensitive: bool,
    /// `CKA_EXTRACTABLE`: the key can be wrapped out of the token.
    pub extractable: bool,
    /// `CKA_NEVER_EXTRACTABLE`: it never could.
    pub never_extractable: bool,
}

/// A private key on a token: signs there.
pub struct TokenKey {
    token: Arc<Token>,
    algorithm: Algorithm,
    id: Vec<u8>,
    private: ObjectHandle,
}

impl core::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "TokenKey({}, id {})", self.token.name, hex(&self.id))
    }
}

impl TokenKey {
    /// The key's `CKA_ID`.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// The token.
    pub fn token(&self) -> &Arc<Token> {
        &self.token
    }

    /// Signs `msg` on the token: the RRSIG signature of the key's algorithm.
    pub fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, Error> {
        use aws_lc_rs::digest;
        let digested;
        let (mechanism, data) = match self.algorithm {
            Algorithm::EcdsaP256Sha256 => {
                digested = digest::digest(&digest::SHA256, msg);
                (Mechanism::Ecdsa, digested.as_ref())
            }
            Algorithm::EcdsaP384Sha384 => {
                digested = digest::digest(&digest::SHA384, msg);
                (Mechanism::Ecdsa, digested.as_ref())
            }
            Algorithm::Ed25519 => (
                Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure)),
                msg,
            ),
            Algorithm::RsaSha256 => (Mechanism::Sha256RsaPkcs, msg),
            Algorithm::RsaSha512 => (Mechanism::Sha512RsaPkcs, msg),
            other => return Err(Error::Unsupported(other)),
        };
        self.token.with_session(|s| {
            s.sign(&mechanism, self.private, data).map_err(|e| {
                Error::Token(format!(
                    "{}: signing with key {}: {e}",
                    self.token.name,
                    hex(&self.id)
                ))
            })
        })
    }
}

#[cfg(test)]
mod tests;
