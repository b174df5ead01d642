use clap::Parser;

fn main() -> std::process::ExitCode {
    // color-eyre reports panics; ordinary errors get one clear line.
    // Output piped into `head` must end quietly, like any Unix tool.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let _ = color_eyre::install();
    let cli = bonsai::cli::Cli::parse();
    match bonsai::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bonsai: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
