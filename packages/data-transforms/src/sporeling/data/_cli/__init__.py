"""Subcommands of the `sporeling-data` command (`sporeling.data.cli`)."""
