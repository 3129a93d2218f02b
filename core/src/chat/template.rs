//! The one prompt-template type: a fixed system message, a user message
//! with `{name}` slots, a version and a signature (a hash of the text).
//! The answer prompt (`crate::answer::RETRIEVAL_ANSWER_V2`) and the
//! explanation prompts of the indexer (paper Table 5) are values of it.
//!
//! Signatures key the gloss cache and are recorded with every answer and
//! in manifests, so each family keeps the framing its signatures were
//! first computed with ([`Signing`]).

use sha2::{Digest, Sha256};

use super::Message;

/// How a template's signature frames the text it hashes. Fixed per
/// family: a change would change every signature already recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signing {
    /// Id, version number, system and user message, each followed by a
    /// NUL byte (answer prompts).
    Answer,
    /// Version id ([`PromptTemplate::version_id`]), system and user
    /// message, joined by NUL bytes (explanation prompts).
    Explanation,
}

/// A versioned prompt template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromptTemplate {
    /// Template id (an explanation template's is its mode's name).
    pub id: &'static str,
    /// Version of the text.
    pub version: u32,
    /// How the signature is framed.
    pub signing: Signing,
    /// System message.
    pub system: &'static str,
    /// User message with `{name}` slots.
    pub user: &'static str,
}

impl PromptTemplate {
    /// `{id}_v{version}`, the version id recorded with every gloss.
    pub fn version_id(&self) -> String {
        format!("{}_v{}", self.id, self.version)
    }

    /// A short stable signature of the template: the first 16 hex digits
    /// of SHA-256 over its version and texts, framed by [`Signing`].
    pub fn signature(&self) -> String {
        let version = self.version.to_string();
        let version_id = self.version_id();
        let (parts, terminated): (Vec<&str>, bool) = match self.signing {
            Signing::Answer => (vec![self.id, &version, self.system, self.user], true),
            Signing::Explanation => (vec![&version_id, self.system, self.user], false),
        };
        let mut h = Sha256::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                h.update([0]);
            }
            h.update(part.as_bytes());
        }
        if terminated {
            h.update([0]);
        }
        hex::encode(&h.finalize()[..8])
    }

    /// The user message with its `{name}` slots filled. Slots are filled
    /// in one pass over the template, so a value that itself contains a
    /// `{slot}` (code is data, and C++ often does) stays as written; a
    /// `{name}` that is not a slot stays too.
    pub fn fill(&self, slots: &[(&str, &str)]) -> String {
        let mut out = String::with_capacity(self.user.len() + 1024);
        let mut rest = self.user;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let name = after.find('}').map(|c| &after[..c]);
            match name.and_then(|n| slots.iter().find(|(k, _)| *k == n)) {
                Some((k, v)) => {
                    out.push_str(v);
                    rest = &after[k.len() + 1..];
                }
                None => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// The system message and the filled user message.
    pub fn messages(&self, slots: &[(&str, &str)]) -> Vec<Message> {
        vec![
            Message {
                role: "system".into(),
                content: self.system.to_string(),
            },
            Message {
                role: "user".into(),
                content: self.fill(slots),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_fills_slots_once() {
        let t = PromptTemplate {
            id: "t",
            version: 1,
            signing: Signing::Explanation,
            system: "",
            user: "a {x} b {y} {unknown} {",
        };
        assert_eq!(t.fill(&[("x", "{y}"), ("y", "2")]), "a {y} b 2 {unknown} {");
        assert_eq!(t.messages(&[])[1].content, "a {x} b {y} {unknown} {");
    }

    #[test]
    fn both_framings_hash_what_they_always_hashed() {
        let t = PromptTemplate {
            id: "general",
            version: 1,
            signing: Signing::Explanation,
            system: "s",
            user: "u",
        };
        let explanation = crate::format::sha256_hex(b"general_v1\0s\0u");
        assert_eq!(t.signature(), explanation[..16]);
        let a = PromptTemplate {
            signing: Signing::Answer,
            ..t
        };
        let answer = crate::format::sha256_hex(b"general\x001\0s\0u\0");
        assert_eq!(a.signature(), answer[..16]);
    }
}
