//! The protocol switches of the command line (`--h2`, ...), made from the registry's list
//! (`candor_load::registry::SWITCHES`) so that a protocol's switch is declared where it is
//! chosen, not here.

use candor_load::registry::{Switch, SWITCHES};
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

/// The switches given, in the registry's order.
// Written by hand rather than derived: clap's derive needs a field per flag, and the flags
// are the registry's to list.
#[derive(Debug, Clone, Default)]
pub struct ProtocolSwitches(pub Vec<&'static Switch>);

impl FromArgMatches for ProtocolSwitches {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(ProtocolSwitches(
            SWITCHES
                .iter()
                .copied()
                .filter(|s| matches.get_flag(s.long))
                .collect(),
        ))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = ProtocolSwitches::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for ProtocolSwitches {
    fn augment_args(cmd: Command) -> Command {
        SWITCHES.iter().fold(cmd, |cmd, s| {
            cmd.arg(
                Arg::new(s.long)
                    .long(s.long)
                    .action(ArgAction::SetTrue)
                    .help(s.help),
            )
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        ProtocolSwitches::augment_args(cmd)
    }
}
