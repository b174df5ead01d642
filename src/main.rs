use clap::Parser;

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let cli = bonsai::cli::Cli::parse();
    bonsai::cli::run(cli)
}
