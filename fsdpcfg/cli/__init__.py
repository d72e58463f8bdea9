"""Command-line interface: one small module per subcommand, dispatched by :mod:`fsdpcfg.cli.main`."""
