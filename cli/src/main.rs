//! The `preemptd` binary: parses the command line and hands over to the library.

fn main() -> std::process::ExitCode {
    match preemptd::cli::parse() {
        Ok(cli) => preemptd::cli::run(cli),
        Err(code) => code,
    }
}
