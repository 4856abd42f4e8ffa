//! The `preemptd` binary: parses the command line and hands over to the library (and, for
//! `bench`, to the load generator).

mod cli;
mod settings;
mod values;

fn main() -> std::process::ExitCode {
    match cli::parse() {
        Ok(cli) => cli::run(cli),
        Err(code) => code,
    }
}
