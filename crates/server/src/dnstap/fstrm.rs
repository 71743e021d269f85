//! dnstap::fstrm -- Frame Streams, the framing dnstap travels in.
//!
//! A data frame is a 32-bit big-endian length (not zero) and that many octets. A control
//! frame starts with a zero length (the escape), then its own length, its type, and fields
//! (type, length, value; the one used here is the content type,
//! `protobuf:dnstap.Dnstap`). To a file the writer sends START, the data frames, STOP
//! (unidirectional). Over a Unix socket it sends READY, waits for the reader's ACCEPT,
//! sends START and the data frames, and at the end STOP, waiting for FINISH
//! (bidirectional).

use std::io::{self, Read, Write};

/// The content type of dnstap's frames.
pub(crate) const CONTENT_TYPE: &[u8] = b"protobuf:dnstap.Dnstap";

pub(crate) const ACCEPT: u32 = 0x01;
pub(crate) const START: u32 = 0x02;
pub(crate) const STOP: u32 = 0x03;
pub(crate) const READY: u32 = 0x04;
pub(crate) const FINISH: u32 = 0x05;

const FIELD_CONTENT_TYPE: u32 = 0x01;
/// Longest control frame accepted from a reader (Frame Streams' own limit is 512).
const CONTROL_MAX: usize = 512;

/// A control frame of type `kind`, with the content type field when `typed`.
pub(crate) fn control(kind: u32, typed: bool) -> Vec<u8> {
    let mut body = kind.to_be_bytes().to_vec();
    if typed {
        body.extend_from_slice(&FIELD_CONTENT_TYPE.to_be_bytes());
        body.extend_from_slice(&(CONTENT_TYPE.len() as u32).to_be_bytes());
        body.extend_from_slice(CONTENT_TYPE);
    }
    let mut frame = 0u32.to_be_bytes().to_vec();
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Reads one control frame; returns its type and whether it names our content type (or
/// none, which means any).
pub(crate) fn read_control(r: &mut impl Read) -> io::Result<(u32, bool)> {
    let mut word = [0; 4];
    r.read_exact(&mut word)?;
    if word != [0; 4] {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a data frame where a control frame was expected",
        ));
    }
    r.read_exact(&mut word)?;
    let len = u32::from_be_bytes(word) as usize;
    if !(4..=CONTROL_MAX).contains(&len) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("control frame of {len} octets"),
        ));
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    let kind = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
    let mut rest = &body[4..];
    let mut typed = false;
    let mut ours = false;
    while rest.len() >= 8 {
        let field = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let flen = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize;
        let Some(value) = rest.get(8..8 + flen) else {
            break;
        };
        if field == FIELD_CONTENT_TYPE {
            typed = true;
            ours |= value == CONTENT_TYPE;
        }
        rest = &rest[8 + flen..];
    }
    Ok((kind, ours || !typed))
}

/// The bidirectional handshake on a fresh connection: READY, ACCEPT, START.
pub(crate) fn open_bidirectional(s: &mut (impl Read + Write)) -> io::Result<()> {
    s.write_all(&control(READY, true))?;
    let (kind, ours) = read_control(s)?;
    if kind != ACCEPT || !ours {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the reader answered READY with control frame {kind} (content type ours: {ours})"
            ),
        ));
    }
    s.write_all(&control(START, true))
}

/// The end of a bidirectional stream: STOP, then the reader's FINISH.
pub(crate) fn close_bidirectional(s: &mut (impl Read + Write)) -> io::Result<()> {
    s.write_all(&control(STOP, false))?;
    let (kind, _) = read_control(s)?;
    if kind != FINISH {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the reader answered STOP with control frame {kind}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_frames_read_back() {
        let f = control(READY, true);
        assert_eq!(&f[..4], &[0; 4]);
        assert_eq!(
            u32::from_be_bytes(f[4..8].try_into().unwrap()) as usize,
            f.len() - 8
        );
        assert_eq!(read_control(&mut &f[..]).unwrap(), (READY, true));
        let f = control(STOP, false);
        assert_eq!(f, [0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 3]);
        assert_eq!(read_control(&mut &f[..]).unwrap(), (STOP, true));
        // Another content type only.
        let mut other = control(ACCEPT, false);
        other[7] = 4 + 8 + 3;
        other.extend_from_slice(&1u32.to_be_bytes());
        other.extend_from_slice(&3u32.to_be_bytes());
        other.extend_from_slice(b"xyz");
        assert_eq!(read_control(&mut &other[..]).unwrap(), (ACCEPT, false));
        // A data frame, or a huge control frame, is refused.
        assert!(read_control(&mut &[0, 0, 0, 5, 1, 2, 3, 4, 5][..]).is_err());
        assert!(read_control(&mut &[0, 0, 0, 0, 0, 1, 0, 0][..]).is_err());
    }
}
