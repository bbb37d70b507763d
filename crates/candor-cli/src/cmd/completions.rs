//! `candor completions SHELL` and `candor man`: shell completion scripts and manual pages, made
//! from the same clap definitions as the parser, so they never drift from the real flags.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for, e.g. `candor completions bash > /etc/bash_completion.d/candor`.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write candor.1 and one page per subcommand (candor-run.1, ...) into this directory
    /// instead of printing candor(1) to stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> Result<i32> {
    let name = cmd.get_name().to_string();
    // Made in memory, then printed the one way every command prints (a closed pipe is quiet).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, name, &mut script);
    crate::stdio::print_bytes(&script);
    Ok(0)
}

pub fn man(args: ManArgs, cmd: clap::Command) -> Result<i32> {
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating --dir {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
            eprintln!("wrote the manual pages into {}", dir.display());
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .context("rendering the manual page")?;
            crate::stdio::print_bytes(&page);
        }
    }
    Ok(0)
}
