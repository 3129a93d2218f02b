//! The answering stage that both the CLI and the browser share (paper
//! sections 3.4 and 3.5): the numbered, budgeted context (`context.rs`:
//! a fact sheet composed by `facts.rs`, then each chunk completed into its
//! unit by `unit.rs` and cut to the question's evidence by `evidence.rs`,
//! and the answer's code-written lead, whose key lines `lead.rs` quotes),
//! the grounded answer prompt in one shape per intent (`prompt.rs`) with a
//! version and a signature, and the mapping of `[n]` citations back to `path:start-end`
//! (`citations.rs`); the `bm25-files` baseline's whole-file context is
//! `baseline.rs`. The chat protocol itself (request, response parsing,
//! prompt templates) is [`crate::chat`]; only the HTTP transport differs
//! per platform.

mod baseline;
mod citations;
mod context;
mod evidence;
mod facts;
mod lead;
mod prompt;
mod unit;

pub use crate::chat::{
    parse_completion, parse_sse_line, request_body, ChatError, Completion, Message, PromptTemplate,
    StreamEvent,
};
pub use baseline::file_context;
pub(crate) use citations::{bullet_sentences, numbers_in};
pub use citations::{check_citations, Citation, CitationReport};
pub use context::{
    build_context, build_context_estimated, build_context_for, fence_for, fence_language, Budget,
    Context, ContextChunk,
};
pub use prompt::{
    answer_template, shape_for, ANSWER_COMPARE, ANSWER_EXPLAIN, ANSWER_HOWTO, ANSWER_LOCATE,
    ANSWER_SHAPES, ANSWER_TRACE,
};
pub use unit::{context_chunks, line_chunks, unit_chunks};
