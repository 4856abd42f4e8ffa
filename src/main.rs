//! The `preemptd` binary: parses the command line and hands over to the library.

use clap::Parser;

fn main() -> std::process::ExitCode {
    preemptd::cli::run(preemptd::cli::Cli::parse())
}
