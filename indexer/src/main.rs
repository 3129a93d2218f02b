//! `codegloss`: the command-line front end of the indexer.
//!
//! Results go to stdout, logs, warnings and progress to stderr. This file
//! is the command-line surface and its dispatch; each command's options
//! and code live in its module under `cli/`.

mod cli;

use clap::{Parser, Subcommand};

use cli::output::note;

/// Turn a scientific C++ codebase into a static, self-contained
/// question-answering index.
#[derive(Parser)]
#[command(name = "codegloss", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index a repository: parse C++ and docs, build the structure graph and glosses, write the index.
    Index(cli::index::IndexArgs),
    /// Write the static site for an existing index: the widget, the wasm
    /// client and the index in its web layout (sharded, content-addressed).
    Site(cli::site::SiteArgs),
    /// Serve a site directory on loopback (ES modules, fetch and wasm do not work from file://).
    Serve(cli::site::ServeArgs),
    /// Dry run of the explanation stage: the prompts `index` would send to
    /// the `[explain]` model, their sizes, and how many the cache already holds.
    ExplainPlan(cli::explain_plan::ExplainPlanArgs),
    /// Retrieve the context for a question: ranked chunks with roles, file:line ranges, glosses and diagnostics.
    Query(cli::query::QueryArgs),
    /// Answer a question from a locally hosted model, grounded in the retrieved context, with cited sources.
    Ask(cli::ask::AskArgs),
    /// Evaluate retrieval on a question file (bench format): hit@k, all_gold@k, context recall, MRR, per category.
    Eval(cli::eval::EvalArgs),
    /// Dense vector search only: embed a question and list the nearest chunks.
    Search(cli::search::SearchArgs),
    /// Show what an index holds about a symbol or a file.
    Inspect(cli::inspect::InspectArgs),
    /// Measure semantic search over the vectors' partitions: recall@k
    /// against exact search and the bytes a question fetches, per number of
    /// probed partitions (how `[retrieval] ivf_probe` is chosen).
    Partitions(cli::partitions::PartitionsArgs),
    /// Measure what each macro rule is worth to the parse: the function
    /// bodies it keeps out of tree-sitter ERROR nodes and the ERROR nodes
    /// it removes, each rule left out in turn.
    Macros(cli::macros::MacrosArgs),
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .target(env_logger::Target::Stderr)
        .init();
    let result = match Cli::parse().command {
        Command::Index(args) => cli::index::run(args),
        Command::Site(args) => cli::site::run(args),
        Command::Serve(args) => cli::site::serve(args),
        Command::ExplainPlan(args) => cli::explain_plan::run(args),
        Command::Query(args) => cli::query::run(args),
        Command::Ask(args) => cli::ask::run(args),
        Command::Eval(args) => cli::eval::run(args),
        Command::Search(args) => cli::search::run(args),
        Command::Inspect(args) => cli::inspect::run(args),
        Command::Partitions(args) => cli::partitions::run(args),
        Command::Macros(args) => cli::macros::run(args),
    };
    if let Err(e) = result {
        note!("error: {e:#}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
