//! `mirrorsim`: the command line of the testbed (see `mirrorsim --help`).

use clap::Parser;

fn main() {
    let cli = match mirror_sim::cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help and --version are not errors; anything else is bad input (exit 2).
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(mirror_sim::cli::run(cli));
}
