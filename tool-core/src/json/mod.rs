//! JSON helpers that know nothing about tools: canonical hashing, exact number comparison and
//! renderings for messages.

pub(crate) mod canonical;
pub(crate) mod number;
pub(crate) mod text;
